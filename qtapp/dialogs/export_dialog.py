"""The Export audio dialog: where to write, WAV or FLAC, whether to add subtitles (.srt)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QWidget,
)

FORMATS = {"WAV (lossless, large)": ".wav", "FLAC (lossless, compressed)": ".flac"}


class ExportDialog(QDialog):
    def __init__(self, suggested: Path, has_selection: bool, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export audio")
        self.setMinimumWidth(520)
        form = QFormLayout(self)
        self.format = QComboBox()
        self.format.addItems(FORMATS)
        self.format.currentTextChanged.connect(self._fix_suffix)
        self.path_field = QLineEdit(str(suggested.with_suffix(".wav")))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.path_field, 1)
        row.addWidget(browse)
        self.subtitles = QCheckBox("Also write subtitles (.srt) next to the audio", checked=True)
        self.selection_only = QCheckBox("Only the selected text", checked=has_selection, enabled=has_selection)
        form.addRow("Format:", self.format)
        form.addRow("File:", row)
        form.addRow(self.subtitles)
        form.addRow(self.selection_only)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Export")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    @property
    def suffix(self) -> str:
        return FORMATS[self.format.currentText()]

    def path(self) -> Path:
        return Path(self.path_field.text()).expanduser().with_suffix(self.suffix)

    def srt_path(self) -> Path | None:
        return self.path().with_suffix(".srt") if self.subtitles.isChecked() else None

    def _fix_suffix(self) -> None:
        if self.path_field.text():
            self.path_field.setText(str(self.path()))

    def _browse(self) -> None:
        name, _ = QFileDialog.getSaveFileName(self, "Export audio to", str(self.path()),
                                              f"Audio (*{self.suffix})")
        if name:
            self.path_field.setText(str(Path(name).with_suffix(self.suffix)))
