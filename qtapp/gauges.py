"""Live performance gauges: generation speed (×RT dial), time to first audio, buffer fill and underruns.

Four painted cards in a row. Each card shows one value in large type with a caption, and takes a
colour from its state: green when healthy, amber when marginal, red when playback is at risk, grey
while nothing is being read (an empty buffer is no risk then). The underrun card counts from the last
``reset`` (Play), though the player's counter runs for its lifetime. Each card's accessible name is its
caption and its accessible description its value, for screen readers.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QHBoxLayout, QSizePolicy, QWidget

GOOD = QColor("#2ecc71")
FAIR = QColor("#f5a623")
BAD = QColor("#e74c3c")
IDLE = QColor("#7f8c8d")
CARD = QColor("#1f2530")
TRACK = QColor("#343c4a")
TEXT = QColor("#eef1f5")
CAPTION = QColor("#9aa4b2")

RTF_DIAL_MAX = 16.0  # the dial's full scale, ×RT
DIAL_SWEEP_DEG = 240


def rtf_colour(rtf: float) -> QColor:
    """Below 1× playback must stutter; below 1.5× it has little headroom."""
    if rtf <= 0:
        return IDLE
    return BAD if rtf < 1.0 else FAIR if rtf < 1.5 else GOOD


def first_audio_colour(seconds: float) -> QColor:
    if seconds < 0:
        return IDLE
    return GOOD if seconds < 0.3 else FAIR if seconds < 1.0 else BAD


def buffer_colour(seconds: float, playing_ahead_s: float = 1.0) -> QColor:
    return BAD if seconds < playing_ahead_s / 4 else FAIR if seconds < playing_ahead_s else GOOD


def dial_fraction(rtf: float) -> float:
    """Position on the dial: square-root scale so 0.5×-3× (where it matters) gets most of the arc."""
    return min(1.0, math.sqrt(max(rtf, 0.0) / RTF_DIAL_MAX))


class GaugeCard(QWidget):
    """A rounded card with a caption at the top and a large value text."""

    def __init__(self, caption: str, parent: QWidget | None = None, explanation: str = ""):
        super().__init__(parent)
        self.caption = caption
        self.explanation = explanation  # what the figure means, shown in the tooltip above its value
        self.value_text = "–"
        self.colour = IDLE
        self.setMinimumSize(QSize(120, 110))
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setAccessibleName(caption.capitalize())

    def set_display(self, text: str, colour: QColor) -> None:
        self.value_text, self.colour = text, colour
        self.setToolTip(f"{self.caption}: {text}" + (f"\n{self.explanation}" if self.explanation else ""))
        self.setAccessibleDescription(text)
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        card = QRectF(self.rect()).adjusted(3, 3, -3, -3)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(CARD)
        painter.drawRoundedRect(card, 10, 10)
        painter.setPen(CAPTION)
        painter.setFont(_font(11))
        painter.drawText(card.adjusted(10, 6, -10, 0), Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignHCenter,
                         self.caption.upper())
        self.paint_body(painter, card.adjusted(10, 24, -10, -8))
        painter.end()

    def paint_body(self, painter: QPainter, area: QRectF) -> None:
        _draw_value(painter, area, self.value_text, self.colour)


class DialCard(GaugeCard):
    """A value with an arc showing ``fraction`` of full scale."""

    fraction = 0.0

    def set_fraction(self, fraction: float) -> None:
        self.fraction = max(0.0, min(1.0, fraction))
        self.update()

    def paint_body(self, painter: QPainter, area: QRectF) -> None:
        side = min(area.width(), area.height() * 1.15)
        dial = QRectF(0, 0, side, side)
        dial.moveCenter(area.center() + QPointF(0, side * 0.08))
        start_deg = 90 + DIAL_SWEEP_DEG / 2  # Qt angles: counter-clockwise from 3 o'clock
        width = max(4.0, side * 0.08)
        for colour, span in ((TRACK, DIAL_SWEEP_DEG), (self.colour, DIAL_SWEEP_DEG * self.fraction)):
            pen = QPen(colour, width)
            pen.setCapStyle(Qt.PenCapStyle.RoundCap)
            painter.setPen(pen)
            if span > 0:
                painter.drawArc(dial.adjusted(width, width, -width, -width), int(start_deg * 16), int(-span * 16))
        _draw_value(painter, dial, self.value_text, self.colour)


class BarCard(GaugeCard):
    """A value with a horizontal fill bar under it."""

    fraction = 0.0

    def set_fraction(self, fraction: float) -> None:
        self.fraction = max(0.0, min(1.0, fraction))
        self.update()

    def paint_body(self, painter: QPainter, area: QRectF) -> None:
        bar_height = max(6.0, area.height() * 0.14)
        bar = QRectF(area.left(), area.bottom() - bar_height, area.width(), bar_height)
        _draw_value(painter, area.adjusted(0, 0, 0, -bar_height - 4), self.value_text, self.colour)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(TRACK)
        painter.drawRoundedRect(bar, bar_height / 2, bar_height / 2)
        if self.fraction > 0:
            painter.setBrush(self.colour)
            filled = QRectF(bar.left(), bar.top(), max(bar_height, bar.width() * self.fraction), bar_height)
            painter.drawRoundedRect(filled, bar_height / 2, bar_height / 2)


class GaugePanel(QWidget):
    """RTF dial, first-audio time, buffer fill and underrun count, updated by their setters."""

    def __init__(self, parent: QWidget | None = None, buffer_capacity_s: float = 30.0):
        super().__init__(parent)
        self.buffer_capacity_s = buffer_capacity_s
        self.reading = False  # colours of the buffer follow its health only while speech is playing
        self._underruns_total = 0  # the player's lifetime count, as last reported
        self._underruns_base = 0  # that count at the last reset, so the card shows those since Play
        self.setAccessibleName("Performance gauges")
        # "generation", not "speed": the toolbar's reading speed is another figure (how fast speech is played)
        self.rtf_card = DialCard("generation", explanation="Seconds of speech made per second of computing "
                                 "(×RT); above 1× it keeps ahead of playback. Not the reading speed.")
        self.first_audio_card = GaugeCard("first audio")
        self.buffer_card = BarCard("buffer")
        self.underrun_card = GaugeCard("underruns")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        for card in (self.rtf_card, self.first_audio_card, self.buffer_card, self.underrun_card):
            layout.addWidget(card)
        self.reset()

    def reset(self) -> None:
        """Back to the idle look (a new job starts)."""
        self.rtf_card.set_display("–", IDLE)
        self.rtf_card.set_fraction(0.0)
        self.first_audio_card.set_display("–", IDLE)
        self.buffer_card.set_display("0.0 s", IDLE)
        self.buffer_card.set_fraction(0.0)
        self._underruns_base = self._underruns_total
        self.set_underruns(self._underruns_total)

    def set_reading(self, reading: bool) -> None:
        """Whether speech is playing; while not, the buffer card stays grey whatever it holds."""
        self.reading = reading
        if not reading:
            self.buffer_card.set_display(self.buffer_card.value_text, IDLE)

    def set_rtf(self, rtf: float) -> None:
        self.rtf_card.set_display(f"{rtf:.1f}×" if rtf < 100 else f"{rtf:.0f}×", rtf_colour(rtf))
        self.rtf_card.set_fraction(dial_fraction(rtf))

    def set_first_audio(self, seconds: float) -> None:
        text = f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"
        self.first_audio_card.set_display(text, first_audio_colour(seconds))

    def set_buffer(self, seconds: float) -> None:
        self.buffer_card.set_display(f"{seconds:.1f} s", buffer_colour(seconds) if self.reading else IDLE)
        self.buffer_card.set_fraction(seconds / self.buffer_capacity_s)

    def set_underruns(self, total: int) -> None:
        """``total`` is the player's count over its lifetime; the card shows those since the last reset."""
        self._underruns_total = total
        count = max(total - self._underruns_base, 0)
        self.underrun_card.set_display(str(count), GOOD if count == 0 else BAD)


def _font(pixel_size: float, bold: bool = False) -> QFont:
    font = QFont()
    font.setPixelSize(max(1, int(pixel_size)))
    font.setBold(bold)
    return font


def _draw_value(painter: QPainter, area: QRectF, text: str, colour: QColor) -> None:
    """Large centred value text, scaled to the space available."""
    painter.setPen(TEXT if colour == IDLE else colour)
    painter.setFont(_font(max(11.0, min(area.height() * 0.3, area.width() * 0.2)), bold=True))
    painter.drawText(area, Qt.AlignmentFlag.AlignCenter, text)
