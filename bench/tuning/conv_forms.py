"""The codec decoder's convolution shapes as PyTorch's convolution and as one product over each output frame's
input window (``CausalConv1d._as_product``), on the CPU: milliseconds a call (the mean of 10 after one) and the
product's error.

    taskset -c 0-7 python -m bench.tuning.conv_forms [--dtype bfloat16] [--threads 8]

Each shape is (input channels, output channels, frames, kernel, dilation), as the 12 Hz decoder runs them for a
4-frame chunk (frames of the 24 kHz stages grow 8, 5, 4, 3 times over the upsampling).
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from bench.tuning.cpu_frame import timed

SHAPES = [(1024, 1536, 16, 7, 1), (768, 768, 128, 7, 1), (768, 768, 128, 7, 9), (384, 384, 640, 7, 3),
          (192, 192, 2560, 7, 9), (96, 96, 7680, 7, 1), (96, 96, 7680, 7, 9), (96, 1, 7680, 7, 1),
          (512, 1024, 4, 3, 1), (768, 768, 128, 1, 1), (96, 96, 7680, 1, 1)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--threads", type=int)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    for c_in, c_out, frames, kernel, dilation in SHAPES:
        x = torch.randn(1, c_in, frames + (kernel - 1) * dilation).to(dtype)
        w, b = torch.randn(c_out, c_in, kernel).to(dtype), torch.randn(c_out).to(dtype)
        rows = x[0].t().contiguous()  # [T + history, C_in], channels-last
        flat = w.permute(0, 2, 1).reshape(c_out, kernel * c_in).contiguous()

        def product(rows=rows, flat=flat, b=b, frames=frames, kernel=kernel, dilation=dilation):
            windows = torch.cat([rows[i * dilation : i * dilation + frames] for i in range(kernel)], 1)
            return F.linear(windows, flat, b)

        def convolution(x=x, w=w, b=b, dilation=dilation):
            return F.conv2d(x.unsqueeze(2), w.unsqueeze(2), b, dilation=(1, dilation))

        exact = F.conv1d(x.double(), w.double(), b.double(), dilation=dilation)[0].t()
        error = float((product().double() - exact).norm() / exact.norm())
        print({"shape": (c_in, c_out, frames, kernel, dilation), "conv_ms": round(timed(convolution, 10), 3),
               "product_ms": round(timed(product, 10), 3), "product_error": f"{error:.1e}"}, flush=True)


if __name__ == "__main__":
    main()
