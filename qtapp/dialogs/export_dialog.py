"""The Export dialog: what a new export-queue job writes (format, voice, where, per chapter or one file, which
chapters, subtitles, loudness and casting (``casting_section``), the whole text or the selection). It only
describes the job: accepting it queues the job and returns at once (``qtapp.export_queue``), and the export runs
in the background."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from engine.production.audio_formats import audio_format
from qtapp.chapter_choice import ChapterChoice
from qtapp.dialogs.casting_section import CastingSection, loudness_box

FORMAT_CHOICES = {
    "m4b": "M4B audiobook (AAC, chapters)",
    "mp3": "MP3",
    "m4a": "M4A (AAC)",
    "opus": "Opus",
    "flac": "FLAC (lossless)",
    "wav": "WAV (lossless, large)",
}
SUBTITLE_CHOICES = {None: "No subtitles", "srt": "SRT subtitles", "vtt": "WebVTT subtitles"}


class ExportDialog(QDialog):
    """``suggest(format, per_chapter, selection_only) -> Path`` gives the default output; ``chapters`` the book's
    chapters (the whole text's: ``title`` and ``level``, nested in the list), ``voices`` the names to offer,
    ``voice`` the default one."""

    def __init__(self, title: str, chapters: list, voices: list[str], voice: str,
                 suggest: Callable[[str, bool, bool], Path], has_selection: bool, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export audio")
        self.setMinimumWidth(560)
        self._suggest = suggest
        self._path_edited = False
        self._said_chapter_problem = False  # the error label says why the chapters chosen cannot be exported
        form = QFormLayout(self)
        self.title_field = QLineEdit(title)
        self.title_field.setAccessibleName("Title of the export")
        self.format = QComboBox()
        self.format.setAccessibleName("Audio format")
        for key, label in FORMAT_CHOICES.items():
            self.format.addItem(label, key)
        self.voice = QComboBox(editable=True)
        self.voice.setAccessibleName("Voice for unmarked text")
        self.voice.addItems(voices)
        self.voice.setCurrentText(voice)
        self.path_field = QLineEdit()
        self.path_field.setAccessibleName("Output file or folder")
        self.path_field.textEdited.connect(lambda _: setattr(self, "_path_edited", True))
        browse = QPushButton("&Browse…")
        browse.setAccessibleName("Choose where to write")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.path_field, 1)
        row.addWidget(browse)
        self.per_chapter = QCheckBox("One &file per chapter, numbered, in a folder")
        self.subtitles = QComboBox()
        self.subtitles.setAccessibleName("Subtitles")
        for key, label in SUBTITLE_CHOICES.items():
            self.subtitles.addItem(label, key)
        self.selection_only = QCheckBox("Only the &selected text", checked=has_selection, enabled=has_selection)
        self.chapter_choice = ChapterChoice(chapters)
        self.chapter_choice.changed.connect(self._check_chapters)
        self.chapters = self.chapter_choice.tree
        self.chapters.setMinimumHeight(160)
        self.chapters_label = QLabel("&Chapters:")
        self.chapters_label.setBuddy(self.chapters)
        self.all_chapters = self.chapter_choice.all_button
        self.no_chapters = self.chapter_choice.none_button
        # the numbers as ``export --chapters`` takes them: checking them is the one way the two agree
        self.chapter_range = self.chapter_choice.range_field
        form.addRow("&Title:", self.title_field)
        form.addRow("F&ormat:", self.format)
        form.addRow("&Voice:", self.voice)
        write_label = QLabel("&Write to:")  # a row of a layout gets no buddy from the form: the field is its buddy
        write_label.setBuddy(self.path_field)
        form.addRow(write_label, row)
        form.addRow(self.per_chapter)
        form.addRow("Su&btitles:", self.subtitles)
        self.loudness = loudness_box()
        form.addRow("Lo&udness:", self.loudness)
        self.casting = CastingSection(voices)
        form.addRow(self.casting)
        form.addRow(self.selection_only)
        form.addRow(self.chapters_label, self.chapter_choice)
        self.error_label = QLabel(wordWrap=True)
        self.error_label.setStyleSheet("color: #a12622;")
        self.error_label.hide()
        form.addRow(self.error_label)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.ok = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok.setText("&Add to queue")
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        for signal in (self.format.currentIndexChanged, self.per_chapter.toggled, self.selection_only.toggled):
            signal.connect(self._refresh)
        self._refresh()

    # ---- what the job is ----------------------------------------------------------------------------------
    @property
    def format_key(self) -> str:
        return self.format.currentData()

    @property
    def subtitles_key(self) -> str | None:
        return self.subtitles.currentData()

    @property
    def loudness_key(self) -> str:
        return self.loudness.currentData()

    def output(self) -> Path:
        return Path(self.path_field.text().strip()).expanduser()

    def chosen_chapters(self) -> list[int] | None:
        """0-based chapters checked; None when all are (or when the selection is exported)."""
        if self.selection_only.isChecked() or self.chapter_choice.count() == 0:
            return None
        return self.chapter_choice.chosen()

    def problem(self) -> str | None:
        """Why the job cannot be queued as filled in, or None."""
        if not self.path_field.text().strip():
            return "Choose where to write the export."
        if not self.output().is_absolute():
            return "Give the full path of the file or folder to write."
        if self.chapter_problem() is not None:
            return self.chapter_problem()
        if not self.voice.currentText().strip():
            return "Choose a voice."
        return self.casting.problem()

    def chapter_problem(self) -> str | None:
        """Why the chapters chosen cannot be exported (a range that does not parse, none checked), or None."""
        if self.selection_only.isChecked():
            return None
        return self.chapter_choice.problem()

    # ---- internals --------------------------------------------------------------------------------------
    def _check_chapters(self) -> None:
        """Add to queue is off while the chapters chosen cannot be exported, with the reason beneath."""
        problem = self.chapter_problem()
        self.ok.setEnabled(problem is None)
        if problem is not None or self._said_chapter_problem:  # the label may say another problem: leave that
            self.error_label.setText(problem or "")
            self.error_label.setVisible(problem is not None)
        self._said_chapter_problem = problem is not None

    def _refresh(self) -> None:
        chaptered = not self.selection_only.isChecked() and self.chapter_choice.count() > 0
        for widget in (self.chapter_choice, self.chapters_label):
            widget.setEnabled(chaptered)
        self._check_chapters()
        suffix = audio_format(self.format_key).suffix
        if not self._path_edited or not self.path_field.text().strip():
            self.path_field.setText(str(self._suggest(self.format_key, self.per_chapter.isChecked(),
                                                      self.selection_only.isChecked())))
            self._path_edited = False
        elif not self.per_chapter.isChecked():
            self.path_field.setText(str(self.output().with_suffix(suffix)))

    def _accept(self) -> None:
        problem = self.problem()
        if problem is not None:
            self.error_label.setText(problem)
            self.error_label.show()
            return
        if not self.per_chapter.isChecked():
            self.path_field.setText(str(self.output().with_suffix(audio_format(self.format_key).suffix)))
        self.accept()

    def _browse(self) -> None:
        if self.per_chapter.isChecked():
            name = QFileDialog.getExistingDirectory(self, "Write the chapter files into", str(self.output().parent))
        else:
            suffix = audio_format(self.format_key).suffix
            name, _ = QFileDialog.getSaveFileName(self, "Export audio to", str(self.output()), f"Audio (*{suffix})")
        if name:
            self.path_field.setText(name)
            self._path_edited = True
            self._refresh()
