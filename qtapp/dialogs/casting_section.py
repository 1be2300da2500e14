"""The Export dialog's casting and loudness: the voice of quoted dialogue, the characters' voices
(``engine.production.casting``: "Elizabeth=Vivian, Mr. Darcy=Ryan", as ``orator export --cast`` takes them) and the
loudness
target (``engine.production.loudness`` presets, or the levels as spoken)."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QLabel, QLineEdit, QWidget

from engine.errors import UnsupportedError
from engine.production.casting import parse_cast

NARRATOR = "The narrator's voice"
LOUDNESS_CHOICES = {
    "": "As spoken",
    "audiobook": "Audiobook (ACX: RMS −23 to −18 dB, peaks under −3 dB, room tone)",
    "podcast": "Podcast and web (−16 LUFS)",
    "broadcast": "Broadcast (−23 LUFS, EBU R128)",
}


def loudness_box() -> QComboBox:
    box = QComboBox()
    box.setAccessibleName("Loudness")
    box.setToolTip("The loudness of the files: one gain for the whole export. The levels reached are shown in the "
                   "queue when it is done.")
    for key, label in LOUDNESS_CHOICES.items():
        box.addItem(label, key)
    return box


class CastingSection(QGroupBox):
    """``dialogue_voice()`` and ``cast()`` as a job keeps them; ``problem()`` says why the cast cannot be used."""

    def __init__(self, voices: list[str], parent: QWidget | None = None, title: str = "Casting"):
        super().__init__(title, parent)
        self.setAccessibleName("Casting")
        self.dialogue = QComboBox(editable=True)
        self.dialogue.setAccessibleName("Voice for quoted dialogue")
        self.dialogue.addItems([NARRATOR, *voices])
        self.characters = QLineEdit(placeholderText="e.g. Elizabeth=Vivian, Mr. Darcy=Ryan")
        self.characters.setAccessibleName("Characters and their voices")
        self.characters.setToolTip("Quotations the text gives to a character (\"…,\" said Elizabeth) are spoken in "
                                   "that character's voice; others in the dialogue voice.")
        self.characters.setMaxLength(20_000)
        self.error_label = QLabel(wordWrap=True)  # why the characters do not read, as they are typed
        self.error_label.setStyleSheet("color: #a12622;")
        self.error_label.hide()
        form = QFormLayout(self)
        for text, field in (("Dialo&gue voice:", self.dialogue), ("C&haracters:", self.characters)):
            label = QLabel(text)
            label.setBuddy(field)
            form.addRow(label, field)
        form.addRow(self.error_label)
        self.characters.textChanged.connect(self._show_problem)

    def set_cast(self, dialogue_voice: str, characters: str) -> None:
        """Show a cast kept as text (the studio's settings)."""
        self.dialogue.setCurrentText(dialogue_voice or NARRATOR)
        self.characters.setText(characters)

    def dialogue_voice(self) -> str:
        name = " ".join(self.dialogue.currentText().split())
        return "" if name == NARRATOR else name

    def cast(self) -> list[list[str]]:
        """[character, voice] pairs; ``UnsupportedError`` when the field does not read (``problem`` says why)."""
        text = self.characters.text()
        return [list(pair) for pair in parse_cast(text)] if text.strip() else []

    def problem(self) -> str | None:
        try:
            self.cast()
        except UnsupportedError as e:
            return f"Characters: {e}."
        return None

    def _show_problem(self) -> None:
        problem = self.problem()
        self.error_label.setText(problem or "")
        self.error_label.setVisible(problem is not None)
