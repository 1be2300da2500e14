"""Dialogs that create a voice: a preset speaker, a designed voice, or a clone of a recording.

Each dialog's ``build_voice()`` makes the ``engine.Voice`` from the form (raising ``VoiceError``
or ``ValueError`` with a readable message); OK keeps the dialog open until that succeeds, then
the voice is in ``created_voice`` and the library name the user chose in ``name()``.

The clone dialog takes its reference from a file or from the microphone (``qtapp.recorder``, at most
60 s, elapsed time and level shown while it runs); both end in the same trim and transcript form.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QTimer
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
    QProgressBar,
    QPushButton,
    QWidget,
)

from engine.errors import VoiceError
from qtapp.recorder import MAX_RECORD_S, MicRecorder
from qtapp.settings import LANGUAGES, documents_folder

AUDIO_FILTER = "Audio (*.wav *.flac *.ogg *.mp3 *.m4a *.aiff *.aif);;All files (*)"
RECORDING_POLL_MS = 100


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
    """``speakers``: the preset model's speakers (``qtapp.model_download.preset_speakers``)."""

    def __init__(self, speakers: list[str], parent: QWidget | None = None):
        super().__init__("New preset voice", parent)
        self.speaker = QComboBox()
        self.speaker.addItems(speakers)
        self._suggested = ""  # the name this dialog put in the field; any other text is the user's own
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
        """Name the voice after the speaker, unless the user typed a name of their own."""
        if self.name_field.text() not in ("", self._suggested):
            return
        self._suggested = speaker.replace("_", " ").title()
        self.name_field.setText(self._suggested)

    def build_voice(self):
        from engine import Voice

        return Voice.preset(self.speaker.currentText(), language=self.language.currentText(),
                            instruct=self.instruct.text().strip() or None).with_(name=self.name())


