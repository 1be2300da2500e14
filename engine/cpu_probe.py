"""How fast this CPU would read with each model size, measured in a second or two before any model is downloaded.

The first-run dialog tells a user without a GPU what speed to expect, and which size keeps up with a listener,
from a measurement rather than a guess. A model of the size's real shapes is built with placeholder weights
(int8 projections of constant value, as the fast CPU path holds them; everything else filled with a small
constant: a CPU's speed on dense products does not depend on the values), and the engine's own eager frame loop
(``engine.frames.eager.FrameGenerator``) and codec decoder run on it for a fixed time. The figure is the
engine's fast CPU path at the thread count it would use; the real model reads within a few percent of it (the
same code and shapes; what differs is the prompt's length).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import torch

from engine.audio.chunks import SAMPLE_RATE, SAMPLES_PER_FRAME
from engine.config import ModelConfig
from engine.frames.threads import ThreadGovernor
from engine.model import Qwen3TTS
from engine.model.int8 import Int8Weight, quantize_layers
from engine.model.layers import fuse_projections
from engine.runtime import fast_cpu_decoder_dtype, use_cpu_threads

FRAME_S = SAMPLES_PER_FRAME / SAMPLE_RATE  # 80 ms of audio a frame
DECODE_CHUNK = 4  # frames a streamed chunk decodes at once (the studio's default)


@dataclass(frozen=True)
class CpuSpeed:
    size: str  # "0.6b" or "1.7b"
    frame_ms: float  # one frame generated (talker step and 15 predictor steps)
    decode_ms: float  # one frame's share of decoding a 4-frame chunk
    threads: int

    @property
    def realtime_factor(self) -> float:
        """Seconds of audio made per second: at 1 or more, reading aloud never waits for speech."""
        return FRAME_S * 1000 / (self.frame_ms + self.decode_ms)


def measure_cpu_speed(size: str, seconds: float = 1.0, threads: int | None = None) -> CpuSpeed:
    """Generate frames for about ``seconds`` (at least 2 after a first one) and decode a chunk, on a model of
    ``size`` with placeholder weights; ``threads`` as the engine would choose (``engine.runtime.cpu_threads``)."""
    from engine.synthetic.checkpoint import config_dict

    used = use_cpu_threads(threads)
    governor = ThreadGovernor.for_this_machine() if threads is None else None  # as the fast path chooses
    with torch.inference_mode(), _flushed_denormals():
        talker = _placeholder_talker(ModelConfig.from_dict(config_dict(size, "custom_voice")))
        frame_ms = _frame_ms(talker, seconds, governor)
        del talker
        if governor is not None:
            used = use_cpu_threads(governor.fastest())
        decode_ms = _decode_ms()
    return CpuSpeed(size, frame_ms, decode_ms, used)


def _placeholder_talker(config: ModelConfig):
    """The talker of ``config`` with every weight the fast path quantizes an int8 constant and the rest a small
    constant; the text embedding table is left out (frames never read it)."""
    from engine.checkpoint import materialize_buffers

    with torch.device("meta"):
        net = Qwen3TTS(config)
    talker = net.talker
    talker.model.text_embedding = None
    quantize_layers(talker, lambda *pieces: Int8Weight.placeholder((sum(w.shape[0] for w in pieces),
                                                                    pieces[0].shape[1])))  # the fast path's int8
    fuse_projections(talker)
    talker.to_empty(device="cpu")
    for p in talker.parameters():
        p.requires_grad_(False).fill_(0.01)
    materialize_buffers(talker, torch.device("cpu"))
    return talker.eval()


def _frame_ms(talker, seconds: float, governor: ThreadGovernor | None = None) -> float:
    """Milliseconds a frame: the mean over the frames made, or with a ``governor`` its mean for the count it
    found fastest (the count the engine would read with)."""
    from engine.frames.eager import FrameGenerator
    from engine.prompts import Prompt
    from engine.sampling import Sampling

    hidden = talker.codec_head.weight.shape[1]
    zeros = torch.zeros(1, 8, hidden)
    prompt = Prompt(zeros, zeros[:, :0], zeros[:, :1])
    limit = 256
    frames = FrameGenerator(talker, prompt, Sampling(greedy=True, min_frames=limit), limit,
                            governor=governor).frames()
    next(frames)  # the first frame includes the prefill and first-call costs
    start, count = time.perf_counter(), 0
    for _ in frames:
        count += 1
        measured = governor is None or all(ms is not None for ms in governor.mean_ms.values())
        if count >= 2 and measured and time.perf_counter() - start >= seconds:
            break
    if governor is not None:
        return governor.mean_ms[governor.fastest()]
    return (time.perf_counter() - start) / count * 1000


def _decode_ms() -> float:
    from engine.codec.decoder import SpeechDecoder
    from engine.synthetic.speech_tokenizer import random_decoder

    decoder: SpeechDecoder = random_decoder("full", seed=0, device="meta")
    decoder.to_empty(device="cpu")
    for p in decoder.parameters():
        p.requires_grad_(False).fill_(0.01)
    for b in decoder.buffers():
        b.fill_(1.0)
    decoder.to(fast_cpu_decoder_dtype())
    state = decoder.new_state(1)
    codes = torch.zeros(1, DECODE_CHUNK, 16, dtype=torch.int64)
    decoder.decode_chunk(codes, state)
    start = time.perf_counter()
    decoder.decode_chunk(codes, state)
    return (time.perf_counter() - start) * 1000 / DECODE_CHUNK


@contextlib.contextmanager
def _flushed_denormals():
    """Placeholder activations may decay to subnormal numbers, which some CPUs compute a hundred times slower;
    real ones do not, so the measurement flushes them."""
    before = torch.set_flush_denormal(True)
    try:
        yield
    finally:
        if before:
            torch.set_flush_denormal(False)
