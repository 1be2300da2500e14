"""The tables of docs/benchmarks.md that raw records back: for each, its files, rows and columns (bench/report.py).

A table is named by its anchor on the page (``<!-- table: NAME -->`` in docs/benchmarks/page.md), and code cites
it as ``docs/benchmarks.md#NAME``. A record is a ``bench.common.Result`` with ``date``, ``machine`` and ``commit``
(and ``cores``, ``variant``, ``command`` where it has them); the side-by-side CPU tables (``SIDE_BY_SIDE``) take
a row for each system and ``variant``, leave out records marked ``"counted": false`` (a process that compiled
its kernels), and say "not measured yet" until their file exists.
"""

from __future__ import annotations

import re

from bench.tables import Column, Record, Rows, Scenario, figure, number, spread

SYSTEM_ORDER = ("Orator", "faster-qwen3-tts", "official")


def system_rank(record: Record) -> int:
    return next((i for i, name in enumerate(SYSTEM_ORDER) if record.get("system", "").startswith(name)), 9)


def size(record: Record) -> str:
    return record.get("model_size") or size_of_model(record)


def size_of_model(record: Record) -> str:
    """``0.6B`` from a model path or a size field (``/tmp/om/0.6b-custom_voice``, ``0.6b``)."""
    found = re.search(r"(\d+\.\d+)b", str(record.get("size") or record.get("model") or ""), re.IGNORECASE)
    return f"{found.group(1)}B" if found else "?"


def cores(record: Record) -> int:
    """The cores the record ran on: its ``cores``, else what its ``device`` says."""
    if record.get("cores"):
        return int(record["cores"])
    found = re.search(r"on (\d+) cores", record.get("device", ""))
    return int(found.group(1)) if found else 0


def threads(record: Record) -> int:
    found = re.search(r"(\d+) threads on", record.get("device", ""))
    return int(found.group(1)) if found else 0


def plan(record: Record) -> str:
    """The path a whole-synthesis record ran, in the page's words."""
    if record.get("system", "").startswith("official"):
        return "official (float32, eager)"
    return "int8, PyTorch steps" if "PyTorch steps" in record.get("mode", "") else "int8 (default)"


def plan_path(summary: str) -> str:
    """The path and its bridge from an execution plan's summary (``ExecutionPlan.summary``)."""
    path = re.search(r"fast: ([\w-]+)", summary)
    bridge = re.search(r"bridge: ([\w-]+)", summary)
    return (bridge.group(1) + " while " + path.group(1) + " compiles" if bridge and path
            else path.group(1) if path else "–")


def cores_and_threads(found: list[Record], _: Rows) -> str:
    return f"{cores(found[0])} ({'/'.join(sorted({str(threads(r)) for r in found}))})"


def first_chunk_ms(record: Record) -> float | None:
    """Milliseconds to the smallest first chunk measured (the whole utterance where a system cannot stream)."""
    chunks = record.get("ttfa_ms") or {}
    return chunks[min(chunks, key=int)] if chunks else None


def first_audio(found: list[Record], _: Rows) -> str:
    if found[0].get("system", "").startswith("official"):
        return spread([r["ttfa_ms"]["1"] for r in found]) + " (whole)"
    at_four = [r["ttfa_ms"]["4"] for r in found if "4" in r["ttfa_ms"]]
    at_one = spread([r["ttfa_ms"]["1"] for r in found])
    return f"{at_one} / {spread(at_four)}" if at_four else at_one


def gigabytes(found: list[Record], _: Rows) -> str:
    return spread([r["peak_mem_gb"] for r in found])


def against_official(found: list[Record], rows: Rows) -> str:
    """Orator's ×RT over the official code's on the same machine, size and cores; of the same ``variant`` where
    the official code was measured in it."""
    mine = found[0]
    if mine.get("system", "").startswith("official"):
        return ""
    peers = [r for group in rows.values() for r in group if r.get("system", "").startswith("official")
             and size(r) == size(mine) and cores(r) == cores(mine) and r.get("machine") == mine.get("machine")]
    peers = [r for r in peers if r.get("variant") == mine.get("variant")] or peers
    if not peers:
        return "–"
    official = sum(r["xrt"] for r in peers) / len(peers)
    return spread([r["xrt"] / official for r in found]) + "×"


