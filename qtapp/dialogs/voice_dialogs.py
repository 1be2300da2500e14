"""Dialogs that create a voice: a preset speaker, a designed voice, or a clone of a recording.

Each dialog's ``build_voice()`` makes the ``engine.Voice`` from the form (raising ``VoiceError``
or ``ValueError`` with a readable message); OK keeps the dialog open until that succeeds, then
the voice is in ``created_voice`` and the library name the user chose in ``name()``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QWidget,
)

from qtapp.settings import LANGUAGES, PRESET_SPEAKERS

AUDIO_FILTER = "Audio (*.wav *.flac *.ogg *.mp3 *.m4a *.aiff *.aif);;All files (*)"


def language_combo(current: str = "auto") -> QComboBox:
    combo = QComboBox()
    combo.addItems(LANGUAGES)
    combo.setCurrentText(current)
    return combo


class _VoiceDialog(QDialog):
    """Common frame: a form, a name field, OK/Cancel; OK only closes once ``build_voice()`` succeeds."""

    def __init__(self, title: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setMinimumWidth(460)
        self.form = QFormLayout(self)
        self.name_field = QLineEdit(placeholderText="Name in the library")
        self.form.addRow("Name:", self.name_field)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.created_voice = None

    def finish_layout(self) -> None:
        self.form.addRow(self.buttons)

    def name(self) -> str:
        return self.name_field.text().strip()

    def build_voice(self):
        raise NotImplementedError

    def accept(self) -> None:
        from engine import VoiceError

        if not self.name():
            QMessageBox.warning(self, self.windowTitle(), "Please give the voice a name.")
            return
        try:
            self.created_voice = self.build_voice()
        except (VoiceError, OSError, ValueError) as e:
            QMessageBox.warning(self, self.windowTitle(), str(e))
            return
        super().accept()


class PresetVoiceDialog(_VoiceDialog):
    def __init__(self, parent: QWidget | None = None):
        super().__init__("New preset voice", parent)
        self.speaker = QComboBox()
        self.speaker.addItems(PRESET_SPEAKERS)
        self.speaker.currentTextChanged.connect(self._suggest_name)
        self.language = language_combo()
        self.instruct = QLineEdit(placeholderText="optional, e.g. “cheerful and a little fast”")
        self.form.addRow("Speaker:", self.speaker)
        self.form.addRow("Language:", self.language)
        self.form.addRow("Style:", self.instruct)
        self.form.addRow(QLabel("<small>The 0.6B CustomVoice model ignores the style instruction.</small>"))
        self.finish_layout()
        self._suggest_name(self.speaker.currentText())

    def _suggest_name(self, speaker: str) -> None:
        self.name_field.setText(speaker.replace("_", " ").title())

    def build_voice(self):
        from engine import Voice

        return Voice.preset(self.speaker.currentText(), language=self.language.currentText(),
                            instruct=self.instruct.text().strip() or None).with_(name=self.name())


class DesignVoiceDialog(_VoiceDialog):
    def __init__(self, parent: QWidget | None = None):
        super().__init__("New designed voice", parent)
        self.description = QPlainTextEdit(placeholderText="Describe the voice: age, gender, timbre, pace, mood…")
        self.description.setFixedHeight(90)
        self.language = language_combo()
        self.form.addRow("Description:", self.description)
        self.form.addRow("Language:", self.language)
        self.form.addRow(QLabel("<small>A designed voice varies from sentence to sentence; use "
                                "“Keep this voice” in the library to fix one rendition as a clone.</small>"))
        self.finish_layout()

    def build_voice(self):
        from engine import Voice

        return Voice.design(self.description.toPlainText(), language=self.language.currentText()).with_(
            name=self.name())


class CloneVoiceDialog(_VoiceDialog):
    """Pick a recording, optionally trim it and type its transcript (enables in-context cloning)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Clone a voice from a recording", parent)
        self._audio: tuple[np.ndarray, int] | None = None  # float32 [N] or [N, C], sample rate
        self.file_field = QLineEdit(readOnly=True, placeholderText="3–20 seconds of clean speech")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.file_field, 1)
        row.addWidget(browse)
        self.trim_start = QDoubleSpinBox(suffix=" s", decimals=2, singleStep=0.1, maximum=0.0)
        self.trim_end = QDoubleSpinBox(suffix=" s", decimals=2, singleStep=0.1, maximum=0.0)
        self.duration_label = QLabel("–")
        trim = QHBoxLayout()
        for label, widget in (("from", self.trim_start), ("to", self.trim_end)):
            trim.addWidget(QLabel(label))
            trim.addWidget(widget)
        trim.addWidget(self.duration_label, 1)
        self.transcript = QPlainTextEdit(placeholderText="Optional: exactly what is said in the kept part. "
                                                        "With a transcript the clone is closer to the recording.")
        self.transcript.setFixedHeight(80)
        self.language = language_combo()
        self.form.addRow("Recording:", row)
        self.form.addRow("Keep:", trim)
        self.form.addRow("Transcript:", self.transcript)
        self.form.addRow("Language:", self.language)
        self.finish_layout()

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a recording", "", AUDIO_FILTER)
        if path:
            try:
                self.set_audio_file(Path(path))
            except (OSError, RuntimeError) as e:
                QMessageBox.warning(self, self.windowTitle(), f"Cannot read “{Path(path).name}”: {e}")

    def set_audio_file(self, path: Path) -> None:
        import soundfile

        samples, rate = soundfile.read(str(path), dtype="float32")
        if len(samples) == 0:
            raise OSError("the recording is empty")
        self._audio = (samples, rate)
        duration = len(samples) / rate
        self.file_field.setText(str(path))
        for spin in (self.trim_start, self.trim_end):
            spin.setMaximum(duration)
        self.trim_start.setValue(0.0)
        self.trim_end.setValue(duration)
        self.duration_label.setText(f"of {duration:.2f} s")
        if not self.name():
            self.name_field.setText(path.stem)

    def trimmed_audio(self) -> tuple[np.ndarray, int]:
        """The kept part of the recording: samples [N] or [N, C] and the sample rate."""
        if self._audio is None:
            raise ValueError("Choose a recording first.")
        samples, rate = self._audio
        start, end = int(self.trim_start.value() * rate), int(self.trim_end.value() * rate)
        if end - start < rate // 2:
            raise ValueError("Keep at least half a second of the recording.")
        return samples[start:end], rate

    def build_voice(self):
        from engine import Voice

        return Voice.clone(self.trimmed_audio(), ref_text=self.transcript.toPlainText(),
                           language=self.language.currentText(), name=self.name())
