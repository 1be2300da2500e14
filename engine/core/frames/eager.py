"""The eager streamer: frames from ``FrameGenerator`` grouped into chunks and decoded to audio.

A streamer turns one prompt at a time into (codes, audio) chunks and keeps the codec decoder's
streaming state across the segments of one call. ``engine.core.frames.graphs.runner.GraphStreamer`` has the
same interface and replays CUDA graphs; this one is the reference the fast path must equal.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import torch

from engine.core.cpu.numba_cache import cold_start
from engine.core.cpu.numba_predictor import NumbaPredictorFrame
from engine.core.cpu.one_position import one_position_stacks
from engine.core.cpu.one_position_numba import NumbaBoundStep, numba_stacks
from engine.core.cpu.threads import ThreadGovernor
from engine.core.frames.codes import TalkerLogitsProcessor, predict_codes, predict_codes_by_position, sample_code0
from engine.core.frames.guard import FrameGuard
from engine.core.model.talker import Talker
from engine.core.prompts import Prompt
from engine.core.sampling import Sampling, StageSettings

if TYPE_CHECKING:
    from engine.core.live_track import LiveTrack

# (codes int64 [n, 16], audio float32 [n * 1920] or None, True if known to end the segment); n is 0 only on a
# segment's closing piece after a cut that fell on a chunk boundary
CodedAudio = Iterator[tuple[np.ndarray, np.ndarray | None, bool]]


class FrameGenerator:
    """Generates frames for one prompt (batch 1) on the eager path."""

    def __init__(self, talker: Talker, prompt: Prompt, sampling: Sampling, max_frames: int, seed: int = 0,
                 live: LiveTrack | None = None, governor: ThreadGovernor | None = None):
        """``live``: the trailing text of a segment still arriving (``engine.core.text.live_text``), waited for row by
        row; ``max_frames`` is then the most its budget can be. ``governor``: chooses the CPU threads of each frame from
        the frame times it is told (``engine.core.cpu.threads``). On the fast CPU path (int8 layers) every step after
        the prefill goes one position at a time through ``engine.core.cpu.one_position_numba`` (where Numba compiles it)
        or ``engine.core.cpu.one_position``; where it is Numba's, the prompt's rows go through the same kernel."""
        self.talker, self.prompt, self.max_frames = talker, prompt, max_frames
        self.live, self.governor = live, governor
        c = talker.config
        dev = talker.codec_head.weight.device
        self.device, self.dtype = dev, talker.codec_head.weight.dtype
        self.eos = c.codec_eos_token_id
        self.talker_settings = StageSettings.allocate(1, dev)
        self.talker_settings.set_row(0, sampling.greedy, sampling.temperature, sampling.top_k, sampling.top_p)
        self.predictor_settings = StageSettings.allocate(1, dev)
        self.predictor_settings.set_row(0, sampling.predictor_greedy, sampling.sub_temperature,
                                        sampling.sub_top_k, sampling.sub_top_p)
        self.processor = TalkerLogitsProcessor(c.vocab_size, self.eos, 1, dev)
        self.processor.penalty[0] = sampling.repetition_penalty
        self.processor.min_frames[0] = sampling.min_frames
        self.seeds = torch.full((1,), seed, dtype=torch.int64, device=dev)
        self.cache = talker.model.new_cache(1, prompt.length + max_frames, self.dtype, dev)
        pc = talker.code_predictor.config
        self.predictor_cache = talker.code_predictor.model.new_cache(1, pc.num_code_groups, self.dtype, dev)
        stacks = one_position_stacks(talker)
        self.talker_step = self.predictor_pass = None
        self.heads = None  # the code predictor's heads where they are not ``cp.head(j)`` (the Numba steps')
        self.fused = None  # the Numba steps' whole predictor frame (engine.core.cpu.numba_predictor)
        self.embedded = None  # the last frame's embedding sum where ``fused`` made it
        jitted = numba_stacks(talker, stacks) if stacks is not None else None
        if jitted is not None:
            stacks, self.heads = jitted[:2], jitted[2]
        if stacks is not None:
            self.talker_step, self.predictor_pass = stacks[0].over(self.cache), stacks[1].over(self.predictor_cache)
            if jitted is not None:
                self.fused = NumbaPredictorFrame(talker, self.predictor_pass, self.heads)

    @torch.inference_mode()
    def frames(self) -> Iterator[torch.Tensor]:
        """Yield frames as int64 tensors of shape [16] until EOS or ``max_frames``."""
        t = self.talker
        L = self.prompt.length
        hidden = self.prefill()  # [1, H]
        step, governor = 0, self.governor
        while step < self.budget():
            started = time.perf_counter()
            if governor is not None:
                governor.before_frame()
            frame = torch.full((1,), step, device=self.device)
            code0 = sample_code0(t, hidden, frame, self.processor, self.talker_settings, self.seeds)  # [1]
            if code0.item() == self.eos:
                return
            codes = self._codes(hidden, code0, frame)  # [1, 16]
            spent = time.perf_counter() - started
            yield codes[0]
            if step + 1 >= self.budget():
                return
            if self.live is not None and not self.live.wait_for_row(step):
                return  # cancelled while the text was awaited
            resumed = time.perf_counter()  # the consumer's time (decoding a chunk) and the text's are not the frame's
            x = (t.embed_frame(codes) if self.embedded is None else self.embedded) + self.trailing(step)  # [1, H]
            if self.talker_step is not None:
                hidden = self.talker_step(x, L + step)
            else:
                pos = torch.full((1, 1), L + step, device=self.device)
                hidden = t.model(x[:, None], pos, self.cache, kv_len=L + step + 1)[:, -1]
            if governor is not None:
                governor.after_frame((spent + time.perf_counter() - resumed) * 1000)
            step += 1

    def prefill(self) -> torch.Tensor:
        """The prompt through the talker into the cache: its last position's normed output [1, H]. Through the Numba
        step's rows where the frames step through Numba (the kernel and rounding of every later position), else the
        talker's own pass."""
        if isinstance(self.talker_step, NumbaBoundStep):
            return self.talker_step.rows(self.prompt.embeds, 0)
        positions = torch.arange(self.prompt.length, device=self.device)[None]  # [1, L]
        return self.talker.model(self.prompt.embeds, positions, self.cache, kv_len=self.prompt.length)[:, -1]

    def budget(self) -> int:
        """The most frames of this prompt: ``max_frames``, or a live segment's budget once it is final."""
        return self.max_frames if self.live is None else min(self.max_frames, self.live.budget)

    def _codes(self, hidden, code0, frame) -> torch.Tensor:
        self.embedded = None
        if self.fused is not None and self.fused.takes(self.predictor_settings):
            codes, self.embedded = self.fused(hidden, code0, self.predictor_settings, self.seeds, frame)
            return codes
        if self.predictor_pass is not None:
            return predict_codes_by_position(self.talker, self.predictor_pass, hidden, code0, self.predictor_settings,
                                             self.seeds, frame, self.heads)
        return predict_codes(self.talker, hidden, code0, self.predictor_cache, self.predictor_settings, self.seeds,
                             frame)

    def trailing(self, step: int) -> torch.Tensor:
        tr = self.prompt.trailing if self.live is None else self.live.rows
        return tr[:, step] if step < tr.shape[1] else self.prompt.pad_embed[:, 0]


