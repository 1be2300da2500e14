"""The main window's status bar: messages in a space of their own, left of the permanent widgets.

QStatusBar paints a temporary message under the area its permanent widgets (word count, model) leave, cut off
mid-letter where the first of them starts, so a long message runs into the word count. ``StatusBar`` shows
its messages in an ``ElidedLabel`` laid out beside the permanent widgets instead: a message too long for the
space ends in "…" with a gap before the word count, and the whole message is the label's tooltip.
``showMessage``, ``currentMessage`` and ``clearMessage`` keep QStatusBar's meaning for Python callers.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QLabel, QSizePolicy, QStatusBar, QWidget

GAP_PX = 12  # between the end of a message and the first permanent widget


class ElidedLabel(QLabel):
    """One line of text that ends in "…" where it does not fit, instead of asking for more room."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setContentsMargins(4, 0, GAP_PX, 0)

    def shown_text(self) -> str:
        """The text as it is drawn in the label's width now."""
        width = self.contentsRect().width()
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, max(width, 0))

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.drawText(self.contentsRect(), Qt.AlignmentFlag.AlignLeading | Qt.AlignmentFlag.AlignVCenter,
                         self.shown_text())


class StatusBar(QStatusBar):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.message_label = ElidedLabel()
        self.message_label.setAccessibleName("Status")
        self.addWidget(self.message_label, 1)
        self._timer = QTimer(self, singleShot=True)
        self._timer.timeout.connect(self.clearMessage)

    def showMessage(self, text: str, timeout: int = 0) -> None:  # noqa: N802 - QStatusBar's name
        """Show ``text`` for ``timeout`` ms (0: until the next message)."""
        self.message_label.setText(text)
        self.message_label.setToolTip(text)
        self._timer.stop()
        if timeout > 0:
            self._timer.start(timeout)
        self.messageChanged.emit(text)

    def currentMessage(self) -> str:  # noqa: N802
        return self.message_label.text()

    def clearMessage(self) -> None:  # noqa: N802
        self._timer.stop()
        if self.message_label.text():
            self.message_label.clear()
            self.message_label.setToolTip("")
            self.messageChanged.emit("")