def many_streams_http(column: str) -> Column:
    """A figure of the HTTP record beside an engine row (same size and streams)."""

    def cell(found: list[Record], rows: Rows) -> str:
        sibling = rows.get((size_of_model(found[0]), found[0]["streams"], "http"))
        if not sibling:
            return "–"
        if column == "audio":
            return figure("audio_s_per_s")(sibling, rows)
        return f"{figure('ttfa_p50_ms')(sibling, rows)} / {figure('ttfa_p95_ms')(sibling, rows)}"

    return Column({"audio": "HTTP audio-s/s", "ttfa": "HTTP first audio p50 / p95, ms"}[column], cell)


WHOLE_SYNTHESIS = (
    Column("system", lambda found, _: found[0]["system"]),
    Column("size", lambda found, _: size(found[0])),
    Column("ms/frame", figure("ms_per_frame")),
    Column("×RT", figure("xrt")),
    Column("first audio @1 / @4, ms", first_audio),
)

CPU_SYNTHESIS = (
    Column("plan", lambda found, _: plan(found[0])),
    Column("size", lambda found, _: size(found[0])),
    Column("cores (threads)", cores_and_threads),
    Column("ms/frame", figure("ms_per_frame")),
    Column("×RT", figure("xrt")),
    Column("first audio, ms", lambda found, _: spread([r["ttfa_ms"]["1"] for r in found])),
    Column("peak resident, GB", gigabytes),
)

SIDE_BY_SIDE = (
    Column("system", lambda found, _: found[0]["system"]),
    Column("variant", lambda found, _: found[0].get("variant") or "–"),
    Column("size", lambda found, _: size(found[0])),
    Column("cores", lambda found, _: str(cores(found[0]))),
    Column("ms/frame", figure("ms_per_frame")),
    Column("×RT", figure("xrt")),
    Column("first audio, ms", lambda found, rows: figure(first_chunk_ms)(found, rows) + (
        " (whole)" if found[0].get("system", "").startswith("official") else "")),
    Column("peak resident, GB", figure("peak_mem_gb")),
    Column("÷ official ×RT", against_official),
)


def counted(record: Record) -> bool:
    """False for a record marked ``"counted": false``: a process that compiled its kernels while timed."""
    return record.get("counted", True) is not False


CPU_ROW = lambda record: (record.get("machine", ""), size(record), -cores(record), system_rank(record), plan(record))  # noqa: E731

