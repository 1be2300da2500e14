"""The many-streams benchmark on a tiny checkpoint (CPU): it runs, and its figures add up."""

from __future__ import annotations

import json

import pytest

from bench.clients import ClientProcess
from bench.run_batch import ALLOCATOR_COUNTERS, WARM_FRAMES, allocator_during, main, percentile


def test_percentile_interpolates():
    assert percentile([5.0], 95) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 50) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)
    with pytest.raises(ValueError):
        percentile([], 50)


def test_allocator_during_gives_each_counters_increase_and_what_is_reserved_after():
    before = {**dict.fromkeys(ALLOCATOR_COUNTERS, 3), "reserved_bytes": 2**30}
    after = {"num_alloc_retries": 4, "num_ooms": 3, "num_device_alloc": 10, "num_device_free": 5,
             "reserved_bytes": 5 * 2**29}
    assert allocator_during(before, after) == {"num_alloc_retries": 1, "num_ooms": 0, "num_device_alloc": 7,
                                               "num_device_free": 2, "reserved_gib_after": 2.5}
    assert allocator_during({}, {}) == {}  # off CUDA


def test_the_warm_up_runs_a_full_batch_of_short_requests(tiny_model_dir, monkeypatch):
    """Before any measured run, as many requests as the streams have slots, at once, each of ``WARM_FRAMES``
    frames: a first frame and two loop iterations."""
    import bench.run_batch

    bursts = []
    run = bench.run_batch.concurrently
    monkeypatch.setattr(bench.run_batch, "concurrently", lambda n, request: bursts.append(n) or run(n, request))
    requested = []
    make = bench.run_batch.engine_requests
    monkeypatch.setattr(bench.run_batch, "engine_requests", lambda streams, frames: requested.append(frames)
                        or make(streams, frames))
    _, streams = bench.run_batch.warm_streams(str(tiny_model_dir("custom_voice")), "cpu", 3)
    assert streams.slots == 3 and bursts == [3] and requested == [WARM_FRAMES] and WARM_FRAMES == 17


def test_serving_stops_its_server_and_ends_its_thread(tiny_model_dir):
    """When the block ends the server no longer answers and the thread that ran it has ended (with uvloop, a
    server thread still running while the interpreter exited crashed it)."""
    import threading

    import httpx

    from bench.run_batch import serving, warm_streams

    engine, streams = warm_streams(str(tiny_model_dir("custom_voice")), "cpu", 2)
    before = set(threading.enumerate())
    with serving(engine, streams) as (url, backend):
        assert httpx.get(f"{url}/health").json()["model_loaded"] and backend.streams is streams
        server_threads = [t for t in set(threading.enumerate()) - before if t.name.endswith("(run)")]
    assert len(server_threads) == 1 and not server_threads[0].is_alive()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/health")


def test_engine_and_http_paths_report_every_concurrency_level(tiny_model_dir, tmp_path, monkeypatch):
    """Every level through the engine and through the server; the HTTP requests (the warm-up's too) come
    from one client process of their own, which ends cleanly."""
    import os

    import bench.run_batch

    started, runs = [], []

    class Spied(ClientProcess):
        def __init__(self, *args):
            super().__init__(*args)
            started.append(self)

        def run(self, n, frames, spacing_s=0.0):
            runs.append((n, frames))
            return super().run(n, frames, spacing_s)

    monkeypatch.setattr(bench.run_batch, "ClientProcess", Spied)
    out = tmp_path / "batch.jsonl"
    main(["--model", str(tiny_model_dir("custom_voice")), "--streams", "1", "3", "--frames", "4", "--device", "cpu",
          "--http", "--out", str(out)])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["path"], r["streams"]) for r in rows] == [("engine", 1), ("engine", 3), ("http", 1), ("http", 3)]
    assert [r["clients"] for r in rows] == ["in process"] * 2 + ["separate process"] * 2
    assert len(started) == 1 and started[0].proc.pid != os.getpid() and started[0].proc.returncode == 0
    assert runs == [(3, WARM_FRAMES), (1, 4), (3, 4)]  # the warm-up as wide as the widest run, then each level
    for r in rows:
        assert r["decoder_dtype"] == "float32" and r["allocator"] == {}  # the allocator's counters: CUDA only
        assert all(gen["passes"] > 0 for gen in r["collector"].values())
        assert len(r["ttfa_ms"]) == r["streams"] and 0 < r["ttfa_p50_ms"] <= r["ttfa_p95_ms"]
        assert r["audio_s_per_s"] == pytest.approx(r["streams"] * r["frames"] / 12.5 / r["wall_s"])
    for r in rows:  # where the warm-up's time went: every batch size's step and decodes, adding up to it
        tasks = r["warmup_tasks_s"]
        pieces = [f"the {b}-stream {what}" for b in (1, 2, 3) for what in ("frame step", "decodes")]
        assert set(pieces) <= set(tasks)
        assert sum(tasks.values()) == pytest.approx(r["warmup_s"], abs=0.05 + 0.01 * len(tasks))
    for r in rows[:2]:
        assert r["server_wall_s"] is None and r["arrival_spread_ms"] is None and r["arrivals_ms"] is None
    for r in rows[2:]:  # the server's side lies within the clients' wall
        assert 0 < r["server_wall_s"] < r["wall_s"] and 0 <= r["arrival_spread_ms"] < 1000 * r["server_wall_s"]
        assert r["switch_interval_ms"] == 5.0  # the interpreter's default, left as it is
        # each request is sent, handed to the scheduler, then begun by the engine: each stage's median and last
        # come no earlier than the one before, and the first send is the origin
        stages = r["arrivals_ms"]
        assert set(stages) == {"sent", "submitted", "engine"}
        for key in ("p50", "last"):
            assert 0 <= stages["sent"][key] <= stages["submitted"][key] <= stages["engine"][key] < 1000 * r["wall_s"]
        assert stages["engine"]["last"] - stages["engine"]["p50"] <= r["arrival_spread_ms"]
    assert rows[2]["arrival_spread_ms"] == 0  # one request
    assert rows[2]["arrivals_ms"]["sent"] == {"p50": 0, "last": 0}


