"""``python main.py serve``: load a model and serve the OpenAI-compatible API and the web page (uvicorn), or, with
``--ray-replicas``, the same app as Ray Serve replicas (``server.ray_serve``, imported only then: Ray is optional)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import replace
from pathlib import Path

from engine.bounded_files import FileReadError, read_text
from engine.cli.options import add_precision_argument
from engine.core.config import DECODER_DTYPE_NAMES
from server.engine_loading import load_engine
from server.settings import ServerSettings, is_loopback

log = logging.getLogger("orator.server")
API_KEY_ENV = "ORATOR_API_KEY"
MAX_API_KEY_FILE_BYTES = 4096


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="a local model directory or a Hugging Face id")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000)
    key = parser.add_mutually_exclusive_group()
    key.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY' on /v1 requests (needed "
                                                     "when listening beyond this machine); other users can read a "
                                                     f"command line: prefer --api-key-file or ${API_KEY_ENV}")
    key.add_argument("--api-key-file", metavar="FILE", default=None,
                     help=f"read the API key from FILE (its first line); default: ${API_KEY_ENV} if set")
    parser.add_argument("--insecure", action="store_true", help="allow a non-loopback host without an API key")
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        help="a name clients may reach the server by (the Host header), besides localhost, "
                             "127.0.0.1, [::1] and --host; repeatable (needed for a DNS name without --api-key)")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    parser.add_argument("--dtype", default=None, choices=("bfloat16", "float16", "float32"),
                        help="weights precision (default: the engine's choice for the device)")
    add_precision_argument(parser)
    parser.add_argument("--decoder-dtype", default=None, choices=DECODER_DTYPE_NAMES,
                        help="the codec decoder's precision (default: the plan's, float32 but on a processor with "
                             "bfloat16 units at --precision fast); bfloat16 is faster on a GPU under many streams "
                             "(--batch), and is what the official package decodes in with a bf16 model")
    parser.add_argument("--library", default=None, help="voice library folder (default: the studio's)")
    rules = parser.add_mutually_exclusive_group()
    rules.add_argument("--pronunciation", metavar="FILE",
                       help="the pronunciation rules a request asking for them (\"pronunciation\": true) is spoken "
                            "with (default: the studio's, else the shipped ones)")
    rules.add_argument("--no-pronunciation", action="store_true",
                       help="no pronunciation rules: a request asking for them is refused")
    parser.add_argument("--pronunciation-budget", type=float, default=ServerSettings().pronunciation_budget_s,
                        metavar="SECONDS", help="the time the rules may take over one request's text; past it the "
                                                "request answers 400 (default %(default)g)")
    parser.add_argument("--max-queue", type=int, default=64, help="requests allowed to wait (more get 429)")
    parser.add_argument("--batch", type=int, default=1,
                        help="streams generated together in one batched frame loop (default 1: one at a time)")
    parser.add_argument("--max-upload-mb", type=float, default=20.0, help="largest request body in MB")
    limits = ServerSettings()
    parser.add_argument("--max-voices", type=int, default=limits.max_voices,
                        help="voices the library may hold; creating more answers 507 (default %(default)d)")
    parser.add_argument("--max-audio-s", type=float, default=limits.max_audio_s, metavar="SECONDS",
                        help="seconds of audio one request may produce (default %(default)g); longer is an error")
    parser.add_argument("--max-unread-audio-s", type=float, default=limits.max_unread_audio_s, metavar="SECONDS",
                        help="seconds of audio generated ahead of what a client has read before its stream is "
                             "stopped (default %(default)g)")
    parser.add_argument("--send-timeout", type=float, default=limits.send_timeout_s, metavar="SECONDS",
                        help="disconnect a client that takes no data for this long (default %(default)g)")
    parser.add_argument("--live-text-timeout", type=float, default=limits.live_text_timeout_s, metavar="SECONDS",
                        help="end a live-text session (/v1/audio/speech/stream) that sends no message for this long "
                             "while its text is open (default %(default)g)")
    parser.add_argument("--stall-timeout", type=float, default=limits.stall_s, metavar="SECONDS",
                        help="/ready answers 503 once every generation slot has produced no audio for this long "
                             "while requests wait (default %(default)g)")
    parser.add_argument("--max-live-chars", type=int, default=limits.max_live_chars,
                        help="the text one live-text session may send in all (default %(default)d)")
    parser.add_argument("--header-timeout", type=float, default=limits.header_timeout_s, metavar="SECONDS",
                        help="close a connection that has not sent a whole request head this long after connecting "
                             f"or after its last response (default {limits.header_timeout_s:g})")
    parser.add_argument("--keep-alive", type=float, default=limits.keep_alive_s, metavar="SECONDS",
                        help=f"close an idle keep-alive connection after this long (default {limits.keep_alive_s:g})")
    parser.add_argument("--max-connections", type=int, default=limits.max_connections,
                        help="open connections at most; more are closed at once "
                             f"(default {limits.max_connections})")
    ray = parser.add_argument_group("Ray Serve (pip install -e '.[ray]')")
    ray.add_argument("--ray-replicas", type=replica_count, default=None, metavar="N|auto",
                     help="serve through Ray Serve's HTTP proxy from N replicas of the model (one GPU each on CUDA); "
                          "auto: 1 to --ray-max-replicas, autoscaled on the requests waiting")
    ray.add_argument("--ray-max-replicas", type=replica_count, default=None, metavar="M",
                     help="autoscale from --ray-replicas up to M replicas while requests wait")
    ray.add_argument("--ray-address", default=None, metavar="ADDR",
                     help="join this Ray cluster (e.g. ray://head:10001 or auto) instead of starting a local one")
    parser.add_argument("--limit-concurrency", type=int, default=limits.limit_concurrency,
                        help="open connections or requests in progress beyond which a request answers 503; keep "
                             f"it above --max-queue plus --batch (default {limits.limit_concurrency})")


def replica_count(value: str) -> int | str:
    """A ``--ray-replicas`` value: a whole number of at least 1, or ``auto``."""
    if value.strip().lower() == "auto":
        return "auto"
    try:
        count = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of replicas (a whole number, or auto)") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"{count} replicas: at least 1 is needed")
    return count


def check_ray_arguments(args: argparse.Namespace) -> str | None:
    """Why the Ray flags do not fit together (None when they do); ``auto`` becomes 1 with a maximum."""
    if args.ray_replicas is None:
        if args.ray_max_replicas is not None or args.ray_address is not None:
            return "--ray-max-replicas and --ray-address need --ray-replicas"
        return None
    if args.ray_max_replicas == "auto":
        return "--ray-max-replicas needs a number"
    if args.ray_replicas == "auto":
        if args.ray_max_replicas is None:
            return "--ray-replicas auto needs --ray-max-replicas M, the most replicas to scale to"
        args.ray_replicas = 1
    if args.ray_max_replicas is not None and args.ray_max_replicas < args.ray_replicas:
        return f"--ray-max-replicas {args.ray_max_replicas} is below --ray-replicas {args.ray_replicas}"
    if args.batch < 1:
        return "--batch must be at least 1"
    try:
        import ray.serve  # noqa: F401
    except ImportError:
        return "--ray-replicas needs Ray Serve, which is not installed: pip install -e '.[ray]' (or 'ray[serve]')"
    return None


def missing_server_extra() -> str | None:
    """A one-line message naming the extra to install when the web stack ``serve`` needs is missing, else None."""
    try:
        import fastapi  # noqa: F401
        import multipart  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as e:
        return (f"the server extra is not installed (no module {e.name!r}): pip install -e '.[server]' in a source "
                "checkout, or pip install 'orator[server]'")
    return None


def api_key_of(args: argparse.Namespace) -> str | None:
    """The API key: ``--api-key``, else the first line of ``--api-key-file``, else ``$ORATOR_API_KEY``, else None;
    ``ValueError`` saying why for a file that cannot be read or a key that is empty."""
    if args.api_key is not None:
        key, source = args.api_key, "--api-key"
    elif args.api_key_file is not None:
        path = Path(args.api_key_file)
        try:
            text = read_text(path, MAX_API_KEY_FILE_BYTES, "the API key file")
        except FileReadError as e:
            raise ValueError(str(e)) from None
        key = text.splitlines()[0] if text.strip() else ""
        source = f"the API key file {path}"
    elif os.environ.get(API_KEY_ENV) is not None:
        key, source = os.environ[API_KEY_ENV], f"${API_KEY_ENV}"
    else:
        return None
    key = key.strip()
    if not key:
        raise ValueError(f"{source} gives an empty API key")
    if not key.isprintable() or not key.isascii():
        raise ValueError(f"{source} gives an API key with characters an Authorization header cannot carry "
                         "(use printable ASCII)")
    return key


def run_serve_command(args: argparse.Namespace) -> int:
    problem = missing_server_extra() or check_ray_arguments(args)
    if problem:
        print(f"serve: {problem}", file=sys.stderr)
        return 2
    try:
        api_key = api_key_of(args)
    except ValueError as e:
        print(f"serve: {e}", file=sys.stderr)
        return 2
    if not is_loopback(args.host) and not api_key and not args.insecure:
        print(f"refusing to listen on {args.host} without an API key: pass --api-key-file FILE, set "
              f"${API_KEY_ENV} or pass --api-key KEY (or --insecure to accept anyone on the network)", file=sys.stderr)
        return 2
    from engine.errors import PronunciationError
    from engine.pronunciation import lexicon_or_default

    try:
        pronunciation = None if args.no_pronunciation else lexicon_or_default(args.pronunciation)
    except PronunciationError as e:
        print(f"serve: {e}", file=sys.stderr)
        return 2
    try:
        settings = ServerSettings(host=args.host, port=args.port, api_key=api_key, max_queue=args.max_queue,
                                  allowed_hosts=tuple(args.allow_host),
                                  max_upload_bytes=int(args.max_upload_mb * 1024 * 1024),
                                  header_timeout_s=args.header_timeout, keep_alive_s=args.keep_alive,
                                  max_connections=args.max_connections, limit_concurrency=args.limit_concurrency,
                                  max_audio_s=args.max_audio_s, max_unread_audio_s=args.max_unread_audio_s,
                                  send_timeout_s=args.send_timeout, live_text_timeout_s=args.live_text_timeout,
                                  max_live_chars=args.max_live_chars, max_voices=args.max_voices,
                                  stall_s=args.stall_timeout, pronunciation_budget_s=args.pronunciation_budget,
                                  pronunciation=pronunciation)
    except ValueError as e:
        print(f"serve: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if not is_loopback(args.host) and not api_key:
        print(f"WARNING: --insecure: listening on {args.host} without an API key; anyone who can reach this "
              "machine on the network can use the server (speak, add and delete voices)", file=sys.stderr)
    if args.ray_replicas is not None:
        from server.ray_serve import run_ray_serve

        return run_ray_serve(args, settings)
    import uvicorn

    from server.app import create_app
    from server.connections import fit_open_file_limit, uvicorn_config
    from server.scheduler import backend_factory
    from server.voice_library import default_library_dir

    connections = fit_open_file_limit(settings.max_connections)
    if connections < settings.max_connections:
        settings = replace(settings, max_connections=connections,
                           limit_concurrency=min(settings.limit_concurrency, connections))
    if settings.limit_concurrency < settings.max_queue + args.batch:
        log.warning("--limit-concurrency %d is below --max-queue plus --batch (%d): requests the queue would "
                    "take answer 503", settings.limit_concurrency, settings.max_queue + args.batch)
    app = create_app(lambda: load_engine(args.model, args.device, args.dtype, args.decoder_dtype, args.precision),
                     args.library or default_library_dir(), settings, make_backend=backend_factory(args.batch))
    server = uvicorn.Server(uvicorn_config(app, settings, log_level="info"))
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    return 0 if server.started else 3  # 3: uvicorn could not start (its log says why: a port in use, say)
