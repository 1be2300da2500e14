"""``VoiceEntry``: one file of the voice library as a listing shows it, from its header only (its name, kind,
language, creation time, a summary for tooltips), or the error that keeps it from being read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.core.voice_file import VoiceInfo


@dataclass(frozen=True)
class VoiceEntry:
    """One file of the library: its name, and its header's content or why it cannot be read."""

    name: str
    path: Path
    info: VoiceInfo | None  # None when the file cannot be read
    error: str | None = None

    @property
    def readable(self) -> bool:
        return self.info is not None

    @property
    def kind(self) -> str | None:
        return self.info.kind if self.info else None

    @property
    def language(self) -> str | None:
        return self.info.language if self.info else None

    @property
    def created(self) -> str | None:
        return self.info.created if self.info else None

    @property
    def encoded(self) -> bool:
        return bool(self.info and self.info.is_encoded)

    @property
    def summary(self) -> str:
        """The speaker, description or transcript, for tooltips; the error of an unreadable file."""
        info = self.info
        if info is None:
            return self.error or ""
        if info.kind == "preset":
            return (info.speaker or "") + (f" — {info.instruct}" if info.instruct else "")
        if info.kind == "design":
            return info.instruct or ""
        return f"transcript: {info.ref_text}" if info.ref_text else "recording only (no transcript)"