def test_http_rows_repeat_for_each_switch_interval_and_the_interval_is_restored(tiny_model_dir, tmp_path):
    import sys

    out = tmp_path / "batch.jsonl"
    before = sys.getswitchinterval()
    main(["--model", str(tiny_model_dir("custom_voice")), "--streams", "2", "--frames", "3", "--device", "cpu",
          "--http", "--switch-interval-ms", "5", "0.5", "--out", str(out)])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["path"], r["switch_interval_ms"]) for r in rows] == [("engine", None), ("http", 5.0), ("http", 0.5)]
    assert sys.getswitchinterval() == before


def test_http_clients_can_be_shared_among_processes_one_count_after_another(tiny_model_dir, tmp_path):
    out = tmp_path / "batch.jsonl"
    main(["--model", str(tiny_model_dir("custom_voice")), "--streams", "3", "2", "--frames", "4", "--device", "cpu",
          "--http", "--client-processes", "2", "1", "--out", str(out)])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["path"], r["streams"], r["clients"]) for r in rows] == [
        ("engine", 3, "in process"), ("engine", 2, "in process"), ("http", 3, "2 processes"),
        ("http", 2, "2 processes"), ("http", 3, "separate process"), ("http", 2, "separate process")]
    for r in rows[2:]:
        assert len(r["ttfa_ms"]) == r["streams"] and 0 < r["server_wall_s"] < r["wall_s"]


def test_a_bfloat16_decoder_is_used_and_recorded(tiny_model_dir, capsys, monkeypatch):
    """``--decoder-dtype bfloat16``: the engine's decoder loads in bf16, and each printed row says so."""
    import torch

    from engine import Engine

    loaded = []
    load = Engine.from_pretrained
    monkeypatch.setattr(Engine, "from_pretrained", lambda *a, **kw: loaded.append(load(*a, **kw)) or loaded[-1])
    main(["--model", str(tiny_model_dir("custom_voice")), "--streams", "2", "--frames", "4", "--device", "cpu",
          "--decoder-dtype", "bfloat16"])
    assert loaded[0].decoder.pre_conv.conv.weight.dtype == torch.bfloat16
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["path"], r["streams"], r["decoder_dtype"]) for r in rows] == [("engine", 2, "bfloat16")]


def test_the_warmup_clock_gives_each_piece_the_time_until_the_next_one_starts(monkeypatch):
    import bench.run_batch

    ticks = iter([10.0, 10.5, 12.0, 12.25])
    monkeypatch.setattr(bench.run_batch.time, "perf_counter", lambda: next(ticks))
    clock = bench.run_batch.WarmupClock()
    clock(0, 3, "the 1-stream frame step")
    clock(1, 3, "the 2-stream frame step")
    clock(2, 3, "the 1-stream decodes")
    clock(3, 3, "done")
    assert clock.tasks == {"the 1-stream frame step": 0.5, "the 2-stream frame step": 1.5, "the 1-stream decodes": 0.25}


def test_collector_pauses_counts_each_generations_passes_and_their_pauses():
    import gc

    from bench.run_batch import collector_pauses

    with collector_pauses() as found:
        gc.collect(0)
        gc.collect(2)
        gc.collect(2)
    assert found["gen0"]["passes"] >= 1 and found["gen2"]["passes"] >= 2
    for gen in found.values():
        assert 0 <= gen["longest_ms"] <= gen["total_ms"]
    passes = found["gen2"]["passes"]
    gc.collect(2)
    assert found["gen2"]["passes"] == passes  # closed: it watches no more
