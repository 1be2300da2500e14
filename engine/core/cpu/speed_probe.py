"""How fast this CPU would read with each model size, measured in seconds before any model is downloaded.

The first-run dialog tells a user without a GPU what speed to expect, and which size keeps up with a listener,
from a measurement rather than a guess. A model of the size's real shapes is built with placeholder weights
(int8 projections of constant value, as the fast CPU path holds them; everything else filled with a small
constant: a CPU's speed on dense products does not depend on the values), and the engine's own eager frame loop
(``engine.core.frames.eager.FrameGenerator``) and codec decoder run on it for a fixed number of frames. The figure is
the fast plan's (``engine.core.execution_plan``) as a model loaded now would speak its first words: through the Numba
loops where they are compiled already (in the cache), else through PyTorch's int8 steps, which compile nothing (the
cold-start bridge's), so a measurement never waits for a compiler; ``CpuSpeed.plan`` says which. Each thread count
the engine chooses between is measured for ``FRAMES`` frames after an untimed first (its one-time costs), and the
faster kept; a caller measuring several sizes passes the first one's count to the others (``threads``).
bench/cpu_probe_accuracy.py compares the figure with a real model's on the same plan.

Only what a frame reads is made the way the engine holds it. Every weight a frame reads is written (memory never
written reads as one shared page of zeros, cached, and would time far too fast); the code predictor's 15 codebook
tables, of which a frame reads one row each, are one table (which the Numba steps' projected rows,
``engine.core.cpu.numba_predictor.PredictorTables``, then project once, not 15 times); the codec decoder is made in
the dtype it runs in, and measured once a process.
"""

from __future__ import annotations

import contextlib
import functools
import time
from dataclasses import dataclass

import torch
from torch import nn

from engine.core.chunks import SAMPLE_RATE, SAMPLES_PER_FRAME
from engine.core.config import ModelConfig
from engine.core.cpu.int8 import Int8Weight, quantize_layers
from engine.core.cpu.threads import ThreadGovernor
from engine.core.model import Qwen3TTS
from engine.core.model.layers import fuse_projections
from engine.core.runtime import fast_cpu_decoder_dtype, use_cpu_threads

FRAME_S = SAMPLES_PER_FRAME / SAMPLE_RATE  # 80 ms of audio a frame
DECODE_CHUNK = 4  # frames a streamed chunk decodes at once (the studio's default)
FRAMES = 3  # timed frames per thread count, each after an untimed first: a few frames' work, never a compile
PREPARING = " while the compiled steps are prepared"  # the plan measured is the bridge's


@dataclass(frozen=True)
class CpuSpeed:
    size: str  # "0.6b" or "1.7b"
    frame_ms: float  # one frame generated (talker step and 15 predictor steps)
    decode_ms: float  # one frame's share of decoding a 4-frame chunk
    threads: int
    plan: str = ""  # the plan measured: "fast: numba-int8", "fast: torch-int8 while the compiled ..."

    @property
    def realtime_factor(self) -> float:
        """Seconds of audio made per second: at 1 or more, reading aloud never waits for speech."""
        return FRAME_S * 1000 / (self.frame_ms + self.decode_ms)


def measure_cpu_speed(size: str, frames: int = FRAMES, threads: int | None = None) -> CpuSpeed:
    """Generate ``frames`` frames at each thread count the fast path chooses between (after an untimed first) and
    decode a chunk, on a model of ``size`` with placeholder weights, on the plan a model loaded now would start on
    (``measured_path``); ``threads``: one count instead (``engine.core.runtime.cpu_threads``), e.g. the count an
    earlier size's measurement found faster (its ``threads``): the sizes' frames are the same operations on wider
    weights, so the faster count of one is the other's, and the second size is measured at one count only."""
    from engine.synthetic.checkpoint import config_dict

    if frames < 1:
        raise ValueError(f"frames must be at least 1, not {frames!r}")
    path = measured_path()
    governor = ThreadGovernor.for_this_machine() if threads is None else None  # as the fast path chooses
    counts = tuple(governor.choices) if governor is not None else (use_cpu_threads(threads),)
    with torch.inference_mode(), _flushed_denormals():
        talker = placeholder_talker(ModelConfig.from_dict(config_dict(size, "custom_voice")))
        if path == "torch-int8":
            use_pytorch_steps(talker)
        frame_ms, used = _frame_ms(talker, frames, counts)
        del talker
        use_cpu_threads(used)
        decode_ms = _decode_ms(used)
    note = PREPARING if path == "torch-int8" and _numba_usable() else ""
    return CpuSpeed(size, frame_ms, decode_ms, used, f"fast: {path}{note}")


