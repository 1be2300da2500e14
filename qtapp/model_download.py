"""Which models to download first, whether one is already here, what it offers, and downloading it with progress.

Qt-free. ``RECOMMENDED_MODELS`` lists what the first-run dialog offers; ``local_model_dir`` tells
whether a checkpoint setting (a folder or a Hugging Face id) already names a complete model on this
machine, without touching the network; ``preset_speakers`` is the speaker list of the preset model in
use (the loaded engine's, else the local model folder's config.json); ``validate_model_folder`` checks
a folder the user picked and says which voice kind it serves; ``hub_download`` downloads a hub id with
``huggingface_hub.snapshot_download``, reporting bytes through a tqdm class hook and stopping when
its ``cancelled`` event is set; ``describe_download_error`` words why a download failed for people (no
network, no such model, a login needed, a full disk) instead of the hub client's traceback. A downloader is
any callable ``(repo_id, report, cancelled) -> Path`` with ``report(done, total)``, so tests inject a fake one.
"""

from __future__ import annotations

import errno
import io
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from engine.core.checkpoint import resolve_model_dir
from engine.core.config import ModelConfig
from engine.core.voice import VOICE_FOR_MODEL_TYPE
from engine.errors import CheckpointError

# The official CustomVoice checkpoints' speakers: offered only while no preset model is on this machine.
FALLBACK_SPEAKERS = ("aiden", "sohee", "ono_anna", "eric", "dylan", "uncle_fu", "ryan", "vivian", "serena")

ProgressReport = Callable[[int, int], None]  # (bytes done, bytes total; 0 while unknown)
Downloader = Callable[[str, ProgressReport, threading.Event], Path]


@dataclass(frozen=True)
class ModelChoice:
    kind: str  # the voice kind it serves: "preset" | "design" | "clone"
    repo_id: str
    title: str
    purpose: str
    approx_gb: float  # download size, weights and speech tokenizer


# One model per voice kind, each the settings' default for that kind (DEFAULT_CHECKPOINTS), so skipping the
# Welcome dialog and downloading from it lead to the same models.
RECOMMENDED_MODELS = (
    ModelChoice("preset", "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice", "0.6B CustomVoice (recommended)",
                "Reads your documents aloud with nine preset voices. Small and fast: start with this one.", 2.5),
    ModelChoice("design", "Qwen/Qwen3-TTS-12Hz-1.7B-VoiceDesign", "1.7B VoiceDesign",
                "Creates new voices from a description (“a calm, low voice…”).", 4.5),
    ModelChoice("clone", "Qwen/Qwen3-TTS-12Hz-0.6B-Base", "0.6B Base",
                "Clones a voice from a few seconds of recorded speech.", 2.5),
)


# snapshot_download keeps two byte bars over the same total: bytes written to disk, and (for Xet storage) bytes
# received, fewer when chunks are deduplicated. The first is the progress a user understands; the second, named
# by this description, would make the figure jump back and forth.
TRANSFER_BAR = "Downloading bytes"


class DownloadCancelled(Exception):
    """The user stopped the download."""


def looks_like_hub_id(text: str) -> bool:
    """True for "Org/Name" that is not a path on this machine: a model to find in the cache or download."""
    return text.count("/") == 1 and not text.startswith((".", "/", "~")) and not Path(text).expanduser().exists()


def local_model_dir(checkpoint: str) -> Path | None:
    """The complete model folder ``checkpoint`` names on this machine (a folder, or a hub id whose
    download is in the Hugging Face cache), else None. Never downloads."""
    try:
        if looks_like_hub_id(checkpoint):
            from huggingface_hub import snapshot_download

            return resolve_model_dir(snapshot_download(checkpoint, local_files_only=True))
        return resolve_model_dir(Path(checkpoint).expanduser())
    except Exception:  # noqa: BLE001 - not downloaded, incomplete, unreadable: all mean "not here"
        return None


