"""The coloured strip above the editor for errors the user must see: closable, never modal.

``Banner.show_message`` keeps the last three messages on screen and never says one sentence twice;
``Banner.forget`` takes away those that no longer hold (a model that failed to load and then loaded).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QStyle, QToolButton, QWidget


class Banner(QWidget):
    """A coloured strip above the editor for errors the user must see (closable, never modal)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("banner")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setStyleSheet("#banner { background: #fdecea; border-bottom: 1px solid #f5c2c0; }"
                           "QLabel { color: #611a15; }")
        self.label = QLabel(wordWrap=True, textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        icon = QLabel()
        icon.setPixmap(self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning).pixmap(20, 20))
        close = QToolButton(icon=self.style().standardIcon(QStyle.StandardPixmap.SP_TitleBarCloseButton),
                            autoRaise=True, toolTip="Dismiss")
        close.clicked.connect(self.hide)
        self.messages: list[str] = []
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 6, 6)
        layout.addWidget(icon)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.hide()

    def show_message(self, text: str) -> None:
        """Show ``text``; messages still on screen stay above it (the last three). A message that repeats one on
        screen replaces it, so no sentence is said twice: a failure and a later message quoting it show as one."""
        shown = self.messages if not self.isHidden() else []
        if any(text in m for m in shown):  # already said, alone or inside a longer message
            self.show()
            return
        self.messages = [m for m in shown if m not in text][-2:] + [text]
        self.label.setText("\n".join(self.messages))
        self.show()

    def forget(self, said: str) -> None:
        """Take away every message that says ``said`` (it no longer holds); hide the banner once none is left."""
        self.messages = [m for m in self.messages if said not in m]
        self.label.setText("\n".join(self.messages))
        if not self.messages:
            self.hide()