class EagerStreamer:
    def __init__(self, talker: Talker, decoder, governor: ThreadGovernor | None = None):
        """``governor``: the CPU threads of every frame of every call (``engine.core.cpu.threads``), or None."""
        self.talker, self.decoder, self.governor = talker, decoder, governor
        self.device = talker.codec_head.weight.device
        self.decoder_state = decoder.new_state(1, self.device)

    @property
    def numba_steps(self) -> bool:
        """Whether the frames step through ``engine.core.cpu.one_position_numba`` (compiling it now if not yet)."""
        stacks = one_position_stacks(self.talker)
        return stacks is not None and numba_stacks(self.talker, stacks) is not None

    @torch.inference_mode()
    def warm_up(self) -> None:
        """Run what is compiled once now (the Numba steps' compile and check, then two frames of a silent prompt,
        which compile the predictor frame's Numba call), so the first call does not wait for the compiler."""
        if not self.numba_steps:
            return  # the PyTorch steps: nothing to compile
        w = self.talker.codec_head.weight
        zeros = torch.zeros(1, 4, w.shape[1], dtype=w.dtype, device=self.device)
        prompt = Prompt(zeros, zeros[:, :0], zeros[:, :1])
        for _ in FrameGenerator(self.talker, prompt, Sampling(greedy=True, min_frames=2), 2).frames():
            pass

    @torch.inference_mode()
    def begin(self, context_codes: np.ndarray | None, chunk_sizes=()) -> None:
        """Start a new call: clear the decoder state, then feed ``context_codes`` [T, 16] (audio dropped)."""
        self.decoder.reset(self.decoder_state)
        if context_codes is not None and len(context_codes):
            self.decoder.decode_chunk(torch.as_tensor(context_codes, device=self.device)[None], self.decoder_state)

    @torch.inference_mode()
    def segment(self, prompt: Prompt, sampling: Sampling, seed: int, max_frames: int,
                chunk_size: Callable[[], int], cancel: threading.Event | None, decode: bool = True,
                guard: FrameGuard | None = None, live: LiveTrack | None = None,
                first_at_once: bool = True) -> CodedAudio:
        """(codes int64 [n, 16], audio float32 [n * 1920], ends) chunks for one prompt; ``chunk_size()``
        gives the size of each next chunk. With ``decode=False`` the audio is None (codes only). ``guard``
        (default: one of ``max_frames``) cuts a segment that loops or reaches its budget; ``ends`` is True on
        the chunk where it does; an utterance that stops on EOS is only known to have ended after its last
        chunk. ``live``: the segment's text is still arriving (``engine.core.text.live_text``): a chunk is cut short
        when the next frame must wait for text, so what is made is heard at once. Every chunk decodes as it is made, so
        ``first_at_once`` (``GraphStreamer.segment``'s interface) changes nothing."""
        guard = guard or FrameGuard(max_frames)
        cold_start.at_segment_boundary()  # the one place the steps may change from PyTorch's to Numba's
        gen = FrameGenerator(self.talker, prompt, sampling, max_frames, seed, live, self.governor)
        buf: list[torch.Tensor] = []
        size = chunk_size()
        done = 0
        for frame in gen.frames():
            if cancel is not None and cancel.is_set():
                return
            if live is not None:
                guard.shrink(gen.budget())
            if guard.keep(frame[:1].cpu().numpy()):  # the frame's code 0, read back as EOS was
                buf.append(frame)
            done += 1
            starved = live is not None and not live.has_row(done - 1)
            if len(buf) >= size or guard.cut or (starved and buf):
                yield (*self._decode(buf, decode), guard.cut)
                buf, size = [], chunk_size()
            if guard.cut:
                return
        if buf and not (cancel is not None and cancel.is_set()):
            yield (*self._decode(buf, decode), False)

    def _decode(self, frames: list[torch.Tensor], decode: bool) -> tuple[np.ndarray, np.ndarray | None]:
        if not frames:
            return np.zeros((0, 16), np.int64), np.zeros(0, np.float32) if decode else None
        codes = torch.stack(frames)[None]  # [1, n, 16]
        if not decode:
            return codes[0].cpu().numpy(), None
        audio = self.decoder.decode_chunk(codes, self.decoder_state)  # [1, n * 1920]
        return codes[0].cpu().numpy(), audio[0].float().cpu().numpy()

