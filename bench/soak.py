"""Soak: `python main.py serve` under a steady mixed load for minutes, its memory (RSS) sampled as it goes.

Each backend (`--backends 1 4`: one stream at a time, and `--batch 4`) is served by the `serve` command itself, in a
process of its own on a loopback port, from a tiny synthetic checkpoint built for the run unless `--model` names
one. `--clients` threads then send, each in turn, speech in every response format, a server-sent-events stream, a
stream cancelled after its first bytes, a live-text WebSocket session, and a voice upload (a short clone) deleted
again, until `--duration` seconds have passed or `--max-requests` are done. Every `--sample-s` the server's RSS
and the requests done so far are written as a JSON line; the backend ends with a summary line: requests by kind,
failures by kind and status, RSS at the start, end and peak, and `growth_mb_per_1000` (`growth_per_1000`): the
least-squares slope of RSS over requests served in the run's second half, in MB per 1,000 requests.

    python -m bench.soak [--model DIR] [--backends 1 4] [--duration 600] [--clients 8] [--out FILE]

Linux only (RSS from /proc). The figures of record: docs/benchmarks.md#soak.
"""

from __future__ import annotations

import argparse
import io
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The keeper climbed the stairs and lit the lamp."
FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
MIX = (*FORMATS, "sse", "cancel", "live", "voice")  # one request of each kind in turn, per client
REQUEST_TIMEOUT_S = 120.0
READY_TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class Sample:
    t_s: float  # since the load started
    requests: int  # done by then
    rss_mb: float


def growth_per_1000(samples: Sequence[Sample]) -> float | None:
    """MB of RSS per 1,000 requests over the second half of the run (the samples from half the last one's time on):
    the least-squares slope of RSS against requests done, times 1,000; None with fewer than two such samples or no
    request done between them."""
    if not samples:
        return None
    half = [s for s in samples if s.t_s >= samples[-1].t_s / 2]
    if len(half) < 2:
        return None
    mean_x = sum(s.requests for s in half) / len(half)
    mean_y = sum(s.rss_mb for s in half) / len(half)
    spread = sum((s.requests - mean_x) ** 2 for s in half)
    if spread == 0:
        return None
    return 1000 * sum((s.requests - mean_x) * (s.rss_mb - mean_y) for s in half) / spread


def summary(backend: str, samples: Sequence[Sample], done: Counter, failed: Counter, duration_s: float) -> dict:
    """The summary line of one backend's soak."""
    growth = growth_per_1000(samples)
    return {"backend": backend, "summary": True, "duration_s": round(duration_s, 1), "requests": sum(done.values()),
            "by_kind": dict(sorted(done.items())), "failed": dict(sorted(failed.items())),
            "rss_start_mb": samples[0].rss_mb if samples else None,
            "rss_end_mb": samples[-1].rss_mb if samples else None,
            "rss_max_mb": max(s.rss_mb for s in samples) if samples else None,
            "growth_mb_per_1000": None if growth is None else round(growth, 3)}