def measured_path() -> str:
    """The fast plan's path a model loaded now would speak its first words on, of those that compile nothing
    now: the Numba loops where they are compiled already, else PyTorch's int8 steps."""
    from engine.core.execution_plan import kernels_ready, planned

    plan = planned("cpu", "fast")
    return plan.path if plan.path.startswith("numba") and kernels_ready() else "torch-int8"


def _numba_usable() -> bool:
    from engine.core.execution_plan import planned

    return planned("cpu", "fast").path.startswith("numba")


def use_pytorch_steps(talker) -> None:
    """Make ``talker``'s frames step through PyTorch's int8 steps: its Numba steps recorded as none
    (``engine.core.cpu.one_position_numba.numba_stacks`` keeps what it made, or None, per talker)."""
    from engine.core.cpu.one_position import one_position_stacks

    talker._numba_stacks = (one_position_stacks(talker), None)


def placeholder_talker(config: ModelConfig):
    """The talker of ``config`` with every weight the fast path quantizes an int8 constant and the rest a small
    constant; the text embedding table is left out (frames never read it)."""
    from engine.core.checkpoint import materialize_buffers

    with torch.device("meta"):
        net = Qwen3TTS(config)
    talker = net.talker
    talker.model.text_embedding = None
    quantize_layers(talker, lambda *pieces: Int8Weight.placeholder((sum(w.shape[0] for w in pieces),
                                                                    pieces[0].shape[1])))  # the fast path's int8
    fuse_projections(talker)
    talker.to_empty(device="cpu")
    tables = talker.code_predictor.model.codec_embedding
    # bfloat16, as checkpoints store them and the int8 load keeps them (``int8.keep_narrow``): the Numba kernels then
    # see the types they were compiled and cached for; a frame reads a row of each, so one table serves all
    shared = nn.Parameter(torch.empty(tables[0].weight.shape, dtype=torch.bfloat16), requires_grad=False)
    for table in tables:
        table.weight = shared
    for p in talker.parameters():
        p.requires_grad_(False).fill_(0.01)
    materialize_buffers(talker, torch.device("cpu"))
    return talker.eval()


def _frame_ms(talker, frames: int, counts: tuple[int, ...]) -> tuple[float, int]:
    """(mean ms a frame, thread count) of the fastest of ``counts``: each runs one untimed frame (the prefill and
    its first-call costs, a compile of what compiles on a first call) then ``frames`` timed ones."""
    from engine.core.frames.eager import FrameGenerator
    from engine.core.prompts import Prompt
    from engine.core.sampling import Sampling

    hidden = talker.codec_head.weight.shape[1]
    zeros = torch.zeros(1, 8, hidden)
    prompt = Prompt(zeros, zeros[:, :0], zeros[:, :1])
    limit = (frames + 1) * len(counts)
    made = FrameGenerator(talker, prompt, Sampling(greedy=True, min_frames=limit), limit).frames()
    means = {}
    for count in counts:
        use_cpu_threads(count)
        next(made)
        start = time.perf_counter()
        for _ in range(frames):
            next(made)
        means[count] = (time.perf_counter() - start) / frames * 1000
    fastest = min(means, key=means.get)
    return means[fastest], fastest


@functools.cache
def _decode_ms(threads: int) -> float:
    """One frame's share of decoding a chunk at ``threads``: the codec decoder is every size's, so it is measured
    once a process for each count."""
    from engine.core.codec.decoder import SpeechDecoder
    from engine.synthetic.speech_tokenizer import random_decoder

    decoder: SpeechDecoder = random_decoder("full", seed=0, device="meta").to(fast_cpu_decoder_dtype())
    decoder.to_empty(device="cpu")  # made in the dtype it runs in: no float32 copy written and converted
    for p in decoder.parameters():
        p.requires_grad_(False).fill_(0.01)
    for b in decoder.buffers():
        b.fill_(1.0)
    state = decoder.new_state(1)
    codes = torch.zeros(1, DECODE_CHUNK, 16, dtype=torch.int64)
    decoder.decode_chunk(codes, state)
    start = time.perf_counter()
    decoder.decode_chunk(codes, state)
    return (time.perf_counter() - start) * 1000 / DECODE_CHUNK


@contextlib.contextmanager
def _flushed_denormals():
    """Placeholder activations may decay to subnormal numbers, which some CPUs compute far slower; real ones do
    not, so the measurement flushes them."""
    before = torch.set_flush_denormal(True)
    try:
        yield
    finally:
        if before:
            torch.set_flush_denormal(False)
