"""Loading the audio device library (sounddevice over PortAudio) quietly.

PortAudio probes ALSA's devices when it starts, and ALSA writes what fails there ("ALSA lib pcm.c:2666: Unknown PCM
cards.pcm.rear", a dozen lines on many machines) to stderr from C, where no Python logging setting reaches it. ALSA
lets a program replace that printer (``snd_lib_error_set_handler``): its lines go to the debug log instead. Every
place that needs sounddevice imports it through ``import_sounddevice``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys

log = logging.getLogger(__name__)
_ERROR_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                                  ctypes.c_char_p)
_installed = None  # the handler ALSA holds: kept alive for as long as the process runs


def _to_debug_log(filename, line, function, error, message) -> None:
    def text(value) -> str:
        return (value or b"").decode("utf-8", "replace")

    log.debug("ALSA %s:%d (%s): %s (error %d)", text(filename), line, text(function), text(message), error)


def quiet_alsa() -> bool:
    """Send ALSA's error lines to the debug log instead of stderr, once per process; False where there is no ALSA
    library (not Linux, or not installed), which leaves nothing to quieten."""
    global _installed
    if _installed is not None:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        alsa = ctypes.CDLL(ctypes.util.find_library("asound") or "libasound.so.2")
    except OSError:
        return False
    handler = _ERROR_HANDLER(_to_debug_log)
    alsa.snd_lib_error_set_handler(handler)
    _installed = handler
    return True


def import_sounddevice():
    """The sounddevice module, PortAudio started with ALSA's lines quietened; OSError where PortAudio is missing."""
    quiet_alsa()
    import sounddevice

    return sounddevice


def load_sound_module():
    """``sounddevice``, or None where PortAudio is missing (the window then shows why)."""
    try:
        return import_sounddevice()
    except OSError:
        return None
