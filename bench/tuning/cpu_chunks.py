"""What the codec decoder costs a frame on the CPU path by chunk size: ``decode_chunk`` of n frames as the engine
streams them (its CPU decoder dtype: bfloat16 where the processor has native bf16, else float32), the state carried
from call to call.

    taskset -c 0-7 python -m bench.tuning.cpu_chunks --model DIR [--threads 8] [--sizes 1 4 8 16 32]

Prints one JSON line: milliseconds a frame for each chunk size, medians of 5 calls after one untimed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from bench.common import device_name
from engine import Engine


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 8, 16, 32])
    args = ap.parse_args(argv)
    eng = Engine.from_pretrained(args.model, device="cpu", dtype=torch.float32)
    if args.threads:
        torch.set_num_threads(args.threads)
    report = {"device": device_name("cpu"), "threads": torch.get_num_threads(),
              "decoder_dtype": str(next(eng.decoder.parameters()).dtype)[6:], "ms_per_frame": {}}
    generator = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        state = eng.decoder.new_state(1, torch.device("cpu"))
        for n in args.sizes:
            codes = torch.randint(0, 2048, (1, n, 16), generator=generator)
            eng.decoder.decode_chunk(codes, state)
            times = []
            for _ in range(5):
                start = time.perf_counter()
                eng.decoder.decode_chunk(codes, state)
                times.append((time.perf_counter() - start) * 1e3 / n)
            report["ms_per_frame"][n] = round(statistics.median(times), 2)
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
