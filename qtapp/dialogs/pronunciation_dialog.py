"""Tools ▸ Pronunciation…: edit the pronunciation rules, one row a rule, and try them on a sentence.

Columns: On, Find, Say as, Regular expression, Match case, Voice (empty: every voice). Rows are added, removed and
moved with the buttons beside the table, or from the table with Insert, Delete, Ctrl+Up and Ctrl+Down; the check
columns toggle with Space, the text columns edit with F2 or by typing. *Try* shows what the sentence typed there is
said as, by the rules as the table holds them now, or what is wrong with the first rule that cannot be used. *Save*
is refused while a rule cannot be used: the message says which and the cell is selected. The rules themselves are
``engine.pronunciation``'s (one implementation for the studio, the command line and the server).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.errors import PronunciationError
from engine.pronunciation import Lexicon, default_lexicon

COLUMNS = ("On", "Find", "Say as", "Regular expression", "Match case", "Voice")
ON, FIND, SAY, REGEX, CASE, VOICE = range(len(COLUMNS))
_FIELD_COLUMNS = {"pattern": FIND, "replacement": SAY, "voice": VOICE, "regex": REGEX, "case_sensitive": CASE,
                  "enabled": ON}
ALL_VOICES = "(every voice)"
MAX_TRY_CHARS = 1000  # a sentence or two: the rules are bounded per sentence


class PronunciationDialog(QDialog):
    def __init__(self, lexicon: Lexicon, voice_names: list[str], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Pronunciation")
        self.resize(900, 520)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setAccessibleName("Pronunciation rules")
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setTabKeyNavigation(False)  # Tab leaves the table for the buttons; arrows move between cells
        header = self.table.horizontalHeader()
        for column in (FIND, SAY):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
        for column in (ON, REGEX, CASE):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(VOICE, QHeaderView.ResizeMode.Interactive)
        self.table.setColumnWidth(VOICE, 160)
        self.table.setToolTip("Find: a whole word (or words) as written, or a regular expression. Say as: what is "
                              "said instead; with a regular expression \\1 or \\g<name> is a group. Voice: only for "
                              "that voice (empty: every voice). Rules apply from the top down.")
        for rule in lexicon.rules:
            self._append(rule.to_json())

        buttons = QVBoxLayout()
        self.add_button = QPushButton("&Add")
        self.remove_button = QPushButton("&Remove")
        self.up_button = QPushButton("Move &up")
        self.down_button = QPushButton("Move &down")
        self.defaults_button = QPushButton("Add the s&hipped rules")
        self.defaults_button.setToolTip("Add the rules Orator comes with (e.g., i.e., etc., vs., …) that are not "
                                        "in the table")
        for button, slot, key in ((self.add_button, self.add_rule, "Insert"),
                                  (self.remove_button, self.remove_rule, "Delete"),
                                  (self.up_button, lambda: self.move_rule(-1), "Ctrl+Up"),
                                  (self.down_button, lambda: self.move_rule(+1), "Ctrl+Down"),
                                  (self.defaults_button, self.add_defaults, None)):
            button.clicked.connect(slot)
            buttons.addWidget(button)
            if key:  # the same from the table, without leaving it (a cell being edited keeps its own keys)
                action = QAction(button.text().replace("&", ""), self.table, shortcut=QKeySequence(key))
                action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
                action.triggered.connect(slot)
                self.table.addAction(action)
                button.setToolTip(f"{action.text()} ({key} in the table)")
        buttons.addStretch(1)
        rows = QHBoxLayout()
        rows.addWidget(self.table, 1)
        rows.addLayout(buttons)

        self.try_field = QLineEdit(maxLength=MAX_TRY_CHARS, placeholderText="Type a sentence to hear how it is said")
        self.try_field.setAccessibleName("Try a sentence")
        self.try_voice = QComboBox()
        self.try_voice.setAccessibleName("Voice to try with")
        self.try_voice.addItem(ALL_VOICES)
        self.try_voice.addItems(sorted(voice_names, key=str.casefold))
        self.try_result = QLabel(wordWrap=True, textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.try_result.setAccessibleName("What the sentence is said as")
        try_row = QHBoxLayout()
        try_row.addWidget(self.try_field, 1)
        try_row.addWidget(QLabel("as read by"))
        try_row.addWidget(self.try_voice)
        form = QFormLayout()
        try_label = QLabel("&Try:")
        try_label.setBuddy(self.try_field)
        form.addRow(try_label, try_row)
        form.addRow("Said as:", self.try_result)
        self.error_label = QLabel(wordWrap=True)
        self.error_label.setStyleSheet("color: #a4262c;")
        self.error_label.setAccessibleName("Problem with the rules")

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Rules change what is said, not the text: highlighting and subtitles follow the "
                                "text as written."))
        layout.addLayout(rows, 1)
        layout.addLayout(form)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)

        self.table.itemChanged.connect(lambda _: self.update_try())
        self.try_field.textChanged.connect(lambda _: self.update_try())
        self.try_voice.currentIndexChanged.connect(lambda _: self.update_try())
        self.table.currentCellChanged.connect(lambda *_: self._update_buttons())
        self._update_buttons()
        self.update_try()

    # ---- the table ----------------------------------------------------------------------------------
    def _append(self, spec: dict, row: int | None = None) -> int:
        row = self.table.rowCount() if row is None else row
        self.table.blockSignals(True)
        self.table.insertRow(row)
        for column, key in ((ON, "enabled"), (REGEX, "regex"), (CASE, "case_sensitive")):
            item = QTableWidgetItem()
            item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if spec.get(key, key == "enabled") else Qt.CheckState.Unchecked)
            self.table.setItem(row, column, item)
        for column, key in ((FIND, "pattern"), (SAY, "replacement"), (VOICE, "voice")):
            self.table.setItem(row, column, QTableWidgetItem(spec.get(key) or ""))
        self.table.blockSignals(False)
        return row

    def specs(self) -> list[dict]:
        """The rules as the table holds them, as ``Rule`` fields (not yet checked)."""
        checked = lambda row, column: self.table.item(row, column).checkState() == Qt.CheckState.Checked  # noqa: E731
        text = lambda row, column: self.table.item(row, column).text()  # noqa: E731
        return [{"pattern": text(row, FIND), "replacement": text(row, SAY), "regex": checked(row, REGEX),
                 "case_sensitive": checked(row, CASE), "voice": text(row, VOICE).strip() or None,
                 "enabled": checked(row, ON)} for row in range(self.table.rowCount())]

    def lexicon(self) -> Lexicon:
        """The table's rules; ``PronunciationError`` (with the rule's ``index`` and ``field``) for the first that
        cannot be used."""
        return Lexicon.from_specs(self.specs())

    def add_rule(self) -> None:
        current = self.table.currentRow()
        row = self._append({}, current + 1 if current >= 0 else self.table.rowCount())  # below the current rule
        self.table.setCurrentCell(row, FIND)
        self.table.editItem(self.table.item(row, FIND))
        self.update_try()

    def remove_rule(self) -> None:
        row = self.table.currentRow()
        if row < 0:
            return
        self.table.removeRow(row)
        if self.table.rowCount():
            self.table.setCurrentCell(min(row, self.table.rowCount() - 1), max(self.table.currentColumn(), 0))
        self.update_try()

    def move_rule(self, step: int) -> None:
        row, column = self.table.currentRow(), max(self.table.currentColumn(), 0)
        target = row + step
        if row < 0 or not 0 <= target < self.table.rowCount():
            return
        spec = self.specs()[row]
        self.table.removeRow(row)
        self._append(spec, target)
        self.table.setCurrentCell(target, column)
        self.update_try()

    def add_defaults(self) -> None:
        present = {(spec["pattern"], spec["regex"]) for spec in self.specs()}
        for rule in default_lexicon().rules:
            if (rule.pattern, rule.regex) not in present:
                self._append(rule.to_json())
        self.update_try()

    def _update_buttons(self) -> None:
        row, count = self.table.currentRow(), self.table.rowCount()
        self.remove_button.setEnabled(row >= 0)
        self.up_button.setEnabled(row > 0)
        self.down_button.setEnabled(0 <= row < count - 1)

    # ---- trying and saving --------------------------------------------------------------------------
    def update_try(self) -> None:
        self._update_buttons()
        try:
            lexicon = self.lexicon()
        except PronunciationError as e:
            self.error_label.setText(str(e))
            self.try_result.setText("")
            return
        self.error_label.setText("")
        voice = self.try_voice.currentText()
        explained = lexicon.explain(self.try_field.text(), None if voice == ALL_VOICES else voice)
        notes = [f"rule {index + 1} was skipped: {why}" if index >= 0 else why for index, why in explained.skipped]
        self.try_result.setText(explained.spoken + (f"  ({'; '.join(notes)})" if notes else ""))

    def accept(self) -> None:
        try:
            self.lexicon()
        except PronunciationError as e:
            self.error_label.setText(str(e))
            if e.index is not None:
                self.table.setCurrentCell(e.index, _FIELD_COLUMNS.get(e.field, FIND))
            self.table.setFocus()
            return
        super().accept()
