"""Studio settings and where the studio keeps its files (Qt-free).

Everything the studio writes lives under one data directory: ``settings.json``, the voice
library folder, the pronunciation rules (``pronunciation.json``) and the autosaved editor text. The
directory comes from ``platformdirs`` and can be redirected with the ``ORATOR_DATA_DIR`` environment
variable (tests point it at ``tmp_path``); the server finds the same folders through
``engine.voices.library.data_dir``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import ClassVar

from engine import json_limits
from engine.atomic_files import atomic_write_text
from engine.core.options import PRECISIONS as CPU_PRECISIONS
from engine.core.text.reading_policy import FOOTNOTE_CHOICES, FOOTNOTES_AT_PARAGRAPH_END, ReadingPolicy
from engine.core.text.segments import DEFAULT_TARGET_CHARS, check_target_chars
from engine.errors import UnsupportedError
from engine.production.casting import MAX_NAME_CHARS, Cast, parse_cast
from engine.pronunciation import Lexicon, LexiconFileError, default_lexicon, default_lexicon_path, load_lexicon
from engine.voices.library import data_dir, default_library_dir

VOICE_KINDS = ("preset", "design", "clone")
DEFAULT_CHECKPOINTS = {
    "preset": "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice",
    "design": "Qwen/Qwen3-TTS-12Hz-1.7B-VoiceDesign",
    "clone": "Qwen/Qwen3-TTS-12Hz-0.6B-Base",
}
KNOWN_CHECKPOINTS = {
    "preset": ["Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice", "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice"],
    "design": ["Qwen/Qwen3-TTS-12Hz-1.7B-VoiceDesign"],
    "clone": ["Qwen/Qwen3-TTS-12Hz-0.6B-Base", "Qwen/Qwen3-TTS-12Hz-1.7B-Base"],
}
DEVICES = ("auto", "cuda", "cpu")
PRECISIONS = ("bfloat16", "float16", "float32")
# on the processor, the engine's precision (engine.core.execution_plan): int8 weights, or exact float32; a path saved
# by an older studio ("small": int4 weights) loads as "fast"
CPU_PATHS = CPU_PRECISIONS
MAX_THREADS = 256
LANGUAGES = ("auto", "english", "chinese", "japanese", "korean", "german", "french", "spanish",
             "italian", "portuguese", "russian")
MAX_RECENT_FILES = 10
MAX_FILE_BYTES = 4 << 20  # settings.json: far above its recent files and reading positions
MAX_RESUME_POSITIONS = 200  # documents whose reading position is remembered, the least recently read dropped


@dataclass(frozen=True)
class ModelSpec:
    """Which checkpoint to load for one voice kind, on which device, at which precision.

    This is the object the main window hands to ``SpeechWorker.load_model``.
    """

    kind: str  # "preset" | "design" | "clone"
    checkpoint: str  # hub id or local folder
    device: str  # "auto" | "cuda" | "cpu"
    precision: str  # "bfloat16" | "float16" | "float32": on a GPU
    cpu_path: str = "fast"  # the precision on the processor: "fast" (int8 weights) or "exact" (float32)
    threads: int = 0  # the processor's threads for speech; 0: chosen by the engine

    def resolved_device(self) -> str:
        if self.device != "auto":
            return self.device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def torch_dtype(self):
        import torch

        return getattr(torch, self.precision)

    def load_engine(self):
        """Load the engine this spec names (call it on the worker thread: it is slow)."""
        from engine import Engine
        from engine.core import options

        device = self.resolved_device()
        if device == "cpu":  # the precision names a GPU's dtype; the processor's is fast or exact
            options.configure(threads=self.threads or None)
            return Engine.from_pretrained(self.checkpoint, device=device, precision=self.cpu_path)
        return Engine.from_pretrained(self.checkpoint, device=device, dtype=self.torch_dtype())


@dataclass
class Settings:
    # why the stored settings could not be used, for the user (``load``); never saved
    load_problem: ClassVar[str | None] = None
    # the processor's precision for this run only (``main.py gui --precision``): models load with it; never saved
    precision_override: ClassVar[str | None] = None
    checkpoints: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_CHECKPOINTS))
    device: str = "auto"
    precision: str = "bfloat16"
    cpu_path: str = "fast"
    threads: int = 0  # 0: automatic
    speed: float = 1.0  # playback speed asked for; passed to the worker
    font_size: int = 13
    default_voice: str = ""  # library name of the voice used for unmarked paragraphs
    recent_files: list[str] = field(default_factory=list)
    resume_positions: dict[str, int] = field(default_factory=dict)  # document path -> where reading stopped
    chunk_frames: int = 4
    # a line's short sentences are spoken together up to this many characters (engine.core.text.segments); 0: one at a
    # time
    segment_chars: int = DEFAULT_TARGET_CHARS
    # the reading policy (engine.core.text.reading_policy): web addresses in full, code and diagrams read as written
    read_urls: bool = False
    read_code: bool = False
    footnotes: str = FOOTNOTES_AT_PARAGRAPH_END  # or "skip" (engine.core.text.reading_policy.FOOTNOTE_CHOICES)
    # casting (engine.production.casting) for reading aloud and the Export dialog: quoted dialogue's voice,
    # "Jane=Voice, ..."
    dialogue_voice: str = ""
    cast: str = ""
    autosave_interval_s: float = 5.0
    window_geometry: str = ""  # hex of QMainWindow.saveGeometry()
    cpu_speed: dict[str, float] = field(default_factory=dict)  # model size -> ×RT measured on this processor

    # ---- paths ----------------------------------------------------------------------------------
    @staticmethod
    def root() -> Path:
        return data_dir()

    @property
    def path(self) -> Path:
        return data_dir() / "settings.json"

    @property
    def library_dir(self) -> Path:
        return default_library_dir()

    @property
    def autosave_path(self) -> Path:
        return data_dir() / "autosave.txt"

    @property
    def pronunciation_path(self) -> Path:
        return default_lexicon_path()

    def reading_policy(self) -> ReadingPolicy:
        return ReadingPolicy(read_urls=self.read_urls, read_code=self.read_code, footnotes=self.footnotes)

    def reading_cast(self) -> Cast | None:
        """The cast reading aloud speaks with; None when there is none (or its text does not read)."""
        try:
            characters = parse_cast(self.cast) if self.cast.strip() else ()
        except UnsupportedError:
            characters = ()
        dialogue = " ".join(self.dialogue_voice.split())
        return Cast(dialogue if 0 < len(dialogue) <= MAX_NAME_CHARS else None, characters) or None

    # ---- model choices --------------------------------------------------------------------------
    def model_spec(self, kind: str) -> ModelSpec:
        if kind not in VOICE_KINDS:
            raise ValueError(f"unknown voice kind {kind!r}")
        checkpoint = self.checkpoints.get(kind) or DEFAULT_CHECKPOINTS[kind]
        return ModelSpec(kind, checkpoint, self.device, self.precision, self.precision_override or self.cpu_path,
                         self.threads)

    def add_recent_file(self, path: str | Path) -> None:
        path = str(Path(path).resolve())
        self.recent_files = [path] + [p for p in self.recent_files if p != path]
        del self.recent_files[MAX_RECENT_FILES:]

    def start_folder(self) -> Path:
        """Where the file dialogs start: the folder of the latest document opened or saved that is still there,
        else the user's Documents folder, else home; never the folder the program happens to run from."""
        for recent in self.recent_files:
            folder = Path(recent).parent
            if folder.is_dir():
                return folder
        return documents_folder()

    def remember_position(self, path: str | Path, position: int) -> None:
        """Where reading of the document at ``path`` stopped (newest last, at most ``MAX_RESUME_POSITIONS``)."""
        key = str(Path(path).resolve())
        self.resume_positions.pop(key, None)
        self.resume_positions[key] = max(0, int(position))
        for old in list(self.resume_positions)[:-MAX_RESUME_POSITIONS]:
            del self.resume_positions[old]

    def resume_position(self, path: str | Path) -> int | None:
        return self.resume_positions.get(str(Path(path).resolve()))

    # ---- persistence ----------------------------------------------------------------------------
    @classmethod
    def load(cls) -> Settings:
        """Read ``settings.json``; missing, unreadable or foreign values fall back to defaults. A file that cannot
        be read at all (damaged, not JSON, too large or too deeply nested: ``engine.json_limits``) gives the defaults
        and ``load_problem`` says so; the file is replaced when the settings are next saved."""
        settings = cls()
        try:
            stored = json_limits.load_file(settings.path, max_bytes=MAX_FILE_BYTES)
        except FileNotFoundError:
            return settings
        except (OSError, ValueError) as e:
            settings.load_problem = _unusable(e.strerror if isinstance(e, OSError) else str(e))
            return settings
        if not isinstance(stored, dict):
            settings.load_problem = _unusable("it holds no JSON object")
            return settings
        for f in fields(cls):
            value = stored.get(f.name)
            default = getattr(settings, f.name)
            if value is not None and isinstance(value, type(default)):
                setattr(settings, f.name, value)
            elif isinstance(default, float) and isinstance(value, int):
                setattr(settings, f.name, float(value))
        settings.resume_positions = {k: v for k, v in settings.resume_positions.items()
                                     if isinstance(k, str) and type(v) is int and v >= 0}
        settings.checkpoints = {**DEFAULT_CHECKPOINTS, **{k: str(v) for k, v in settings.checkpoints.items()
                                                         if k in VOICE_KINDS and v}}
        if settings.device not in DEVICES:
            settings.device = "auto"
        if settings.precision not in PRECISIONS:
            settings.precision = "bfloat16"
        if settings.cpu_path not in CPU_PATHS:
            settings.cpu_path = "fast"
        if settings.footnotes not in FOOTNOTE_CHOICES:
            settings.footnotes = FOOTNOTES_AT_PARAGRAPH_END
        if type(settings.threads) is not int or not 0 <= settings.threads <= MAX_THREADS:
            settings.threads = 0
        settings.cpu_speed = {k: float(v) for k, v in settings.cpu_speed.items()
                              if k in ("0.6b", "1.7b") and type(v) in (int, float) and 0 < v < 1e6}
        try:
            check_target_chars(settings.segment_chars)
        except ValueError:
            settings.segment_chars = DEFAULT_TARGET_CHARS
        return settings

    def save(self) -> None:
        atomic_write_text(self.path, json.dumps(asdict(self), indent=2))


def documents_folder() -> Path:
    """The user's Documents folder, else home: where a file dialog with nothing better to go on starts."""
    from platformdirs import user_documents_dir

    documents = Path(user_documents_dir())
    return documents if documents.is_dir() else Path.home()


def _unusable(reason: str) -> str:
    return (f"The settings could not be read ({reason}). The studio starts with its default settings; they replace "
            "the file when they are next saved.")


def load_pronunciation(path: Path) -> tuple[Lexicon, str | None]:
    """The studio's pronunciation rules: the file at ``path``, or the shipped rules while there is none. A file
    that cannot be read does not stop the studio: the shipped rules are used, the file is left as it is, and the
    second value says so (for the user)."""
    if not path.exists():
        return default_lexicon(), None
    try:
        return load_lexicon(path), None
    except LexiconFileError as e:
        return default_lexicon(), (f"The pronunciation rules could not be read ({e}). The shipped rules are used "
                                   "for now; saving rules in Tools ▸ Pronunciation… replaces the file.")