def rss_mb(pid: int) -> float:
    """The resident set size of process ``pid`` in MB (2^20 bytes)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def start_server(model: str, batch: int, library: Path, log) -> tuple[subprocess.Popen, str]:
    """``python main.py serve`` on a free loopback port, once ``/ready`` answers 200: the process and its URL."""
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "main.py", "serve", "--model", model, "--device", "cpu", "--host", "127.0.0.1",
               "--port", str(port), "--library", str(library), "--batch", str(batch)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"{url}/ready", timeout=5).status_code == 200:
                return process, url
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    stop_server(process)
    raise RuntimeError(f"the server did not become ready (exit code {process.returncode}); see its log")


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(30)


# ---- the requests: each returns None when served as it should be, else what went wrong -----------------------
def _speech(frames: int, seed: int, **fields) -> dict:
    return {"model": "orator", "voice": "vivian", "input": TEXT, "seed": seed, "max_frames": frames,
            "min_frames": frames, **fields}


def speak(url: str, frames: int, seed: int, response_format: str) -> str | None:
    import httpx

    r = httpx.post(f"{url}/v1/audio/speech", json=_speech(frames, seed, response_format=response_format),
                   timeout=REQUEST_TIMEOUT_S)
    return None if r.status_code == 200 and r.content else f"status {r.status_code}"


def speak_sse(url: str, frames: int, seed: int) -> str | None:
    import httpx

    r = httpx.post(f"{url}/v1/audio/speech", json=_speech(frames, seed, response_format="pcm",
                                                          stream_format="sse"), timeout=REQUEST_TIMEOUT_S)
    events = [line for line in r.text.splitlines() if line.startswith("data:")]
    done = bool(events) and json.loads(events[-1][5:])["type"] == "speech.audio.done"
    return None if r.status_code == 200 and done else f"status {r.status_code}"


def cancel_early(url: str, frames: int, seed: int) -> str | None:
    """A long stream left after its first bytes: the server must cancel it and free its slot."""
    import httpx

    body = _speech(20 * frames, seed, response_format="pcm", chunk_frames=1)
    with httpx.stream("POST", f"{url}/v1/audio/speech", json=body, timeout=REQUEST_TIMEOUT_S) as r:
        if r.status_code != 200:
            return f"status {r.status_code}"
        next(r.iter_raw(), None)
    return None


def live(url: str, frames: int, seed: int) -> str | None:
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    config = {"type": "session.config", "voice": "vivian", "response_format": "pcm", "max_frames": frames,
              "min_frames": frames, "seed": seed}
    with connect(url.replace("http://", "ws://") + "/v1/audio/speech/stream", open_timeout=30) as ws:
        ws.send(json.dumps(config))
        for word in TEXT.split(" "):
            ws.send(json.dumps({"type": "input.text.delta", "delta": word + " "}))
        ws.send(json.dumps({"type": "input.done"}))
        try:
            while True:
                ws.recv(timeout=REQUEST_TIMEOUT_S)
        except ConnectionClosed:
            pass
        code = ws.protocol.close_rcvd.code if ws.protocol.close_rcvd else None
    return None if code == 1000 else f"close {code}"


def _sample_wav() -> bytes:
    import numpy as np
    import soundfile as sf

    out = io.BytesIO()
    sf.write(out, (0.3 * np.sin(np.arange(24000) * 0.05)).astype(np.float32), 24000, format="WAV")
    return out.getvalue()


WAV = _sample_wav()


def upload_voice(url: str, frames: int, seed: int) -> str | None:
    import httpx

    name = f"soak-{seed}"
    r = httpx.post(f"{url}/v1/audio/voices", data={"name": name}, files={"audio_sample": ("s.wav", WAV, "audio/wav")},
                   timeout=REQUEST_TIMEOUT_S)
    if r.status_code != 200:
        return f"status {r.status_code}"
    r = httpx.delete(f"{url}/v1/audio/voices/{name}", timeout=REQUEST_TIMEOUT_S)
    return None if r.status_code == 200 else f"delete status {r.status_code}"


def request_of(kind: str) -> Callable[[str, int, int], str | None]:
    if kind in FORMATS:
        return lambda url, frames, seed: speak(url, frames, seed, kind)
    return {"sse": speak_sse, "cancel": cancel_early, "live": live, "voice": upload_voice}[kind]


class Load:
    """``clients`` threads sending ``MIX`` in turn until ``deadline`` (monotonic) or ``max_requests`` are started."""

    def __init__(self, url: str, clients: int, frames: int, deadline: float, max_requests: int):
        self.url, self.clients, self.frames, self.deadline = url, clients, frames, deadline
        self.done: Counter = Counter()
        self.failed: Counter = Counter()
        self._lock = threading.Lock()
        self._left = max_requests

    @property
    def requests(self) -> int:
        with self._lock:
            return sum(self.done.values()) + sum(self.failed.values())

    def _take(self) -> bool:
        with self._lock:
            self._left -= 1
            return self._left >= 0 and time.monotonic() < self.deadline

    def _client(self, index: int) -> None:
        turn = index
        while self._take():
            kind = MIX[turn % len(MIX)]
            seed = turn  # unique per request: voice names and seeds
            try:
                problem = request_of(kind)(self.url, self.frames, seed)
            except Exception as e:  # a transport error is a failure of this request, counted
                problem = type(e).__name__
            with self._lock:
                if problem is None:
                    self.done[kind] += 1
                else:
                    self.failed[f"{kind}: {problem}"] += 1
            turn += self.clients

    def run(self) -> list[threading.Thread]:
        threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(self.clients)]
        for thread in threads:
            thread.start()
        return threads


def soak(model: str, batch: int, duration_s: float, clients: int, frames: int, sample_s: float, max_requests: int,
         write: Callable[[dict], None]) -> dict:
    """One backend's soak: its samples written as they come (``write``), its summary returned."""
    backend = "single" if batch <= 1 else f"batch {batch}"
    with tempfile.TemporaryDirectory(prefix="orator-soak-") as folder:
        with open(Path(folder) / "server.log", "wb") as log:
            process, url = start_server(model, batch, Path(folder) / "voices", log)
            try:
                started = time.monotonic()
                load = Load(url, clients, frames, started + duration_s, max_requests)
                threads = load.run()
                samples = []
                while any(t.is_alive() for t in threads):
                    sample = Sample(round(time.monotonic() - started, 2), load.requests, round(rss_mb(process.pid), 1))
                    samples.append(sample)
                    write({"backend": backend, **asdict(sample)})
                    for thread in threads:
                        thread.join(timeout=max(0.0, sample_s / len(threads)))
                samples.append(Sample(round(time.monotonic() - started, 2), load.requests,
                                      round(rss_mb(process.pid), 1)))
                write({"backend": backend, **asdict(samples[-1])})
                result = summary(backend, samples, load.done, load.failed, time.monotonic() - started)
            finally:
                stop_server(process)
    write(result)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, help="a model folder (default: a tiny synthetic CustomVoice checkpoint)")
    p.add_argument("--backends", type=int, nargs="+", default=[1, 4], metavar="BATCH",
                   help="the --batch of each server soaked in turn (1: one stream at a time; default 1 4)")
    p.add_argument("--duration", type=float, default=600.0, help="seconds of load per backend (default 600)")
    p.add_argument("--clients", type=int, default=8, help="clients sending at once (default 8)")
    p.add_argument("--frames", type=int, default=8, help="frames each utterance is forced to (default 8)")
    p.add_argument("--sample-s", type=float, default=2.0, help="seconds between RSS samples (default 2)")
    p.add_argument("--max-requests", type=int, default=1_000_000, help="requests per backend at most")
    p.add_argument("--out", default=None, help="append the JSON lines to this file (default: print them)")
    args = p.parse_args(argv)
    if args.duration <= 0 or args.clients < 1 or args.frames < 1 or args.sample_s <= 0 or args.max_requests < 1:
        p.error("--duration, --clients, --frames, --sample-s and --max-requests must be positive")
    out = open(args.out, "a", encoding="utf-8") if args.out else sys.stdout

    def write(row: dict) -> None:
        out.write(json.dumps(row) + "\n")
        out.flush()

    try:
        with tempfile.TemporaryDirectory(prefix="orator-soak-model-") as folder:
            model = args.model
            if model is None:
                from engine.synthetic.checkpoint import build_checkpoint

                model = str(build_checkpoint(Path(folder) / "tiny", "tiny", "custom_voice", seed=0))
            results = [soak(model, batch, args.duration, args.clients, args.frames, args.sample_s, args.max_requests,
                            write) for batch in args.backends]
    finally:
        if out is not sys.stdout:
            out.close()
    print("| backend | requests | failed | RSS start → end (max), MB | growth, MB per 1,000 requests (2nd half) |")
    print("|---|---|---|---|---|")
    for r in results:
        print(f"| {r['backend']} | {r['requests']} | {sum(r['failed'].values())} | {r['rss_start_mb']} → "
              f"{r['rss_end_mb']} ({r['rss_max_mb']}) | {r['growth_mb_per_1000']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
