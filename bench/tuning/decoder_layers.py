"""Which layers of the codec decoder a batched decode spends its time in: one ``decode_chunk`` of n frames for
every row of a batch, run eagerly with a pair of CUDA events around each layer (forward hooks): the
pre-transformer, every causal convolution (with the activation it applies to its input and the join with
its remembered frames), every ConvNeXt block. Repeated and medianed. Prints one JSON line per layer,
costliest first: its module path, type, input and output shapes and milliseconds, then a line with the
total of the outermost layers and the whole decode's time. A kernel profile names kernels
(``profile_batch --kernels``); this names the layer behind each.

    python -m bench.tuning.decoder_layers --model DIR [--rows 64] [--frames 4] [--dtype bfloat16] [--top 20]

Eager, so each layer's time includes the gaps between its kernels' launches: small layers look slower than
inside the captured graph, the large ones as they are. On a CPU the times are wall times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from bench.common import device_name
from engine.core.checkpoint import resolve_model_dir
from engine.core.codec.conv import ConvNeXtBlock, StreamingLayer
from engine.core.codec.decoder import SpeechDecoder

TIMED = (StreamingLayer, ConvNeXtBlock)  # the causal convolutions (and their activations), the ConvNeXt blocks


class LayerClock:
    """Forward hooks timing every ``TIMED`` layer (and the decoder's pre-transformer) of ``decoder``: CUDA
    events on a GPU, read once the decode is synchronised; wall time elsewhere."""

    def __init__(self, decoder: SpeechDecoder, device: torch.device):
        self.cuda = device.type == "cuda"
        self.times: dict[str, list[float]] = {}
        self.shapes: dict[str, tuple[list[int], list[int]]] = {}
        self.kinds: dict[str, str] = {}
        self._open: dict[str, object] = {}
        self._pending: list[tuple[str, object, object]] = []
        self._handles = []
        for name, module in decoder.named_modules():
            if isinstance(module, TIMED) or name == "pre_transformer":
                self.kinds[name] = type(module).__name__
                self._handles.append(module.register_forward_pre_hook(self._start(name)))
                self._handles.append(module.register_forward_hook(self._stop(name)))

    def _mark(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def _start(self, name):
        def hook(module, args):
            self._open[name] = self._mark()
            self.shapes.setdefault(name, (list(args[0].shape), []))
        return hook

    def _stop(self, name):
        def hook(module, args, output):
            self._pending.append((name, self._open.pop(name), self._mark()))
            self.shapes[name] = (self.shapes[name][0], list(output.shape))
        return hook

    def collect(self) -> None:
        """Add the marks of the last decode (synchronised first) to ``times``."""
        if self.cuda:
            torch.cuda.synchronize()
        for name, start, stop in self._pending:
            ms = start.elapsed_time(stop) if self.cuda else (stop - start) * 1000
            self.times.setdefault(name, []).append(ms)
        self._pending = []

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()


def profile_layers(decoder: SpeechDecoder, rows: int, frames: int, device: torch.device,
                   repeats: int = 5) -> tuple[list[dict], float]:
    """(one record per timed layer, costliest first; median ms of a whole decode without hooks)."""
    state = decoder.new_state(rows, device)
    codes = torch.randint(0, decoder.cfg.codebook_size, (rows, frames, decoder.cfg.num_quantizers), device=device)

    def decode():
        decoder.decode_chunk(codes, state, validate=False)
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    with torch.inference_mode():
        decode()  # warm-up: cuDNN plans, Triton compiles
        whole = []
        for _ in range(repeats):
            start = time.perf_counter()
            decode()
            whole.append((time.perf_counter() - start) * 1000)
        clock = LayerClock(decoder, device)
        try:
            for _ in range(repeats):
                decode()
                clock.collect()
        finally:
            clock.remove()
    layers = [{"layer": name, "type": clock.kinds[name], "input": clock.shapes[name][0],
               "output": clock.shapes[name][1], "ms": round(statistics.median(ms), 4)}
              for name, ms in clock.times.items()]
    return sorted(layers, key=lambda layer: -layer["ms"]), statistics.median(whole)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a model directory (its speech_tokenizer/ is loaded)")
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--frames", type=int, default=4)
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--top", type=int, default=20, help="print the N costliest layers (0: all)")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    directory = Path(resolve_model_dir(args.model)) / "speech_tokenizer"
    decoder = SpeechDecoder.from_dir(directory, device=device, dtype=getattr(torch, args.dtype))
    layers, whole_ms = profile_layers(decoder, args.rows, args.frames, device)
    for layer in layers[: args.top or None]:
        print(json.dumps(layer), flush=True)
    names = {x["layer"] for x in layers}
    outermost = [x for x in layers if not any(x["layer"].startswith(f"{name}.") for name in names)]
    total = sum(x["ms"] for x in outermost)  # a ConvNeXt block's convolution is inside the block: counted once
    print(json.dumps({"device": device_name(device), "dtype": args.dtype, "rows": args.rows, "frames": args.frames,
                      "layers_ms": round(total, 3), "decode_ms": round(whole_ms, 3)}), flush=True)


if __name__ == "__main__":
    main()
