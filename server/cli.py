"""``python main.py serve``: load a model and serve the OpenAI-compatible API and the web page (uvicorn)."""

from __future__ import annotations

import argparse
import logging
import sys

from engine.engine import DECODER_DTYPE_NAMES
from server.settings import ServerSettings, is_loopback


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="a local model directory or a Hugging Face id")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY' on /v1 requests "
                                                        "(needed when listening beyond this machine)")
    parser.add_argument("--insecure", action="store_true", help="allow a non-loopback host without an API key")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    parser.add_argument("--dtype", default=None, choices=("bfloat16", "float16", "float32"),
                        help="weights precision (default: the engine's choice for the device)")
    parser.add_argument("--decoder-dtype", default="float32", choices=DECODER_DTYPE_NAMES,
                        help="the codec decoder's precision (default float32); bfloat16 is faster on a GPU under "
                             "many streams (--batch), and is what the official package decodes in with a bf16 model")
    parser.add_argument("--library", default=None, help="voice library folder (default: the studio's)")
    parser.add_argument("--max-queue", type=int, default=64, help="requests allowed to wait (more get 429)")
    parser.add_argument("--batch", type=int, default=1,
                        help="streams generated together in one batched frame loop (default 1: one at a time)")
    parser.add_argument("--max-upload-mb", type=float, default=20.0, help="largest request body in MB")
    parser.add_argument("--max-voices", type=int, default=1000, help="voices the library may hold (more get 507)")


def run_serve_command(args: argparse.Namespace) -> int:
    if not is_loopback(args.host) and not args.api_key and not args.insecure:
        print(f"refusing to listen on {args.host} without an API key: pass --api-key KEY "
              "(or --insecure to accept anyone on the network)", file=sys.stderr)
        return 2
    import uvicorn

    from server.app import create_app
    from server.library import default_library_dir
    from server.scheduler import backend_factory

    settings = ServerSettings(host=args.host, port=args.port, api_key=args.api_key, max_queue=args.max_queue,
                              max_upload_bytes=int(args.max_upload_mb * 1024 * 1024), max_voices=args.max_voices)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    app = create_app(lambda: load_engine(args.model, args.device, args.dtype, args.decoder_dtype),
                     args.library or default_library_dir(), settings, make_backend=backend_factory(args.batch))
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0


def load_engine(model: str, device: str, dtype: str | None, decoder_dtype: str | None = None):
    import torch

    from engine import Engine

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return Engine.from_pretrained(model, device=device, dtype=getattr(torch, dtype) if dtype else None,
                                  decoder_dtype=getattr(torch, decoder_dtype) if decoder_dtype else None)
