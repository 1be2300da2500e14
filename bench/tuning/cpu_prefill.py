"""A prompt's prefill on the fast CPU path: through the Numba layer body the frames step through (``numba-rows``:
``NumbaBoundStep.rows``, where the Numba steps run here), and through ``DecoderStack.forward`` with each form of
its many-row int8 products (``engine.core.cpu.int8``: ``integer``, ``bf16``, ``kernel``), timed in alternating
rounds on one model, with the outputs' distance from the first form's, and the way the engine takes here.

    ORATOR_CPU_WARMUP=0 taskset -c 0-7 python -m bench.tuning.cpu_prefill --model DIR [--threads 8] [--tokens 109 16]
        [--rounds 3]

Prints one JSON line: for each prompt length, each form's milliseconds a round, and the relative RMS distance of its
last hidden state from the first form's.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from bench.common import device_name
from engine import Engine
from engine.core.cpu import int8
from engine.core.cpu.one_position import one_position_stacks
from engine.core.cpu.one_position_numba import numba_stacks

NUMBA = "numba-rows"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--tokens", type=int, nargs="+", default=[109, 16])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if min(args.tokens) < int8.GEMM_ROWS:
        ap.error(f"prompts of fewer than {int8.GEMM_ROWS} tokens take the one-row kernel in every PyTorch form")
    eng = Engine.from_pretrained(args.model, device="cpu", dtype=torch.float32, cpu_int8=True)
    if args.threads:
        torch.set_num_threads(args.threads)
    talker = eng.model.talker
    stacks = one_position_stacks(talker)
    steps = numba_stacks(talker, stacks) if stacks is not None else None
    forms = ([NUMBA] if steps is not None else []) + int8.prefill_forms()
    chosen = int8.prefill_form
    report = {"device": device_name("cpu"), "chosen": NUMBA if steps is not None else chosen(), "forms": forms}
    g = torch.Generator().manual_seed(0)
    try:
        with torch.inference_mode():
            for n in args.tokens:
                x = torch.randn(1, n, talker.model.norm.weight.shape[0], generator=g) * 0.05
                positions = torch.arange(n)[None]
                cache = talker.model.new_cache(1, n, torch.float32, "cpu")
                step = steps[0].over(cache) if steps is not None else None
                times, outs = {f: [] for f in forms}, {}
                for r in range(args.rounds + 1):  # the first round untimed
                    for form in forms:
                        int8.prefill_form = lambda form=form: form
                        start = time.perf_counter()
                        if form == NUMBA:
                            outs[form] = step.rows(x, 0)
                        else:
                            outs[form] = talker.model(x, positions, cache, kv_len=n)[:, -1]
                        if r:
                            times[form].append(round((time.perf_counter() - start) * 1e3, 2))
                base = outs[forms[0]].double()
                report[f"{n}_ms"] = times
                report[f"{n}_distance"] = {f: float((o.double() - base).norm() / base.norm()) for f, o in outs.items()}
    finally:
        int8.prefill_form = chosen
    report["threads"] = torch.get_num_threads()
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
