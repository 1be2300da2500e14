"""A prompt's prefill on the fast CPU path with each form of its many-row int8 products (``engine.core.cpu.int8``:
``integer``, ``bf16``, ``kernel``; ``integer-layers-pytorch``, the integer form with the layers' other
operations in PyTorch instead of ``engine.core.cpu.prompt_numba``'s loops, and ``integer-pytorch``, also its rounding
and joining in PyTorch's operations instead of ``engine.core.cpu.prompt_rows_numba``'s), timed in alternating rounds
on one model, with the outputs' distance from the ``integer`` form's, and the form the engine takes here
(``prefill_form``).

    taskset -c 0-7 python -m bench.tuning.cpu_prefill --model DIR [--threads 8] [--tokens 109 16] [--rounds 3]

Prints one JSON line: for each prompt length, each form's milliseconds a round, and the relative RMS distance of its
last hidden state from the ``integer`` form's.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from bench.common import device_name
from engine import Engine
from engine.core.cpu import int8, prompt_numba, prompt_rows_numba


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--tokens", type=int, nargs="+", default=[109, 16])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if min(args.tokens) < int8.GEMM_ROWS:
        ap.error(f"prompts of fewer than {int8.GEMM_ROWS} tokens take the one-row kernel in every form")
    eng = Engine.from_pretrained(args.model, device="cpu", dtype=torch.float32, cpu_int8=True)
    if args.threads:
        torch.set_num_threads(args.threads)
    talker = eng.model.talker
    forms = int8.prefill_forms()
    if "integer" in forms and prompt_rows_numba.runs_here():
        forms[1:1] = ["integer-layers-pytorch", "integer-pytorch"]
    chosen, loops, takes = int8.prefill_form, prompt_rows_numba.runs_here, prompt_numba.takes
    report = {"device": device_name("cpu"), "chosen": chosen(), "forms": forms}
    g = torch.Generator().manual_seed(0)
    try:
        with torch.inference_mode():
            for n in args.tokens:
                x = torch.randn(1, n, talker.model.layers[0].self_attn.qkv_weight.shape[1], generator=g) * 0.05
                positions = torch.arange(n)[None]
                cache = talker.model.new_cache(1, n, torch.float32, "cpu")
                times, outs = {f: [] for f in forms}, {}
                for r in range(args.rounds + 1):  # the first round untimed
                    for form in forms:
                        int8.prefill_form = lambda form=form: form.split("-")[0]
                        prompt_rows_numba.runs_here = loops if form != "integer-pytorch" else lambda: False
                        prompt_numba.takes = takes if form == "integer" else lambda *a: False
                        start = time.perf_counter()
                        outs[form] = talker.model(x, positions, cache, kv_len=n)[:, -1]
                        if r:
                            times[form].append(round((time.perf_counter() - start) * 1e3, 2))
                base = outs.get("integer", outs[forms[0]]).double()
                report[f"{n}_ms"] = times
                report[f"{n}_distance"] = {f: float((o.double() - base).norm() / base.norm()) for f, o in outs.items()}
    finally:
        int8.prefill_form, prompt_rows_numba.runs_here, prompt_numba.takes = chosen, loops, takes
    report["threads"] = torch.get_num_threads()
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
