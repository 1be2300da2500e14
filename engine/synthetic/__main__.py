"""Command line: ``python -m engine.synthetic OUT --size tiny|tiny-equal|0.6b|1.7b --type
base|custom_voice|voice_design``."""

from __future__ import annotations

import argparse
import time

from engine.synthetic.checkpoint import SIZES, TYPES, build_checkpoint


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m engine.synthetic", description=__doc__)
    ap.add_argument("out", help="directory to write (created if missing)")
    ap.add_argument("--size", choices=SIZES, default="tiny")
    ap.add_argument("--type", dest="model_type", choices=TYPES, default="custom_voice")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    path = build_checkpoint(args.out, args.size, args.model_type, args.seed)
    print(f"wrote {args.size} {args.model_type} checkpoint to {path} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
