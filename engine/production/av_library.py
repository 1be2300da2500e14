"""PyAV, the library every audio file is encoded and filtered with, imported when first needed (``load_av``).

PyAV (``av``, BSD-3-Clause) has wheels that carry FFmpeg's encoders and muxers (FFmpeg 8, built LGPL
v3: ``av._core.library_meta`` says so; libmp3lame LGPL, libopus BSD; the wheels also carry x264/x265 for video,
which Orator never calls). Wheels exist for Linux (x86_64, aarch64), macOS (x86_64, arm64) and Windows (amd64);
av 18 needs Python 3.11+, 17.x serves 3.10. It is the one library here that writes AAC and MP4 at all, with
chapters (``Container.set_chapters``, av 16+) and attached pictures (``add_mux_stream``, av 17+), and it writes
the other formats too, so every format goes through one pipeline (``engine.production.mux_pipeline``). libsndfile
(soundfile) encodes MP3 and Opus but no AAC, MP4, chapters or pictures; mutagen (GPL-2.0+) edits tags but encodes
nothing and cannot write MP4 chapters, so it serves only as the tests' independent reader. No system binary is
called.
"""

from __future__ import annotations

from engine.errors import UnsupportedError


def load_av():
    """PyAV, or ``UnsupportedError`` saying how to install it (it is in the audio, gui and server extras)."""
    try:
        import av
    except ImportError as e:
        raise UnsupportedError(f"encoding audio needs PyAV, which is not installed ({e}): "
                               "pip install 'orator[audio]'") from None
    return av