class DesignVoiceDialog(_VoiceDialog):
    def __init__(self, parent: QWidget | None = None):
        super().__init__("New designed voice", parent)
        self.description = QPlainTextEdit(placeholderText="Describe the voice: age, gender, timbre, pace, mood…",
                                          tabChangesFocus=True)  # Tab moves on, so the dialog's buttons are reachable
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
    """Pick or record a reference, optionally trim it and type its transcript (enables in-context
    cloning). ``sd_module`` stands in for ``sounddevice`` (tests pass a fake)."""

    def __init__(self, parent: QWidget | None = None, sd_module=None):
        super().__init__("Clone a voice from a recording", parent)
        self._audio: tuple[np.ndarray, int] | None = None  # float32 [N] or [N, C], sample rate
        self._sd_module = sd_module
        self._recorder: MicRecorder | None = None
        self.file_field = QLineEdit(readOnly=True, placeholderText="3–20 seconds of clean speech")
        self.browse_button = QPushButton("Browse…")
        self.browse_button.clicked.connect(self._browse)
        self.record_button = QPushButton("Record")
        self.record_button.setToolTip(f"Record from the microphone (at most {MAX_RECORD_S:.0f} s)")
        self.record_button.clicked.connect(self.toggle_recording)
        self.level_meter = QProgressBar(maximum=100, textVisible=False, visible=False)
        self.level_meter.setFixedWidth(60)
        self._record_timer = QTimer(self, interval=RECORDING_POLL_MS)
        self._record_timer.timeout.connect(self._poll_recording)
        row = QHBoxLayout()
        row.addWidget(self.file_field, 1)
        row.addWidget(self.level_meter)
        row.addWidget(self.browse_button)
        row.addWidget(self.record_button)
        self.trim_start = QDoubleSpinBox(suffix=" s", decimals=2, singleStep=0.1, maximum=0.0)
        self.trim_end = QDoubleSpinBox(suffix=" s", decimals=2, singleStep=0.1, maximum=0.0)
        self.duration_label = QLabel("–")
        trim = QHBoxLayout()
        for label, widget in (("from", self.trim_start), ("to", self.trim_end)):
            trim.addWidget(QLabel(label))
            trim.addWidget(widget)
        trim.addWidget(self.duration_label, 1)
        self.transcript = QPlainTextEdit(placeholderText="Optional: exactly what is said in the kept part. "
                                                        "With a transcript the clone is closer to the recording.",
                                        tabChangesFocus=True)
        self.transcript.setFixedHeight(80)
        self.language = language_combo()
        self.form.addRow("Recording:", row)
        self.form.addRow("Keep:", trim)
        self.form.addRow("Transcript:", self.transcript)
        self.form.addRow("Language:", self.language)
        self.finish_layout()

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a recording", str(documents_folder()), AUDIO_FILTER)
        if path:
            try:
                self.set_audio_file(Path(path))
            except (OSError, RuntimeError, VoiceError) as e:
                QMessageBox.warning(self, self.windowTitle(), f"Cannot read “{Path(path).name}”: {e}")

    def set_audio_file(self, path: Path) -> None:
        """Use the recording at ``path`` (read mono at 24 kHz within ``engine.core.audio_files``' bounds: a file too
        long, of an absurd rate or a decompression bomb is a ``VoiceError``, never gigabytes)."""
        from engine.core.audio_files import SAMPLE_RATE, read_audio

        samples, _ = read_audio(path)
        if len(samples) == 0:
            raise OSError("the recording is empty")
        self.set_audio(samples, SAMPLE_RATE, str(path))
        if not self.name():
            self.name_field.setText(path.stem)

    def set_audio(self, samples: np.ndarray, rate: int, source: str) -> None:
        """Use ``samples`` (float32 [N] or [N, C] at ``rate``) as the reference, all of it kept."""
        self._audio = (samples, rate)
        duration = len(samples) / rate
        self.file_field.setText(source)
        for spin in (self.trim_start, self.trim_end):
            spin.setMaximum(duration)
        self.trim_start.setValue(0.0)
        self.trim_end.setValue(duration)
        self.duration_label.setText(f"of {duration:.2f} s")

    # ---- microphone ----------------------------------------------------------------------------
    @property
    def recording(self) -> bool:
        return self._recorder is not None and self._recorder.recording

    def toggle_recording(self) -> None:
        self.stop_recording() if self.recording else self.start_recording()

    def start_recording(self) -> None:
        try:
            if self._recorder is None:
                self._recorder = MicRecorder(self._sd_module)
            self._recorder.start()
        except Exception as exc:  # noqa: BLE001 - PortAudio missing or no input device: say so
            QMessageBox.warning(self, self.windowTitle(), f"Cannot record from the microphone: {exc}")
            return
        self.record_button.setText("Stop")
        self.browse_button.setEnabled(False)
        self.level_meter.setValue(0)
        self.level_meter.setVisible(True)
        self._record_timer.start()
        self._poll_recording()

    def stop_recording(self) -> None:
        """Stop the microphone and use what it captured, if anything, like an imported file."""
        if not self.recording:
            return
        self._record_timer.stop()
        samples = self._recorder.stop()
        self.record_button.setText("Record")
        self.browse_button.setEnabled(True)
        self.level_meter.setVisible(False)
        if len(samples) == 0:
            self.file_field.setText("")
            QMessageBox.warning(self, self.windowTitle(), "Nothing was recorded.")
            return
        rate = self._recorder.sample_rate
        self.set_audio(samples, rate, f"Microphone recording ({len(samples) / rate:.1f} s)")

    def _poll_recording(self) -> None:
        recorder = self._recorder
        self.file_field.setText(f"Recording… {recorder.seconds:.1f} s of at most {MAX_RECORD_S:.0f} s")
        self.level_meter.setValue(round(100 * min(1.0, recorder.level())))
        if recorder.full:
            self.stop_recording()

    def accept(self) -> None:
        self.stop_recording()  # OK while recording: keep what was said so far
        super().accept()

    def done(self, result: int) -> None:
        if self.recording:  # closed while recording: release the microphone, keep nothing
            self._record_timer.stop()
            self._recorder.stop()
        super().done(result)

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
