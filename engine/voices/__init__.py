"""Who speaks: ``Voice`` (a preset speaker, a written design, or a clone of a recording), its offline file
(``file``: ``save_voice`` / ``load_voice``) and the voice library, a folder of voice files that the studio and the
server share (``library``)."""

from engine.core.voice import Voice
from engine.core.voice_file import load_voice, read_voice_metadata, save_voice

__all__ = ["Voice", "load_voice", "read_voice_metadata", "save_voice"]