SCENARIOS: dict[str, Scenario] = {
    "one-stream": Scenario(
        files=("single-stream.jsonl",),
        command="python -m bench.run_all --sizes SIZE --systems orator faster official --frames 150 --runs 3",
        row=lambda record: (size(record), system_rank(record)),
        columns=WHOLE_SYNTHESIS + (Column("peak GPU memory, GB", gigabytes),),
    ),
    "many-streams": Scenario(
        files=("many-streams.jsonl",),
        command="python -m bench.run_batch --model SIZE --frames 150 --http --decoder-dtype bfloat16 "
                "--client-processes 4 --streams N ...",
        keep=lambda record: "many-streams" in record.get("cited_by", ()),
        row=lambda record: (size_of_model(record), record["streams"], record["path"].split()[0]),
        show=lambda row: row[2] == "engine",
        columns=(
            Column("size", lambda found, _: size_of_model(found[0])),
            Column("streams", lambda found, _: str(found[0]["streams"])),
            Column("engine audio-s/s", figure("audio_s_per_s")),
            Column("engine first audio p50 / p95, ms",
                   lambda found, rows: f"{figure('ttfa_p50_ms')(found, rows)} / {figure('ttfa_p95_ms')(found, rows)}"),
            many_streams_http("audio"),
            many_streams_http("ttfa"),
            Column("process warm-up, s", figure("warmup_s")),
        ),
    ),
    "live-text": Scenario(
        files=("live-text.jsonl",),
        command="python -m bench.run_live --model DIR --device cuda [--batch N] --sessions 1 8 --tokens-per-s 30 "
                "--frames 64 --runs 3",
        row=lambda record: (record["batch"], record["sessions"]),
        columns=(
            Column("backend", lambda found, _: "single" if found[0]["batch"] <= 1
                   else f"`--batch {found[0]['batch']}`"),
            Column("size", lambda found, _: size_of_model(found[0])),
            Column("sessions", lambda found, _: str(found[0]["sessions"])),
            Column("first audio p50 / p90, ms", lambda found, rows: f"{figure('first_audio_ms_p50')(found, rows)} / "
                                                                     f"{figure('first_audio_ms_p90')(found, rows)}"),
            Column("tail p50 / p90, ms", lambda found, rows: f"{figure('tail_ms_p50')(found, rows)} / "
                                                              f"{figure('tail_ms_p90')(found, rows)}"),
        ),
    ),
    "cpu": Scenario(
        files=("cpu-runs.jsonl",),
        command="CUDA_VISIBLE_DEVICES= python -m bench.run_all --sizes SIZE --systems orator official --frames 40 "
                "--runs 2 --chunks 1 --device cpu --cores N",
        run_group=lambda record: (),
        row=CPU_ROW,
        columns=CPU_SYNTHESIS + (Column("÷ official ×RT", against_official),),
    ),
    "cpu-2-cores": Scenario(
        files=("cpu-2-cores-zen4.jsonl", "cpu-2-cores-xeon-host.jsonl"),
        command="python -m bench.run_all --sizes 0.6b --systems orator official --frames 40 --runs 2 --chunks 1 "
                "--device cpu --cores 2",
        run_group=lambda record: (record.get("machine"),),
        row=CPU_ROW,
        per_machine=True,
        columns=CPU_SYNTHESIS[:1] + CPU_SYNTHESIS[3:] + (Column("÷ official ×RT", against_official),),
    ),
    "cpu-one-engine": Scenario(
        files=("cpu-one-engine-zen3.jsonl", "cpu-one-engine-xeon8.jsonl"),
        command="python -m bench.cpu_ab --before 3f43688 --cores N --runs 3 --machine NAME --out FILE",
        keep=counted,
        per_machine=True,
        row=lambda record: (size(record), -cores(record), system_rank(record), record.get("variant") or ""),
        columns=SIDE_BY_SIDE,
        optional=True,
    ),
    "cpu-avx2": Scenario(
        files=("cpu-2-cores-xeon-avx2.jsonl",),
        command="CUDA_VISIBLE_DEVICES= python -m bench.run_all --sizes 0.6b --systems orator official --frames 40 "
                "--runs 3 --chunks 1 --device cpu --cores 2",
        keep=counted,
        row=lambda record: (size(record), -cores(record), record.get("variant") or "", system_rank(record)),
        columns=SIDE_BY_SIDE,
        optional=True,
    ),
    "cpu-cold-start": Scenario(
        files=("cpu-cold-start.jsonl",),
        command="python -m bench.cold_start --model DIR --cores 2 --runs 3 --machine NAME --out FILE",
        run_group=lambda record: (record.get("machine"),),
        per_machine=True,
        row=lambda record: (size(record), -cores(record), record.get("variant") == "cached"),
        columns=(
            Column("cache", lambda found, _: found[0].get("variant") or "–"),
            Column("size", lambda found, _: size(found[0])),
            Column("cores", lambda found, _: str(cores(found[0]))),
            Column("load, s", figure("load_s")),
            Column("first audio from the command's start, s", figure("first_audio_s")),
            Column("kernels compiled, s", figure("warmup_s")),
            Column("Welcome measurement, s", figure("welcome_s")),  # the Welcome dialog's speed measurement
            Column("plan at first audio", lambda found, _: plan_path(found[0].get("plan", ""))),
        ),
        optional=True,
    ),
    "soak": Scenario(
        files=("soak.jsonl",),
        command="python -m bench.soak --backends 1 4 --duration SECONDS",
        keep=lambda record: bool(record.get("summary")),
        row=lambda record: (record["backend"],),
        columns=(
            Column("backend", lambda found, _: found[0]["backend"]),
            Column("minutes", lambda found, _: number(found[0]["duration_s"] / 60)),
            Column("requests", lambda found, _: f"{found[0]['requests']:,}"),
            Column("failed", lambda found, _: str(sum(found[0]["failed"].values()))),
            Column("RSS start → end (peak), MB", lambda found, _: f"{number(found[0]['rss_start_mb'])} → "
                   f"{number(found[0]['rss_end_mb'])} ({number(found[0]['rss_max_mb'])})"),
            Column("growth, MB per 1,000 requests", figure("growth_mb_per_1000")),
        ),
    ),
}
