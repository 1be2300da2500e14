"""The Models & settings dialog: the checkpoint serving each voice kind, device, precision, streaming, and the
casting reading aloud speaks with (``casting_section``)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine.core.text.reading_policy import FOOTNOTES_AT_PARAGRAPH_END, FOOTNOTES_SKIP
from engine.core.text.segments import DEFAULT_MAX_CHARS
from qtapp.dialogs.casting_section import CastingSection
from qtapp.gpu_check import gpu_advice
from qtapp.settings import DEVICES, KNOWN_CHECKPOINTS, MAX_THREADS, PRECISIONS, VOICE_KINDS, Settings

MIN_SEGMENT_CHARS = 20  # the least target engine.core.text.segments.check_target_chars takes

KIND_TITLES = {
    "preset": "Preset speakers (CustomVoice)",
    "design": "Designed voices (VoiceDesign)",
    "clone": "Cloned voices (Base)",
}


def speed_summary(cpu_speed: dict[str, float], in_use: str) -> str:
    """The Settings dialog's speed line: the path in use, and this processor's measured speed per model size."""
    parts = [f"In use: {in_use}." if in_use else "No model is loaded yet."]
    if cpu_speed:
        figures = ", ".join(f"{size.upper()} {xrt:.2f}×" for size, xrt in sorted(cpu_speed.items()))
        parts.append(f"Measured on this processor: {figures} real time (1× reads aloud without pauses; "
                     "Help ▸ Download models… measures again). While reading, the generation gauge shows the "
                     "speed of the model in use.")
    return " ".join(parts)


class SettingsDialog(QDialog):
    def __init__(self, settings: Settings, parent: QWidget | None = None, in_use: str = "",
                 voices: list[str] | None = None, plan: str = ""):
        """``in_use``: the loaded model and the path it runs on (``qtapp.worker.describe_engine``); ``voices``: the
        names the casting offers; ``plan``: its execution plan (``engine.core.execution_plan.ExecutionPlan.summary``),
        shown as it is, read-only."""
        super().__init__(parent)
        self.settings = settings
        self.setWindowTitle("Models & settings")
        self.setMinimumWidth(560)
        layout = QVBoxLayout(self)

        models = QGroupBox("Which model speaks each kind of voice")
        models_form = QFormLayout(models)
        self.checkpoint_fields: dict[str, QComboBox] = {}
        for kind in VOICE_KINDS:
            combo = QComboBox(editable=True)
            combo.addItems(KNOWN_CHECKPOINTS[kind])
            combo.setCurrentText(settings.checkpoints[kind])
            combo.setToolTip("A Hugging Face hub id or a local model folder")
            browse = QToolButton(icon=self.style().standardIcon(QStyle.StandardPixmap.SP_DirOpenIcon),
                                 toolTip="Choose a local model folder")
            browse.clicked.connect(lambda _=False, c=combo: self._browse(c))
            row = QHBoxLayout()
            row.addWidget(combo, 1)
            row.addWidget(browse)
            models_form.addRow(KIND_TITLES[kind] + ":", row)
            self.checkpoint_fields[kind] = combo
        layout.addWidget(models)

        runtime = QGroupBox("Runtime")
        runtime_form = QFormLayout(runtime)
        self.device = QComboBox()
        self.device.addItems(DEVICES)
        self.device.setCurrentText(settings.device)
        self.precision = QComboBox()
        self.precision.addItems(PRECISIONS)
        self.precision.setCurrentText(settings.precision)
        self.cpu_path = QComboBox()
        self.cpu_path.addItem("Fast (int8 weights)", "fast")
        self.cpu_path.addItem("Exact (float32)", "exact")
        self.cpu_path.setCurrentIndex(max(0, self.cpu_path.findData(settings.cpu_path)))
        self.cpu_path.setToolTip("On the processor: int8 weights read a quarter of float32's bytes and speak "
                                 "several times faster; float32 is exact")
        self.threads = QSpinBox(minimum=0, maximum=MAX_THREADS, value=settings.threads)
        self.threads.setSpecialValueText("Automatic")  # 0: measured as it reads (engine.core.cpu.threads)
        self.threads.setToolTip("Processor threads for speech; Automatic measures, as it reads, whether all the "
                                "cores or one fewer is faster (one fewer when another program is busy)")
        self.chunk_frames = QSpinBox(minimum=1, maximum=32, value=settings.chunk_frames, suffix=" frames")
        self.chunk_frames.setToolTip("Audio is decoded this many 80 ms frames at a time while streaming")
        runtime_form.addRow("Device:", self.device)
        runtime_form.addRow("Precision (GPU):", self.precision)
        runtime_form.addRow("Precision (processor):", self.cpu_path)
        runtime_form.addRow("Processor threads:", self.threads)
        runtime_form.addRow("Streaming chunk:", self.chunk_frames)
        self.segment_chars = QSpinBox(minimum=0, maximum=DEFAULT_MAX_CHARS, value=settings.segment_chars,
                                      suffix=" characters", singleStep=20)
        self.segment_chars.setSpecialValueText("One sentence at a time")
        self.segment_chars.setToolTip("The short sentences of a line are spoken in one go, keeping the voice of "
                                      "one thought, up to this many characters (at least 20)")
        runtime_form.addRow("Speak together:", self.segment_chars)
        self.read_urls = QCheckBox("Read web addresses in full", checked=settings.read_urls)
        self.read_urls.setToolTip("Off: a web address is read as its site name (docs.python.org)")
        runtime_form.addRow("Reading:", self.read_urls)
        self.read_code = QCheckBox("Read code, shell sessions and diagrams", checked=settings.read_code)
        self.read_code.setToolTip("Off: each is announced (“Code example”, “Diagram”) and skipped")
        runtime_form.addRow("", self.read_code)
        self.read_footnotes = QCheckBox("Read footnotes after their paragraph",
                                        checked=settings.footnotes != FOOTNOTES_SKIP)
        self.read_footnotes.setToolTip("Off: footnotes are skipped")
        runtime_form.addRow("", self.read_footnotes)
        runtime_form.addRow(QLabel("<small>“auto” uses CUDA when a GPU is available. The precision applies on a "
                                   "GPU (bfloat16 is the checkpoints' own); on the processor speech runs in "
                                   "float32, with int8 weights on the fast path.</small>", wordWrap=True))
        self.speed_label = QLabel(speed_summary(settings.cpu_speed, in_use), wordWrap=True)
        self.speed_label.setAccessibleName("Speed")
        self.speed_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        runtime_form.addRow("Speed:", self.speed_label)
        self.plan_label = QLabel(plan or "Chosen when a model loads.", wordWrap=True)
        self.plan_label.setAccessibleName("Execution plan")
        self.plan_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.plan_label.setToolTip("What the loaded model runs on: device, precision, kernels, threads, the "
                                   "processor features relied on and any fallback (python main.py info prints it)")
        runtime_form.addRow("Execution plan:", self.plan_label)
        self.gpu_label = QLabel(gpu_advice().text(), wordWrap=True)
        self.gpu_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        runtime_form.addRow("PyTorch:", self.gpu_label)
        layout.addWidget(runtime)
        self.casting = CastingSection(voices or [], title="Casting (reading aloud, and new exports)")
        self.casting.set_cast(settings.dialogue_voice, settings.cast)
        layout.addWidget(self.casting)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        ok = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.casting.characters.textChanged.connect(lambda: ok.setEnabled(self.casting.problem() is None))
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def _browse(self, combo: QComboBox) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Choose a model folder", combo.currentText())
        if folder:
            combo.setCurrentText(folder)

    def apply(self) -> bool:
        """Write the form into the settings; True if what loads a model changed (checkpoints, device, precision,
        processor path or threads)."""
        s = self.settings
        before = (dict(s.checkpoints), s.device, s.precision, s.cpu_path, s.threads)
        for kind, combo in self.checkpoint_fields.items():
            self.settings.checkpoints[kind] = combo.currentText().strip() or self.settings.checkpoints[kind]
        self.settings.device = self.device.currentText()
        self.settings.precision = self.precision.currentText()
        self.settings.chunk_frames = self.chunk_frames.value()
        chars = self.segment_chars.value()
        self.settings.segment_chars = chars if chars == 0 else max(chars, MIN_SEGMENT_CHARS)
        self.settings.read_urls, self.settings.read_code = self.read_urls.isChecked(), self.read_code.isChecked()
        self.settings.footnotes = FOOTNOTES_AT_PARAGRAPH_END if self.read_footnotes.isChecked() else FOOTNOTES_SKIP
        s.cpu_path, s.threads = self.cpu_path.currentData(), self.threads.value()
        if self.casting.problem() is None:  # OK is off while it has one
            s.dialogue_voice, s.cast = self.casting.dialogue_voice(), self.casting.characters.text().strip()
        return before != (s.checkpoints, s.device, s.precision, s.cpu_path, s.threads)
