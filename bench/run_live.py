"""Live text in, speech out: how long after its text a WebSocket session (``/v1/audio/speech/stream``) is heard.

    python -m bench.run_live --model DIR [--device cuda] [--batch N] [--sessions 1 8] [--tokens-per-s 30]
        [--frames 64] [--runs 3] [--out FILE]
    python -m bench.run_live --url ws://HOST:PORT [--api-key KEY] ...   # a server already running

Each session sends ``--text`` as an LLM would stream it: pieces of at most five letters (a word, a part of a long
word, a mark), ``--tokens-per-s`` of them a second, then ``input.done``. Figures, per session:
``first_audio_ms``, from its first delta to its first audio message, and ``tail_ms``, from its last delta to its
last audio message (what a listener waits for after the LLM has finished), with ``text_s`` the seconds its text
took to arrive and ``audio_s`` the audio it got. Rows give p50 and p90 over every session of ``--runs`` runs of
``--sessions`` sessions at once. Random weights would end each segment at a random EOS, so each segment is forced
to ``--frames`` frames (``min_frames`` = ``max_frames``).

With ``--model`` the server runs in a thread of this process (its single backend, or ``--batch N`` streams:
``serve --batch``), behind one warm-up session; its clients are coroutines of this process's main thread.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import threading
import time
from pathlib import Path

DEFAULT_TEXT = ("The quick brown fox jumps over the lazy dog near the quiet river bank. Meanwhile the old clock in "
                "the village square struck noon and everyone paused to listen. Then the busy market opened its "
                "doors again to the crowd. Children ran between the stalls while their parents bargained for bread.")
_PIECE = re.compile(r"\s?[^\W\d_]{1,5}|\s?\d{1,3}|\s?[^\w\s]|\s+|.", re.DOTALL)


def pieces(text: str) -> list[str]:
    """``text`` as an LLM streams it, roughly: pieces of at most five letters or three digits, or one mark, each
    with the space before it."""
    return _PIECE.findall(text)


async def session(url: str, text: str, tokens_per_s: float, config: dict, headers: dict) -> dict:
    """One session: the text sent at ``tokens_per_s``, while its audio is received; its figures."""
    from websockets.asyncio.client import connect

    times = {"audio": []}
    audio_bytes = 0
    async with connect(url, additional_headers=headers, max_size=None) as ws:
        await ws.send(json.dumps({"type": "session.config", **config}))

        async def send_text() -> None:
            start = time.perf_counter()
            for i, piece in enumerate(pieces(text)):
                await asyncio.sleep(max(0.0, start + i / tokens_per_s - time.perf_counter()))
                await ws.send(json.dumps({"type": "input.text.delta", "delta": piece}))
                times.setdefault("first_delta", time.perf_counter())
                times["last_delta"] = time.perf_counter()
            await ws.send(json.dumps({"type": "input.done"}))

        sender = asyncio.create_task(send_text())
        async for message in ws:
            if isinstance(message, bytes):
                times["audio"].append(time.perf_counter())
                audio_bytes += len(message)
                continue
            event = json.loads(message)
            if event["type"] == "error":
                raise RuntimeError(f"the session failed: {event['error']}")
            if event["type"] == "speech.done":
                break
        await sender
    audio = times["audio"]
    return {"first_audio_ms": 1000 * (audio[0] - times["first_delta"]),
            "tail_ms": 1000 * (audio[-1] - times["last_delta"]),
            "text_s": times["last_delta"] - times["first_delta"], "audio_s": audio_bytes / 2 / 24000}


def _quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=10, method="inclusive")[int(q * 10) - 1] if len(values) > 1 else values[0]


async def run(url: str, sessions: int, runs: int, text: str, tokens_per_s: float, config: dict,
              headers: dict) -> dict:
    results = []
    for _ in range(runs):
        results += await asyncio.gather(*(session(url, text, tokens_per_s, {**config, "seed": i}, headers)
                                          for i in range(sessions)))
    row = {"sessions": sessions, "runs": runs, "tokens_per_s": tokens_per_s, "pieces": len(pieces(text))}
    for name in ("first_audio_ms", "tail_ms", "text_s", "audio_s"):
        values = [r[name] for r in results]
        row[f"{name}_p50"], row[f"{name}_p90"] = round(statistics.median(values), 2), round(_quantile(values, 0.9), 2)
    return row


def start_server(model: str, device: str, batch: int):
    """The server on a free loopback port, in a thread of this process, once it serves: its WebSocket URL and the
    function that stops it."""
    import socket

    import httpx
    import uvicorn

    from engine import Engine
    from server.app import create_app
    from server.connections import uvicorn_config
    from server.scheduler import backend_factory
    from server.settings import ServerSettings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = ServerSettings(port=port)
    engine = Engine.from_pretrained(model, device=device)
    library = Path(__import__("tempfile").mkdtemp(prefix="orator-live-bench-"))
    app = create_app(lambda: engine, library, settings, make_backend=backend_factory(batch))
    server = uvicorn.Server(uvicorn_config(app, settings, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=30)

    while True:
        try:
            health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()
            if health.get("model_loaded"):
                break
            if health.get("status") == "failed":
                raise RuntimeError(f"the server failed to start: {health.get('error')}")
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    return f"ws://127.0.0.1:{port}/v1/audio/speech/stream", stop


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--model", help="a model directory: the server runs in this process")
    where.add_argument("--url", help="ws://HOST:PORT of a server already running")
    p.add_argument("--api-key")
    p.add_argument("--device", default="cpu")
    p.add_argument("--batch", type=int, default=1, help="streams batched together (serve --batch); 1: one engine")
    p.add_argument("--sessions", type=int, nargs="+", default=[1])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--tokens-per-s", type=float, default=30.0)
    p.add_argument("--frames", type=int, default=64,
                   help="frames of each segment, forced (random weights): about what a sentence of the text takes")
    p.add_argument("--voice", default="vivian")
    p.add_argument("--text", default=DEFAULT_TEXT)
    p.add_argument("--out", help="append one JSON line per row to this file")
    args = p.parse_args(argv)
    if args.model:
        url, stop = start_server(args.model, args.device, args.batch)
        machine = {"device": args.device, "batch": args.batch, "model": str(args.model)}
    else:
        url, stop = args.url.rstrip("/") + "/v1/audio/speech/stream", lambda: None
        machine = {"url": args.url}
    try:
        measure(args, url, machine)
    finally:
        stop()
    return 0


def measure(args: argparse.Namespace, url: str, machine: dict) -> None:
    """The warm-up session, then a row per ``--sessions`` count: printed, and appended to ``--out``."""
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    config = {"voice": args.voice, "response_format": "pcm", "min_frames": args.frames, "max_frames": args.frames}
    asyncio.run(run(url, 1, 1, args.text, 1000.0, config, headers))  # warm-up: every first allocation
    print("| sessions | first audio p50 / p90 ms | tail p50 / p90 ms | text s | audio s |")
    print("|---|---|---|---|---|")
    for n in args.sessions:
        row = {**machine, **asyncio.run(run(url, n, args.runs, args.text, args.tokens_per_s, config, headers))}
        print(f"| {n} | {row['first_audio_ms_p50']} / {row['first_audio_ms_p90']} | {row['tail_ms_p50']} / "
              f"{row['tail_ms_p90']} | {row['text_s_p50']} | {row['audio_s_p50']} |", flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    sys.exit(main())
