"""The status bar's model corner: which model reads, what a model load is doing, a download's progress.

``ModelStatus`` follows the speech worker's signals (``qtapp.worker.SpeechWorker``): the label says
"Model: …" once one is loaded and, from then on, the model each reading starts with (``in_use``: a clone
is read by a Base model, a preset by a CustomVoice one), "Loading …" or "Downloading …" while one comes, and
after a failed load what failed instead of a "Loading…" that never ends. While a download runs, a progress
bar and a Stop button (``stop_requested``) sit beside the label.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QToolButton, QWidget

MB = 1024 * 1024


class ModelStatus(QWidget):
    stop_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.label = QLabel("Loading model…")
        self.label.setAccessibleName("Model")
        self.progress = QProgressBar(minimum=0, maximum=100, value=0, maximumWidth=160)
        self.progress.setAccessibleName("Model download")
        self.stop_button = QToolButton(text="Stop download", toolTip="Stop downloading the model")
        self.stop_button.clicked.connect(self.stop_requested)
        self._busy = False  # a load or download is under way: its progress keeps the label
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.progress)
        layout.addWidget(self.stop_button)
        self._downloading(False)

    @property
    def downloading(self) -> bool:
        return not self.stop_button.isHidden()

    def _downloading(self, on: bool) -> None:
        self.progress.setVisible(on)
        self.stop_button.setVisible(on)

    def loading(self, what: str) -> None:
        self._downloading(False)
        self._busy = True
        self.label.setText(f"Loading {what}…")

    def status(self, text: str) -> None:
        """A step of a load after its download ("Loading …", "Preparing …")."""
        self._downloading(False)
        self._busy = True
        self.label.setText(text)

    def download_progress(self, repo_id: str, done: int, total: int) -> None:
        self._downloading(True)
        self._busy = True
        if total > 0:
            self.progress.setRange(0, 100)
            self.progress.setValue(min(100, round(100 * done / total)))
            self.label.setText(f"Downloading {repo_id}: {done / MB:,.0f} of {total / MB:,.0f} MB")
        else:  # busy until the size is known
            self.progress.setRange(0, 0)
            self.label.setText(f"Downloading {repo_id}: {done / MB:,.0f} MB" if done else f"Downloading {repo_id}…")

    def loaded(self, info: str) -> None:
        self._downloading(False)
        self._busy = False
        self.label.setText(f"Model: {info}")
        self.label.setToolTip("")  # a failure said there before no longer holds

    def in_use(self, info: str) -> None:
        """A reading started with the model ``info``: name it, unless a load's progress is being shown."""
        if not self._busy:
            self.label.setText(f"Model: {info}")

    def failed(self, kind: str, message: str, in_use: str = "") -> None:
        """A load failed: say so in place of "Loading…", and which model still reads (``in_use``, "" for none);
        the message itself goes to the banner and the tooltip."""
        self._downloading(False)
        self._busy = False
        what = f"for {kind} voices " if kind else ""
        if in_use:
            self.label.setText(f"Model: {in_use} · none {what}(the load failed)")
        else:
            self.label.setText(f"No model {what}loaded: the load failed")
        self.label.setToolTip(message)
