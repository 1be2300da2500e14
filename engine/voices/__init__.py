"""Who speaks: ``Voice`` (a preset speaker, a written design, or a clone of a recording), its offline file
(``file``: ``save_voice`` / ``load_voice``) and the voice library, a folder of voice files that the studio and the
server share (``library``)."""

from engine.voices.file import load_voice, read_voice_metadata, save_voice
from engine.voices.voice import Voice

__all__ = ["Voice", "load_voice", "read_voice_metadata", "save_voice"]
