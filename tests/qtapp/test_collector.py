"""Garbage collection on the GUI thread (qtapp/collector.py): cycles made on the speech worker's thread are freed on
the GUI thread, and the full collection after a model loads is queued there."""

from __future__ import annotations

import gc
import threading

import pytest
from PySide6.QtCore import QObject, QThread, Signal, Slot

from qtapp.collector import GuiThreadCollector, settle_heap_on_gui_thread
from qtapp.worker import start_worker, stop_worker
from tests.qtapp.fake_engine import FakeEngine


class Cycle:
    """Refers to itself, so only the cyclic collector frees it; records the thread that did."""

    freed_on: list[int] = []

    def __init__(self):
        self.me = self

    def __del__(self):
        Cycle.freed_on.append(threading.get_ident())


@pytest.fixture
def small_thresholds():
    """Generation 0 collected after 50 allocations, so that a test makes a pass due quickly."""
    before = gc.get_threshold()
    gc.set_threshold(50, *before[1:])
    yield
    gc.set_threshold(*before)


def test_cycles_made_on_another_thread_are_freed_on_the_gui_thread(qtbot, small_thresholds):
    Cycle.freed_on.clear()
    collector = GuiThreadCollector(interval_ms=20)
    try:
        assert not gc.isenabled()  # no thread can start a collection on its own

        def make_garbage():
            for _ in range(200):  # past the threshold several times over
                Cycle()

        worker = threading.Thread(target=make_garbage)
        worker.start()
        worker.join()
        assert Cycle.freed_on == []  # nothing was collected on the worker's thread
        qtbot.waitUntil(lambda: len(Cycle.freed_on) >= 200, timeout=5000)
        assert len(Cycle.freed_on) == 200, len(Cycle.freed_on)
        assert set(Cycle.freed_on) == {threading.get_ident()}
    finally:
        collector.stop()
    assert gc.isenabled()


def test_each_pass_runs_the_oldest_generation_python_would_have_run(small_thresholds):
    generations: list[int] = []

    def record(phase, info):
        if phase == "start":
            generations.append(info["generation"])

    collector = GuiThreadCollector(interval_ms=60_000)
    gc.set_threshold(50, 1, 1000)  # generation 1 is due after two young passes
    gc.callbacks.append(record)
    try:
        gc.collect()
        garbage = [Cycle() for _ in range(100)]
        del garbage
        assert collector.collect() >= 100  # the young generation was due: its cycles are freed
        collector.collect()
        collector.collect()
        assert generations[-3:] == [0, 0, 1]  # the third pass finds generation 1 over its threshold
    finally:
        gc.callbacks.remove(record)
        collector.stop()


def test_stop_leaves_collection_off_when_it_was_off_before():
    gc.disable()
    try:
        collector = GuiThreadCollector()
        collector.stop()
        assert not gc.isenabled()
    finally:
        gc.enable()


class Loader(QObject):
    go = Signal()

    def __init__(self, ran_on: list[int]):
        super().__init__()
        self.ran_on = ran_on

    @Slot()
    def load(self):
        settle_heap_on_gui_thread(lambda: self.ran_on.append(threading.get_ident()))


def test_the_settling_collection_of_a_model_loaded_on_a_qthread_runs_on_the_gui_thread(qtbot):
    ran_on: list[int] = []
    thread, loader = QThread(), Loader(ran_on)
    loader.moveToThread(thread)
    thread.start()
    try:
        loader.go.connect(loader.load)
        loader.go.emit()
        qtbot.waitUntil(lambda: bool(ran_on), timeout=5000)
        assert ran_on == [threading.get_ident()]
    finally:
        thread.quit()
        assert thread.wait(5000)


def test_the_speech_worker_settles_its_heap_on_the_gui_thread(qtbot, monkeypatch):
    settled_on: list[int] = []
    monkeypatch.setattr("qtapp.collector.settle_heap", lambda: settled_on.append(threading.get_ident()))
    thread, worker = start_worker(FakeEngine)
    try:
        qtbot.waitUntil(lambda: bool(settled_on), timeout=5000)
        assert settled_on == [threading.get_ident()]
    finally:
        assert stop_worker(thread, worker)
