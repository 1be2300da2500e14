"""CPU matrix-vector kernels for one row of activations: which one reads decoder-layer weights fastest.

A CPU frame is one talker step and fifteen code-predictor steps, each a chain of projections applied to a
single row (docs/benchmarks.md#cpu-gemv). This times every candidate PyTorch offers for that product on the
fused projection shapes of a model, cycling through as many distinct weights as the model's layers hold
(so the working set is the model's, not one weight hot in L2):

- ``fp32``: ``F.linear`` on float32 weights (the exact path);
- ``bf16``: ``F.linear`` on bfloat16 weights and activations (oneDNN where the CPU has AVX512-BF16/AMX);
- ``int8pack``: ``aten._weight_int8pack_mm`` (weight-only int8, bf16 activations; ``engine.core.cpu.int8``);
- ``int8dyn``: fbgemm's dynamically quantized linear (int8 weights and activations, VNNI);
- ``int4pack``: ``aten._weight_int4pack_mm_for_cpu`` (weight-only int4, groups of 32; ``int4g64``, ``int4g128``:
  groups of 64 and 128);
- ``fp16fbgemm``: fbgemm's float16-weight linear (``quantized.linear_dynamic_fp16``: float32 activations);
- ``read8``: no product, the int8 weight's bytes read once (``amax``): the memory-bandwidth floor that a
  weight-only int8 product cannot beat.

    python -m bench.tuning.cpu_gemv --size 0.6b --threads 8
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F

# fused projections of one decoder layer (qkv, o, gate_up, down) and a predictor head, [N, K]
SHAPES = {
    "0.6b": [(4096, 1024), (1024, 2048), (6144, 1024), (1024, 3072), (2048, 1024)],
    "1.7b": [(4096, 2048), (2048, 2048), (12288, 2048), (2048, 6144), (2048, 1024)],
}


def candidates(w: torch.Tensor):
    """(name, fn(x)) for each kernel that runs on this CPU and build; x is [1, K] float32."""
    out = [("fp32", lambda x, w=w: F.linear(x, w))]
    wb = w.to(torch.bfloat16)
    out.append(("bf16", lambda x, wb=wb: F.linear(x.to(torch.bfloat16), wb)))
    scale = w.abs().amax(dim=1).clamp(min=1e-12) / 127
    q = torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8).contiguous()
    sb = scale.to(torch.bfloat16)
    out.append(("int8pack", lambda x, q=q, sb=sb: torch.ops.aten._weight_int8pack_mm(x.to(torch.bfloat16), q, sb)))
    out.append(("read8", lambda x, q=q: q.amax()))
    try:
        lin = torch.nn.Linear(w.shape[1], w.shape[0], bias=False)
        lin.weight.data.copy_(w)
        dq = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear}, dtype=torch.qint8)
        dq(torch.zeros(1, w.shape[1]))
        out.append(("int8dyn", lambda x, dq=dq: dq(x)))
    except Exception as e:  # not every build has fbgemm
        print("int8dyn unavailable:", e)
    try:
        packed16 = torch.ops.quantized.linear_prepack_fp16(w, None)
        out.append(("fp16fbgemm", lambda x, p=packed16: torch.ops.quantized.linear_dynamic_fp16(x, p)))
    except Exception as e:
        print("fp16fbgemm unavailable:", e)
    for group in (32, 64, 128):
        try:
            fn4 = _int4(w, group)
            fn4(torch.zeros(1, w.shape[1]))
            out.append(("int4pack" if group == 32 else f"int4g{group}", fn4))
        except Exception as e:
            print(f"int4 (groups of {group}) unavailable:", e)
    return out


def _int4(w: torch.Tensor, group: int):
    """``aten._weight_int4pack_mm_for_cpu`` on ``w`` rounded to 4 bits in groups of ``group`` along K."""
    wg = w.view(w.shape[0], -1, group)
    lo, hi = wg.amin(-1), wg.amax(-1)
    s = (hi - lo).clamp(min=1e-12) / 15
    qi = torch.round((wg - lo[..., None]) / s[..., None]).clamp(0, 15).to(torch.int32).view(w.shape)
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(qi, 1)
    zeros = lo + 8 * s  # the kernel takes scale and zero (value at code 8) per group
    sz = torch.stack([s, zeros], dim=-1).transpose(0, 1).contiguous().to(torch.bfloat16)  # [K/g, N, 2]
    return lambda x: torch.ops.aten._weight_int4pack_mm_for_cpu(x.to(torch.bfloat16), packed, group, sz)


def time_kernels(shapes, layers: int, repeats: int) -> dict[str, float]:
    """Microseconds per product, averaged over the shapes (each cycled over ``layers`` distinct weights)."""
    torch.manual_seed(0)
    per_kernel: dict[str, list[float]] = {}
    for n, k in shapes:
        weights = [torch.randn(n, k) * 0.02 for _ in range(layers)]
        fns = [candidates(w) for w in weights]
        x = torch.randn(1, k)
        for j, (name, _) in enumerate(fns[0]):
            for fs in fns:  # warm
                fs[j][1](x)
            t0 = time.perf_counter()
            for _ in range(repeats):
                for fs in fns:
                    fs[j][1](x)
            us = (time.perf_counter() - t0) / (repeats * layers) * 1e6
            per_kernel.setdefault(name, []).append(us)
            print(f"  [{n}x{k}] {name:9s} {us:8.1f} us  {n * k / us / 1e3:6.2f} Gweights/s")
    return {name: sum(v) for name, v in per_kernel.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=sorted(SHAPES), default="0.6b")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 4, 8])
    p.add_argument("--layers", type=int, default=5, help="distinct weights per shape (the predictor has 5 layers)")
    p.add_argument("--repeats", type=int, default=40)
    p.add_argument("--json", help="write the summary here")
    a = p.parse_args()
    print("cpu capability:", torch.backends.cpu.get_cpu_capability(), "torch", torch.__version__)
    summary = {}
    for t in a.threads:
        torch.set_num_threads(t)
        print(f"threads {t}:")
        with torch.inference_mode():
            summary[t] = time_kernels(SHAPES[a.size], a.layers, a.repeats)
        print("  one layer + head, us:", {k: round(v, 1) for k, v in summary[t].items()})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
