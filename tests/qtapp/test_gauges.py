"""The gauge panel shows each value with a colour that reflects its health."""

from __future__ import annotations

import pytest

from qtapp.gauges import BAD, FAIR, GOOD, IDLE, GaugePanel, dial_fraction


@pytest.fixture
def panel(qtbot):
    widget = GaugePanel(buffer_capacity_s=20.0)
    qtbot.addWidget(widget)
    widget.resize(640, 150)
    return widget


@pytest.mark.parametrize("rtf, text, colour", [(0.7, "0.7×", BAD), (1.2, "1.2×", FAIR), (4.25, "4.2×", GOOD)])
def test_rtf_text_colour_and_dial(panel, rtf, text, colour):
    panel.set_rtf(rtf)
    assert panel.rtf_card.value_text == text
    assert panel.rtf_card.colour == colour
    assert panel.rtf_card.fraction == pytest.approx(dial_fraction(rtf))


def test_dial_scale_is_monotonic_and_clamped():
    values = [dial_fraction(x) for x in (0, 0.5, 1, 2, 4, 8, 16, 100)]
    assert values == sorted(values)
    assert values[0] == 0 and values[-1] == 1


def test_first_audio_in_milliseconds_or_seconds(panel):
    panel.set_first_audio(0.143)
    assert (panel.first_audio_card.value_text, panel.first_audio_card.colour) == ("143 ms", GOOD)
    panel.set_first_audio(2.5)
    assert (panel.first_audio_card.value_text, panel.first_audio_card.colour) == ("2.50 s", BAD)


def test_buffer_fill_and_underruns(panel):
    panel.set_reading(True)
    panel.set_buffer(5.0)
    assert panel.buffer_card.value_text == "5.0 s"
    assert panel.buffer_card.fraction == pytest.approx(0.25)
    panel.set_buffer(0.1)
    assert panel.buffer_card.colour == BAD
    panel.set_underruns(3)
    assert (panel.underrun_card.value_text, panel.underrun_card.colour) == ("3", BAD)
    panel.reset()
    assert panel.underrun_card.value_text == "0"
    assert panel.rtf_card.colour == IDLE


def test_the_dial_paints_in_its_state_colour(panel):
    panel.set_rtf(0.5)
    red = panel.rtf_card.grab().toImage()
    panel.set_rtf(8.0)
    green = panel.rtf_card.grab().toImage()

    def count(image, colour):
        return sum(image.pixelColor(x, y) == colour for x in range(0, image.width(), 2)
                   for y in range(0, image.height(), 2))

    assert count(red, BAD) > 20 and count(red, GOOD) == 0
    assert count(green, GOOD) > count(red, BAD)  # a fuller arc


def test_underruns_count_from_play_though_the_player_counts_for_its_lifetime(panel):
    panel.set_underruns(4)  # the player's total after an earlier reading
    panel.reset()  # Play
    assert panel.underrun_card.value_text == "0" and panel.underrun_card.colour == GOOD
    panel.set_underruns(6)
    assert (panel.underrun_card.value_text, panel.underrun_card.colour) == ("2", BAD)


def test_an_empty_buffer_is_neutral_while_idle_and_red_while_reading(panel):
    panel.set_buffer(0.0)
    assert panel.buffer_card.colour == IDLE
    panel.set_reading(True)
    panel.set_buffer(0.0)
    assert panel.buffer_card.colour == BAD
    panel.set_reading(False)  # stopped: the last level stays, no longer an alarm
    assert panel.buffer_card.colour == IDLE and panel.buffer_card.value_text == "0.0 s"


def test_gauges_have_accessible_names_and_values(panel):
    assert panel.accessibleName() == "Performance gauges"
    assert [c.accessibleName() for c in (panel.rtf_card, panel.first_audio_card, panel.buffer_card,
                                         panel.underrun_card)] == ["Generation", "First audio", "Buffer", "Underruns"]
    panel.set_first_audio(0.143)
    assert panel.first_audio_card.accessibleDescription() == "143 ms"


def test_the_generation_dial_says_it_is_not_the_reading_speed(panel):
    panel.set_rtf(2.0)
    assert "×RT" in panel.rtf_card.toolTip() and "Not the reading speed" in panel.rtf_card.toolTip()
