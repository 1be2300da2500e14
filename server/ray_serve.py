"""``python main.py serve --ray-replicas N``: the same FastAPI app and engine as Ray Serve replicas behind Ray
Serve's HTTP proxy.

Each replica is one ``SpeechReplica``: its own engine (``server.engine_loading.load_engine``) and scheduler
(``server.scheduler.backend_factory``) inside the app ``server.app.create_app`` builds, so the OpenAI API, the
voices API, the live-text WebSocket, the web page, the API key and the limits are the single-process server's.
- Readiness: the replica's constructor loads and warms up the model, and its app's startup waits for the rest
  (``create_app(load_first=True)``); Ray routes to a replica only once both are done. A model that cannot load
  fails the deployment with the constructor's error as its reason.
- Routing: Ray Serve's router (power of two choices) sends a request to the replica with fewer ongoing requests,
  at most ``--batch`` + ``--max-queue`` per replica (``max_ongoing_requests``, what the replica's own scheduler
  takes); up to ``--max-queue`` more wait in the proxy (``max_queued_requests``), beyond which the proxy answers 503.
- Replicas: ``--ray-replicas N`` runs N; with ``--ray-max-replicas M`` (or ``--ray-replicas auto``, from 1) Ray's
  autoscaler adds replicas up to M while the requests per replica stay above ``--batch`` (a queue forms) and
  removes them when idle. On CUDA each replica takes one GPU; on a CPU the cluster's CPUs are split between the
  most replicas there may be, and each replica's PyTorch threads are set to its share.
- Failures: a replica whose process dies fails its own requests only (a cut stream or an error); Ray starts a new
  one, which loads before it takes traffic.
- The voice library folder (``--library``) is shared by every replica (on several machines: a shared file
  system); a voice saved by one is seen by the others at once (``engine.voices.library``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import ray
from ray import serve

from server.app import create_app
from server.engine_loading import load_engine
from server.ray_replicas import ReplicaHeader, ReplicaReporter, remove_registry
from server.scheduler import backend_factory
from server.settings import ServerSettings

log = logging.getLogger("orator.server")
APP_NAME = "orator"
DEPLOYMENT = "speech"
# replicas run the code of the command that deployed them, from source or installed
SOURCE_ROOT = str(Path(__file__).resolve().parents[1])
HEALTH_CHECK_PERIOD_S = 2.0  # how soon a replica that died is noticed and replaced


@dataclass(frozen=True)
class ReplicaConfig:
    """What each replica loads and serves."""

    model: str
    library: str
    settings: ServerSettings
    device: str = "cpu"
    dtype: str | None = None
    decoder_dtype: str | None = None
    batch: int = 1
    threads: int | None = None  # PyTorch's CPU threads in each replica; None: the engine's choice


@serve.ingress()
class SpeechReplica:
    """One replica: the server's app over its own engine."""

    async def __init__(self, config: ReplicaConfig):
        if config.threads is not None:  # before the engine exists: its thread pool is set when it loads
            from engine.core.options import configure

            configure(threads=config.threads)
        self.config = config
        context = serve.get_replica_context()
        self.reporter = ReplicaReporter(context.app_name, context.replica_tag)
        # loaded here rather than in the app's startup: an error raised by the constructor is the reason Ray gives
        # for a failed deployment (uvicorn's lifespan would log it and leave Ray only "startup failed")
        self.engine = await asyncio.to_thread(load_engine, config.model, config.device, config.dtype,
                                              config.decoder_dtype)
        self.backend = await asyncio.to_thread(backend_factory(config.batch), self.engine, None)

    def __serve_build_asgi_app__(self):
        config = self.config
        app = create_app(lambda: self.engine, config.library, config.settings,
                         make_backend=lambda engine, progress: self.backend, load_first=True,
                         request_id_prefix=f"speech-{self.reporter.replica}-")
        app.state.health_extra = self.reporter.health
        app.state.status_elsewhere = self.reporter.status_elsewhere
        app.add_middleware(ReplicaHeader, reporter=self.reporter)
        self.reporter.app = app
        self.reporter.start()
        return app

    async def check_health(self) -> None:
        app = self.reporter.app
        if app is not None and app.state.load_error:
            raise RuntimeError(app.state.load_error)

    async def __del__(self):
        await self.reporter.stop()


def deployment_options(replicas: int | None, max_replicas: int | None, batch: int, max_queue: int, gpus: bool,
                       cluster_cpus: float) -> tuple[dict, int | None]:
    """Ray Serve's options for the deployment, and the PyTorch threads of each replica (None on a GPU).

    ``replicas``: how many, or the fewest when autoscaling (None: 1); ``max_replicas``: autoscale up to that many."""
    low = replicas or 1
    options = {"max_ongoing_requests": batch + max_queue, "max_queued_requests": max_queue,
               "health_check_period_s": HEALTH_CHECK_PERIOD_S}
    if max_replicas is not None:
        # Ray counts a replica's ongoing requests, queued ones included: above --batch a queue has formed
        options["autoscaling_config"] = {"min_replicas": low, "initial_replicas": low, "max_replicas": max_replicas,
                                         "target_ongoing_requests": batch, "upscale_delay_s": 5,
                                         "downscale_delay_s": 60}
    else:
        options["num_replicas"] = low
    most = max_replicas or low
    if gpus:
        options["ray_actor_options"] = {"num_gpus": 1, "num_cpus": 1, "runtime_env": _runtime_env()}
        return options, None
    share = cluster_cpus / most
    options["ray_actor_options"] = {"num_gpus": 0, "num_cpus": share, "runtime_env": _runtime_env()}
    return options, max(1, math.floor(share))


