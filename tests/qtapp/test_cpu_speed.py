"""What a user without a GPU is told about speed: the first-run dialog measures this processor per model size
and says which keeps up; Settings shows the path in use and the figures."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from engine.core.cpu import speed_probe as cpu_probe
from qtapp.cpu_speed import SpeedProbe, speed_advice
from qtapp.dialogs.first_run import FirstRunDialog
from qtapp.dialogs.settings_dialog import SettingsDialog, speed_summary
from qtapp.gpu_check import GpuAdvice
from qtapp.settings import Settings

CPU = GpuAdvice("cpu", True, "This PyTorch has no CUDA support: Orator runs on the processor.", "", None)
GPU = GpuAdvice("cuda", True, "Ready on the graphics card.", "", None)


def fixed(rates):
    """A measurement giving ``rates[size]`` × real time (80 ms of audio a frame)."""
    return lambda size, threads=None: cpu_probe.CpuSpeed(size, 80.0 / rates[size], 0.0, 2)


@pytest.mark.parametrize(("rates", "says"), [
    ({"0.6b": 2.5, "1.7b": 1.3}, "Every model keeps up here."),
    ({"0.6b": 1.4, "1.7b": 0.6}, "Choose the 0.6B models"),
    ({"0.6b": 0.5, "1.7b": 0.3}, "Reading aloud will pause between sentences"),
])
def test_the_advice_follows_the_measured_speeds(rates, says):
    text = speed_advice(rates)
    assert says in text
    assert f"the 0.6B model {rates['0.6b']:.2f}× real time" in text and f"{rates['1.7b']:.2f}×" in text


@pytest.mark.parametrize(("rates", "says", "never"), [
    ({"0.6b": 0.996, "1.7b": 0.5}, "Choose the 0.6B models", "will pause"),  # shown as 1.00×: it keeps up as shown
    ({"0.6b": 0.07, "1.7b": 0.35}, "with either model size", "faster 0.6B"),  # no size is called the faster
    ({"0.6b": 0.95, "1.7b": 1.02}, "Choose the 1.7B models", "Every model"),  # a loaded machine's noise
    ({"0.6b": 1.3}, "The 0.6B models keep up here.", "1.7B ones cannot"),  # the 1.7B not measured (yet)
])
def test_the_advice_never_contradicts_the_figures_it_shows(rates, says, never):
    text = speed_advice(rates)
    assert says in text and never not in text
    for size, rate in rates.items():
        assert f"the {size.upper()} model {rate:.2f}× real time" in text


def test_the_second_size_is_measured_at_the_count_the_first_found_faster(qtbot):
    asked = []

    def measure(size, threads=None):
        asked.append((size, threads))
        return cpu_probe.CpuSpeed(size, 80.0, 0.0, 3 if size == "0.6b" else 7)

    probe = SpeedProbe(measure)
    with qtbot.waitSignal(probe.finished, timeout=10_000):
        probe.start()
    probe.stop(wait_s=5)
    assert asked == [("0.6b", None), ("1.7b", 3)]


def test_the_first_run_dialog_measures_a_processor_and_keeps_the_figures(qtbot):
    settings = Settings()
    dialog = FirstRunDialog(settings, advice=CPU, measure_speed=fixed({"0.6b": 1.4, "1.7b": 0.6}))
    qtbot.addWidget(dialog)
    assert dialog.speed_label.isVisibleTo(dialog)
    qtbot.waitUntil(lambda: "1.7B model 0.60×" in dialog.speed_label.text(), timeout=10_000)
    assert "Choose the 0.6B models" in dialog.speed_label.text()
    assert json.loads(settings.path.read_text())["cpu_speed"] == pytest.approx({"0.6b": 1.4, "1.7b": 0.6})
    assert Settings.load().cpu_speed == pytest.approx({"0.6b": 1.4, "1.7b": 0.6})
    dialog.done(0)


def test_with_a_gpu_nothing_is_measured(qtbot):
    calls = []
    dialog = FirstRunDialog(Settings(), advice=GPU, measure_speed=lambda size, threads=None: calls.append(size))
    qtbot.addWidget(dialog)
    qtbot.wait(100)
    assert not dialog.speed_label.isVisibleTo(dialog) and calls == []
    dialog.done(0)


def test_a_failed_measurement_is_said_and_the_dialog_works(qtbot):
    def broken(size, threads=None):
        raise MemoryError("no room")

    dialog = FirstRunDialog(Settings(), advice=CPU, measure_speed=broken)
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: "could not be measured" in dialog.speed_label.text(), timeout=10_000)
    assert "MemoryError" in dialog.speed_label.text()
    assert dialog.start_button.isEnabled()
    dialog.done(0)


def test_closing_during_a_measurement_stops_its_thread_after_that_size(qtbot):
    import threading

    release = threading.Event()

    def slow(size, threads=None):
        release.wait(5)
        return cpu_probe.CpuSpeed(size, 80.0, 0.0, 1)

    dialog = FirstRunDialog(Settings(), advice=CPU, measure_speed=slow)
    qtbot.addWidget(dialog)
    probe = dialog._probe
    dialog.done(0)  # returns at once: the thread is asked to stop after the size it measures
    release.set()
    probe.thread.join(5)
    assert not probe.thread.is_alive()


def test_the_real_measurement_runs_on_its_thread(qtbot, monkeypatch):
    """The studio's own probe (engine.core.cpu.speed_probe, not the tests' fixed figure) on the 0.6B shapes only."""
    monkeypatch.undo()
    got = []
    probe = SpeedProbe(lambda size, threads: cpu_probe.measure_cpu_speed(size, frames=1, threads=threads),
                       sizes=("0.6b",))
    probe.measured.connect(lambda size, xrt, plan: got.append((size, xrt, plan)))
    with qtbot.waitSignal(probe.finished, timeout=300_000):  # a hang detector: a busy machine measures slowly
        probe.start()
    probe.stop(wait_s=5)
    assert len(got) == 1 and got[0][0] == "0.6b" and got[0][1] > 0 and got[0][2].startswith("fast: ")


def test_the_advice_names_the_plan_measured_and_follows_the_figures_shown(qtbot):
    plan = "fast: torch-int8 while the compiled steps are prepared"
    measure = fixed({"0.6b": 1.2, "1.7b": 0.5})
    dialog = FirstRunDialog(Settings(), advice=CPU,
                            measure_speed=lambda size, threads=None: replace(measure(size), plan=plan))
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: "1.7B model 0.50×" in dialog.speed_label.text(), timeout=10_000)
    text = dialog.speed_label.text()
    assert f"Measured on this processor ({plan}): the 0.6B model 1.20× real time" in text
    assert "Choose the 0.6B models" in text  # 1.20 keeps up, 0.50 does not: the advice is the figures'
    dialog.done(0)


def test_settings_show_the_path_in_use_and_the_measured_speeds(qtbot):
    settings = Settings()
    settings.cpu_speed = {"0.6b": 0.47, "1.7b": 0.25}
    dialog = SettingsDialog(settings, in_use="CustomVoice 0.6B on cpu (int8 weights, 7 threads)")
    qtbot.addWidget(dialog)
    text = dialog.speed_label.text()
    assert "In use: CustomVoice 0.6B on cpu (int8 weights, 7 threads)." in text
    assert "0.6B 0.47×, 1.7B 0.25× real time" in text
    assert speed_summary({}, "") == "No model is loaded yet."


@pytest.mark.parametrize("stored", [{"0.6b": "fast"}, {"9b": 1.0}, {"0.6b": -1}, {"0.6b": float("inf")}, [1, 2],
                                    {"0.6b": True}, "x"])
def test_hostile_stored_speeds_are_dropped(stored):
    settings = Settings()
    settings.path.parent.mkdir(parents=True, exist_ok=True)
    settings.path.write_text(json.dumps({"cpu_speed": stored, "font_size": 15}))
    loaded = Settings.load()
    assert loaded.cpu_speed == {} and loaded.font_size == 15


def test_the_dialog_grows_to_show_the_advice_whole(qtbot):
    """The advice arrives after the dialog is shown and wraps over several lines: the dialog grows to fit it, so
    no label is squashed (the layout's size hints update an event later than the text)."""
    from tests.qtapp.test_first_run import overlapping_or_squashed

    dialog = FirstRunDialog(Settings(), advice=CPU, measure_speed=fixed({"0.6b": 0.5, "1.7b": 0.3}))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(lambda: "Reading aloud will pause" in dialog.speed_label.text(), timeout=10_000)
    qtbot.wait(50)
    assert overlapping_or_squashed(dialog) == []
    dialog.done(0)


def test_the_processor_precision_is_fast_or_exact_and_choosing_it_reloads_the_model(qtbot):
    settings = Settings()
    dialog = SettingsDialog(settings, in_use="")
    qtbot.addWidget(dialog)
    paths = [dialog.cpu_path.itemData(i) for i in range(dialog.cpu_path.count())]
    assert paths == ["fast", "exact"]  # int4 ("small") is gone: a saved one loads as fast (test_settings)
    dialog.cpu_path.setCurrentIndex(paths.index("exact"))
    assert dialog.apply() and settings.cpu_path == "exact"
    assert settings.model_spec("preset").cpu_path == "exact"
    assert not dialog.apply()  # nothing changed since


def test_settings_show_the_loaded_engines_execution_plan_read_only(qtbot, tiny_engine):
    from PySide6.QtCore import Qt

    plan = tiny_engine("custom_voice").execution_plan
    dialog = SettingsDialog(Settings(), in_use="", plan=plan.summary())
    qtbot.addWidget(dialog)
    assert dialog.plan_label.text() == plan.summary() and f": {plan.path} (" in dialog.plan_label.text()
    assert not dialog.plan_label.textInteractionFlags() & Qt.TextInteractionFlag.TextEditable
    assert SettingsDialog(Settings()).plan_label.text() == "Chosen when a model loads."
