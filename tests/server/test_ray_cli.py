"""``python main.py serve --ray-replicas``: its flags refused clearly (exit 2, one line, no traceback), Ray's absence
said with how to install it, and the Ray Serve options the flags turn into (no Ray started here)."""

from __future__ import annotations

import sys

import pytest

from main import main


def _serve(*flags: str) -> list[str]:
    return ["serve", "--model", "unused", *flags]


@pytest.mark.parametrize("value, message", [
    ("0", "0 replicas: at least 1 is needed"),
    ("-3", "-3 replicas: at least 1 is needed"),
    ("two", "'two' is not a number of replicas"),
    ("1.5", "'1.5' is not a number of replicas"),
    ("", "'' is not a number of replicas"),
    ("9" * 40 + "x", "is not a number of replicas"),
])
def test_bad_replica_counts_are_refused_by_the_parser(value, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(_serve(f"--ray-replicas={value}"))
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize("flags, message", [
    (["--ray-replicas", "auto"], "--ray-replicas auto needs --ray-max-replicas"),
    (["--ray-replicas", "3", "--ray-max-replicas", "2"], "--ray-max-replicas 2 is below --ray-replicas 3"),
    (["--ray-replicas", "2", "--ray-max-replicas", "auto"], "--ray-max-replicas needs a number"),
    (["--ray-max-replicas", "4"], "need --ray-replicas"),
    (["--ray-address", "auto"], "need --ray-replicas"),
    (["--ray-replicas", "2", "--batch", "0"], "--batch must be at least 1"),
])
def test_flags_that_do_not_fit_together_are_refused(flags, message, capsys):
    assert main(_serve(*flags)) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("missing", ["ray", "ray.serve"])
def test_without_ray_the_error_says_how_to_install_it(missing, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, missing, None)  # import ray / from ray import serve now fail
    assert main(_serve("--ray-replicas", "2")) == 2
    err = capsys.readouterr().err
    assert "pip install -e '.[ray]'" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_server_without_ray_flags_never_imports_ray(monkeypatch):
    import uvicorn

    monkeypatch.setitem(sys.modules, "ray", None)
    ran = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: ran.append(self.config.port))
    assert main(_serve("--port", "8124")) == 3  # uvicorn.Server.run replaced: it "did not start"
    assert ran == [8124]


def test_options_route_to_free_slots_and_split_the_cpus():
    pytest.importorskip("ray.serve")
    from server.ray_serve import deployment_options

    options, threads = deployment_options(3, None, batch=4, max_queue=16, gpus=False, cluster_cpus=12)
    assert options["num_replicas"] == 3 and "autoscaling_config" not in options
    assert (options["max_ongoing_requests"], options["max_queued_requests"]) == (20, 16)
    assert options["ray_actor_options"]["num_cpus"] == 4 and options["ray_actor_options"]["num_gpus"] == 0
    assert threads == 4
    options, threads = deployment_options(3, None, batch=1, max_queue=8, gpus=False, cluster_cpus=2)
    assert threads == 1 and options["ray_actor_options"]["num_cpus"] == pytest.approx(2 / 3)  # still fits


def test_options_autoscale_on_queue_depth_and_take_a_gpu_each():
    pytest.importorskip("ray.serve")
    from server.ray_serve import SOURCE_ROOT, deployment_options

    options, threads = deployment_options(1, 4, batch=8, max_queue=64, gpus=True, cluster_cpus=64)
    scaling = options["autoscaling_config"]
    assert "num_replicas" not in options and threads is None
    assert (scaling["min_replicas"], scaling["initial_replicas"], scaling["max_replicas"]) == (1, 1, 4)
    assert scaling["target_ongoing_requests"] == 8  # more per replica than its batch: a queue has formed
    actor = options["ray_actor_options"]
    assert actor["num_gpus"] == 1
    assert actor["runtime_env"]["env_vars"]["PYTHONPATH"].split(":")[0] == SOURCE_ROOT
    _, cpu_threads = deployment_options(2, 4, batch=1, max_queue=8, gpus=False, cluster_cpus=8)
    assert cpu_threads == 2  # the CPUs are shared by the most replicas there may be


def test_an_address_where_no_cluster_listens_is_refused_at_once(capsys):
    pytest.importorskip("ray.serve")
    import socket

    with socket.socket() as s:  # a port just freed: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(_serve("--ray-replicas", "1", "--ray-address", f"127.0.0.1:{port}")) == 2
    err = capsys.readouterr().err
    assert f"no Ray cluster answers at --ray-address 127.0.0.1:{port}" in err and "Traceback" not in err


@pytest.mark.parametrize("address", ["not an address", "host:port:x", "::"])
def test_a_malformed_address_is_one_line_error(address, capsys):
    pytest.importorskip("ray.serve")
    assert main(_serve("--ray-replicas", "1", "--ray-address", address)) == 2
    err = capsys.readouterr().err
    assert err.startswith("serve: ") and "Traceback" not in err


def test_replicas_the_cluster_cannot_hold_are_refused():
    pytest.importorskip("ray.serve")
    from server.ray_serve import room_for

    assert room_for(4, None, gpus=True, resources={"CPU": 64, "GPU": 4}) is None
    assert "3 replicas on CUDA need a GPU each; the Ray cluster has 2" in room_for(3, None, True, {"GPU": 2})
    assert "need a GPU each; the Ray cluster has 0" in room_for(1, None, True, {"CPU": 8})
    assert room_for(1, 8, gpus=True, resources={"GPU": 1}) is None  # autoscaling waits for GPUs added later
    assert room_for(2, None, gpus=False, resources={"CPU": 2}) is None
    assert "5 replicas on a CPU need a core each" in room_for(2, 5, False, {"CPU": 4})
    assert "1000000 replicas" in room_for(10**6, None, False, {"CPU": 16})
