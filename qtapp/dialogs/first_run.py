"""The first-run dialog: shown while no reading model is on this machine.

It explains which models exist (0.6B CustomVoice to read; 1.7B VoiceDesign and Base to design and
clone voices), downloads the ticked ones one after another on a worker thread with a progress bar,
or takes a model folder the user already has (checked with ``engine.core.checkpoint.resolve_model_dir``).
It also shows what the installed PyTorch can do (``qtapp.gpu_check``) and, where speech will run on the
processor, what speed to expect from each model size, measured on this machine in the background
(``qtapp.cpu_speed``). Every choice is written to the settings at once. The downloader is injectable
(``qtapp.model_download.Downloader``) for tests.
Help ▸ Download models… opens it again from the studio.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Qt, QThread, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine.errors import CheckpointError
from qtapp.cpu_speed import SpeedProbe, speed_advice
from qtapp.gpu_check import GpuAdvice, gpu_advice
from qtapp.model_download import (
    RECOMMENDED_MODELS,
    DownloadCancelled,
    Downloader,
    ModelChoice,
    describe_download_error,
    hub_download,
    local_model_dir,
    validate_model_folder,
)
from qtapp.settings import Settings

KIND_NAMES = {"preset": "preset voices", "design": "designed voices", "clone": "cloned voices"}
MB = 1024 * 1024


def needs_first_run(settings: Settings) -> bool:
    """True while the model that reads with preset voices is not on this machine."""
    return local_model_dir(settings.checkpoints["preset"]) is None


class DownloadWorker(QObject):
    """Runs one download on its own QThread; its signals reach the dialog queued, on the GUI thread."""

    progress = Signal(int, int)  # bytes done, bytes total (0: unknown yet)
    finished = Signal(str)  # the model folder
    failed = Signal(str)  # why it stopped (also after a cancel)

    def __init__(self, downloader: Downloader, repo_id: str):
        super().__init__()
        self.downloader = downloader
        self.repo_id = repo_id
        self.cancelled = threading.Event()

    @Slot()
    def run(self) -> None:
        try:
            folder = self.downloader(self.repo_id, self.progress.emit, self.cancelled)
        except DownloadCancelled:
            self.failed.emit("Download stopped.")
        except Exception as exc:  # noqa: BLE001 - offline, 404, disk full: show it, let the user retry
            self.failed.emit(describe_download_error(self.repo_id, exc))
        else:
            self.finished.emit(str(folder))


class FirstRunDialog(QDialog):
    """See the module docstring. ``downloading`` tells whether a download runs."""

    def __init__(self, settings: Settings, downloader: Downloader = hub_download,
                 advice: GpuAdvice | None = None, parent: QWidget | None = None, measure_speed=None):
        """``measure_speed(size, threads=None) -> engine.core.cpu.speed_probe.CpuSpeed`` replaces the real measurement
        in tests (``qtapp.cpu_speed.SpeedProbe``)."""
        super().__init__(parent)
        self.settings = settings
        self.downloader = downloader
        self._queue: list[ModelChoice] = []
        self._current: ModelChoice | None = None
        self._thread: QThread | None = None
        self._worker: DownloadWorker | None = None
        self.setWindowTitle("Welcome to Orator")
        self.setMinimumWidth(620)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(
            "Orator speaks with Qwen3-TTS models that run on this computer. Download the model that reads "
            "with preset voices to start (from Hugging Face, once); add the larger ones later for designing "
            "and cloning voices. Or use a model folder you already have.", wordWrap=True))

        models = QGroupBox("Models to download")
        models_layout = QVBoxLayout(models)
        self.model_boxes: dict[str, QCheckBox] = {}
        for choice in RECOMMENDED_MODELS:
            box = QCheckBox(f"{choice.title}: about {choice.approx_gb:g} GB ({choice.repo_id})")
            box.setChecked(choice.kind == "preset")
            models_layout.addWidget(box)
            purpose = QLabel(f"<small>{choice.purpose}</small>", wordWrap=True)
            purpose.setContentsMargins(24, 0, 0, 4)
            models_layout.addWidget(purpose)
            self.model_boxes[choice.repo_id] = box
        layout.addWidget(models)

        actions = QHBoxLayout()
        self.download_button = QPushButton("Download selected")
        self.download_button.clicked.connect(self._download_clicked)
        self.folder_button = QPushButton("Use a folder I have…")
        self.folder_button.clicked.connect(self.choose_folder)
        actions.addWidget(self.download_button)
        actions.addWidget(self.folder_button)
        actions.addStretch(1)
        layout.addLayout(actions)
        self.progress = QProgressBar(minimum=0, maximum=100, value=0)
        self.progress.hide()
        layout.addWidget(self.progress)
        self.status = QLabel(wordWrap=True)
        layout.addWidget(self.status)

        advice = advice or gpu_advice()
        gpu = QGroupBox("Graphics card")
        gpu_layout = QVBoxLayout(gpu)
        self.gpu_label = QLabel(advice.text(), wordWrap=True)
        self.gpu_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        gpu_layout.addWidget(self.gpu_label)
        self.speed_label = QLabel(wordWrap=True)
        self.speed_label.setAccessibleName("Speed on this processor")
        self.speed_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.speed_label.hide()
        gpu_layout.addWidget(self.speed_label)
        layout.addWidget(gpu)
        self._speeds: dict[str, float] = {}
        self._probe: SpeedProbe | None = None
        if advice.device == "cpu" and advice.runnable:
            self.speed_label.setText("Measuring how fast this processor speaks…")
            self.speed_label.show()
            self._probe = SpeedProbe(measure_speed)
            self._probe.measured.connect(self._on_speed)
            self._probe.failed.connect(self.speed_label.setText)
            self._probe.start()

        self.buttons = QDialogButtonBox()
        self.start_button = self.buttons.addButton("Start Orator", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self.accept)
        layout.addWidget(self.buttons)
        self._refresh_models()

    # ---- state -------------------------------------------------------------------------------------
    @property
    def downloading(self) -> bool:
        return self._current is not None

    def _refresh_models(self) -> None:
        """Tick off what is already here; the start button says whether reading will work."""
        for choice in RECOMMENDED_MODELS:
            box = self.model_boxes[choice.repo_id]
            here = local_model_dir(choice.repo_id) is not None
            if here:
                box.setChecked(False)
                box.setText(f"{choice.title}: downloaded ✓")
            box.setEnabled(not here and not self.downloading)
        ready = not needs_first_run(self.settings)
        if self.parent() is not None:  # opened again from the studio's Help menu: the studio runs already
            self.start_button.setText("Close")
        else:
            self.start_button.setText("Start Orator" if ready else "Skip for now")

    def _set_status(self, text: str, error: bool = False) -> None:
        self.status.setStyleSheet("color: #b3261e;" if error else "")
        self.status.setText(text)
        self._fit_height()

    def _fit_height(self) -> None:
        """Grow to the height the wrapped labels need at this width: Qt sizes a dialog from its hint once, so a
        long message (or the progress bar appearing) would otherwise squash the model list onto itself."""
        layout = self.layout()
        layout.activate()
        needed = layout.totalHeightForWidth(self.width())
        if needed > self.height():
            self.resize(self.width(), needed)

    # ---- local folder ------------------------------------------------------------------------------
    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Choose a Qwen3-TTS model folder",
                                                  str(self.settings.start_folder()))
        if folder:
            self.use_local_folder(folder)

    def use_local_folder(self, folder: str) -> bool:
        """Use ``folder`` for the voice kind its model serves; False (and why, shown) if it is not a model."""
        try:
            path, kind = validate_model_folder(folder)
        except CheckpointError as exc:
            self._set_status(f"That folder cannot be used: {exc}", error=True)
            return False
        self.settings.checkpoints[kind] = str(path)
        self.settings.save()
        self._set_status(f"Using {path} for {KIND_NAMES[kind]}.")
        self._refresh_models()
        return True

    # ---- downloads ---------------------------------------------------------------------------------
    def _download_clicked(self) -> None:
        if self.downloading:
            self.cancel_download()
        else:
            self.start_downloads()

    def start_downloads(self) -> None:
        self._queue = [c for c in RECOMMENDED_MODELS if self.model_boxes[c.repo_id].isChecked()]
        if not self._queue:
            self._set_status("Tick a model to download first.", error=True)
            return
        self._next_download()

    def cancel_download(self) -> None:
        self._queue = []
        if self._worker is not None:
            self._worker.cancelled.set()

    def _next_download(self) -> None:
        if not self._queue:
            self._current = None
            self.download_button.setText("Download selected")
            self.folder_button.setEnabled(True)
            self._refresh_models()
            return
        self._current = self._queue.pop(0)
        self.download_button.setText("Stop")
        self.folder_button.setEnabled(False)
        self.progress.setValue(0)
        self.progress.show()
        self._fit_height()
        self._set_status(f"Downloading {self._current.title}…")
        self._refresh_models()
        self._thread = QThread(self)
        self._worker = DownloadWorker(self.downloader, self._current.repo_id)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        self._worker.progress.connect(self._on_progress)
        self._worker.finished.connect(self._on_finished)
        self._worker.failed.connect(self._on_failed)
        self._thread.start()

    def _end_thread(self) -> None:
        if self._thread is not None:
            self._thread.quit()
            self._thread.wait()
        self._thread, self._worker = None, None

    def _on_progress(self, done: int, total: int) -> None:
        if total > 0 and self._current is not None:
            self.progress.setValue(min(100, round(100 * done / total)))
            self._set_status(f"Downloading {self._current.title}: {done / MB:,.0f} of {total / MB:,.0f} MB")

    def _on_finished(self, folder: str) -> None:
        self._end_thread()
        self.settings.checkpoints[self._current.kind] = self._current.repo_id
        self.settings.save()
        self.progress.setValue(100)
        self._set_status(f"{self._current.title} is ready ({folder}).")
        self._next_download()

    def _on_failed(self, message: str) -> None:
        self._end_thread()
        self._queue = []
        self._set_status(message, error=True)
        self._next_download()

    # ---- speed on the processor ---------------------------------------------------------------------
    def _on_speed(self, size: str, xrt: float, plan: str = "") -> None:
        self._speeds[size] = xrt
        self.settings.cpu_speed = dict(self._speeds)
        self.settings.save()
        self.speed_label.setText(speed_advice(self._speeds, plan))
        # after the label's new size hint is in (its layout request is an event): measured now, it is the old one
        QTimer.singleShot(0, self._fit_height)

    # ---- closing -----------------------------------------------------------------------------------
    def done(self, result: int) -> None:
        """Closing stops a running download (the Hugging Face cache resumes it next time) and the speed
        measurement (after the size being measured)."""
        self.cancel_download()
        self._end_thread()
        if self._probe is not None:
            self._probe.stop()
        super().done(result)