def room_for(replicas: int | None, max_replicas: int | None, gpus: bool, resources: dict) -> str | None:
    """Why the cluster (``ray.cluster_resources()``) cannot hold the replicas asked for; None when it can. Ray
    would wait for ever for GPUs it lacks, and replicas on a CPU beyond its cores only slow each other down (each
    holds its own copy of the model)."""
    wanted = replicas or 1
    if gpus:
        have = resources.get("GPU", 0)
        return None if have >= wanted else (f"{wanted} replicas on CUDA need a GPU each; the Ray cluster has "
                                            f"{have:g}")
    most, have = max_replicas or wanted, resources.get("CPU", 0)
    return None if have >= most else (f"{most} replicas on a CPU need a core each; the Ray cluster has {have:g} "
                                      "(fewer replicas, or --batch for more streams per replica)")


def _runtime_env() -> dict:
    paths = [SOURCE_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}}


def deploy(config: ReplicaConfig, options: dict):
    """Deploy the replicas with ``options`` (``deployment_options``) on the Serve instance already started; returns
    once every replica is loaded (a model that cannot load raises)."""
    deployment = serve.deployment(SpeechReplica, name=DEPLOYMENT).options(**options)
    return serve.run(deployment.bind(config), name=APP_NAME, route_prefix="/")


def undeploy() -> None:
    serve.delete(APP_NAME)
    remove_registry(APP_NAME)


def run_ray_serve(args, settings: ServerSettings) -> int:
    """The ``serve`` command on Ray: start or join a cluster, deploy, serve until interrupted."""
    from server.voice_library import default_library_dir

    joined = args.ray_address is not None
    problem = unreachable(args.ray_address) if joined else None
    if problem:
        print(f"serve: no Ray cluster answers at --ray-address {args.ray_address}: {problem}", file=sys.stderr)
        return 2
    try:
        ray.init(address=args.ray_address, namespace="orator", log_to_driver=True)
    except (ConnectionError, RuntimeError, ValueError) as e:  # no cluster at that address
        print(f"serve: cannot start or join Ray (--ray-address {args.ray_address}): {str(e).strip().splitlines()[0]}",
              file=sys.stderr)
        return 2
    resources = ray.cluster_resources()
    device = args.device
    if device == "auto":  # the replicas' machines decide, not this one
        device = "cuda" if resources.get("GPU", 0) >= 1 else "cpu"
    gpus = device.startswith("cuda")
    if gpus:  # Ray gives each replica its GPU as the only one it sees
        device = "cuda"
    problem = room_for(args.ray_replicas, args.ray_max_replicas, gpus, resources)
    if problem:
        print(f"serve: {problem}", file=sys.stderr)
        ray.shutdown()
        return 2
    options, threads = deployment_options(args.ray_replicas, args.ray_max_replicas, args.batch, args.max_queue,
                                          gpus, resources.get("CPU", 1))
    config = ReplicaConfig(model=args.model, library=str(Path(args.library or default_library_dir()).resolve()),
                           settings=settings, device=device, dtype=args.dtype, decoder_dtype=args.decoder_dtype,
                           batch=args.batch, threads=threads)
    serve.start(http_options={"host": args.host, "port": args.port, "keep_alive_timeout_s": settings.keep_alive_s})
    status = 0
    try:
        deploy(config, options)
        print(f"serving on http://{args.host}:{args.port} through Ray Serve ({_replicas_text(options)}); "
              "Ctrl-C stops", file=sys.stderr)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:  # while deploying too: what was started is removed all the same
        pass
    except Exception as e:  # a model that cannot load, a cluster without room...: Ray's reason, in one line
        print(f"serve: the Ray deployment failed: {failure_reason(e)}", file=sys.stderr)
        status = 3
    finally:
        _stop(joined)
    return status


def unreachable(address: str, timeout_s: float = 5.0) -> str | None:
    """Why nothing listens at a ``host:port`` cluster address (None if something does, or for another form:
    ``auto``, ``local``, ``ray://...``): ``ray.init`` retries an address where nothing listens for minutes."""
    if "://" in address or address in ("auto", "local"):
        return None
    host, colon, port = address.rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        return None  # Ray's own message names the bad format
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        return e.strerror or type(e).__name__
    return None


def failure_reason(error: Exception) -> str:
    """The last line of the deployment's status message (a replica constructor's error), else of ``error``."""
    try:
        message = serve.status().applications[APP_NAME].deployments[DEPLOYMENT].message
    except Exception:  # no status to read: the error itself says what it can
        message = ""
    lines = [line.strip() for line in (message or str(error)).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


def _replicas_text(options: dict) -> str:
    scaling = options.get("autoscaling_config")
    if scaling:
        return f"{scaling['min_replicas']} to {scaling['max_replicas']} replicas, autoscaled"
    count = options["num_replicas"]
    return f"{count} replica{'s' if count != 1 else ''}"


def _stop(joined: bool) -> None:
    """Remove what this command deployed; a cluster it joined goes on, a local one it started ends."""
    try:
        undeploy()
    except Exception as e:  # stopping anyway
        log.warning("cannot delete the Ray application: %s", e)
    if not joined:
        serve.shutdown()
    ray.shutdown()