def preset_speakers(engine, checkpoint: str) -> list[str]:
    """The speakers of the preset model in use: ``engine``'s when it is a loaded CustomVoice engine, else
    those in the config.json of the model ``checkpoint`` names on this machine, else ``FALLBACK_SPEAKERS``."""
    if engine is not None and engine.model_type == "custom_voice" and engine.speakers:
        return list(engine.speakers)
    folder = local_model_dir(checkpoint)
    if folder is not None:
        try:
            speakers = ModelConfig.from_file(folder / "config.json").speakers
        except Exception:  # noqa: BLE001 - a config that cannot be read offers no speakers
            speakers = []
        if speakers:
            return speakers
    return list(FALLBACK_SPEAKERS)


def validate_model_folder(folder: str | Path) -> tuple[Path, str]:
    """(the folder, the voice kind it serves) for a complete Qwen3-TTS model folder; else CheckpointError."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise CheckpointError(f"{path} is not a folder")
    path = resolve_model_dir(path)
    config = ModelConfig.from_file(path / "config.json")
    return path, VOICE_FOR_MODEL_TYPE[config.tts_model_type]


def reporting_tqdm(report: ProgressReport, cancelled: threading.Event) -> type[tqdm]:
    """A tqdm class for ``snapshot_download(tqdm_class=...)``: byte bars report to ``report``, every
    bar raises ``DownloadCancelled`` on its next update once ``cancelled`` is set. Nothing is printed."""

    class ReportingTqdm(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs.pop("name", None)
            kwargs["disable"] = False
            kwargs["file"] = io.StringIO()
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            if cancelled.is_set():
                raise DownloadCancelled("download cancelled")
            shown = super().update(n)
            if self.unit == "B" and self.desc != TRANSFER_BAR:
                report(int(self.n), int(self.total or 0))
            return shown

    return ReportingTqdm


def hub_download(repo_id: str, report: ProgressReport, cancelled: threading.Event) -> Path:
    """Download ``repo_id`` into the Hugging Face cache (resuming a partial download); its folder."""
    from huggingface_hub import snapshot_download

    folder = snapshot_download(repo_id, tqdm_class=reporting_tqdm(report, cancelled))
    if cancelled.is_set():
        raise DownloadCancelled("download cancelled")
    return resolve_model_dir(folder)


def describe_download_error(repo_id: str, exc: BaseException) -> str:
    """Why downloading ``repo_id`` failed, in one or two sentences for the studio (dialogs, status bar)."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
    )

    if isinstance(exc, DownloadCancelled):
        return f"The download of {repo_id} was stopped; starting it again goes on where it stopped."
    # gated is a kind of not-found to the hub client, and not-found (404) a kind of HTTP error: most specific first
    if isinstance(exc, GatedRepoError):
        return (f"{repo_id} needs a Hugging Face account that has accepted its terms: log in with "
                "`hf auth login`, or use a model folder you already have.")
    if isinstance(exc, RepositoryNotFoundError):
        return (f"Hugging Face has no model called {repo_id}: check its name in Settings ▸ Models & settings, "
                "or use a model folder you already have.")
    if isinstance(exc, LocalEntryNotFoundError | OfflineModeIsEnabled | ConnectionError | TimeoutError) \
            or type(exc).__module__.split(".")[0].startswith(("httpx", "requests", "urllib3")):
        return (f"Could not download {repo_id}: this computer cannot reach Hugging Face (no network "
                "connection, or offline mode is on). Connect and try again, or use a model folder you already have.")
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return f"Could not download {repo_id}: the disk is full. Free some space and try again."
    if isinstance(exc, HfHubHTTPError):
        return f"Hugging Face refused the download of {repo_id}: {_first_line(exc)}"
    return f"Could not download {repo_id} ({type(exc).__name__}: {_first_line(exc)})"


def _first_line(exc: BaseException, limit: int = 200) -> str:
    """The start of an error's message: its first line, at most ``limit`` characters."""
    line = (str(exc).splitlines() or [""])[0]
    return line if len(line) <= limit else line[:limit - 1] + "…"
