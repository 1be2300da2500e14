"""``GraphStreamer``: the fast path for one stream, same interface as ``engine.core.frames.eager.EagerStreamer``.

Per chunk of n frames: n replays of the captured frame step, one read-back of the EOS marker (the
only wait for the device in the chunk) and of the chunk's code 0 for the runaway guard
(``engine.core.frames.guard``, a copy of n numbers once the device is idle), then one replay of the decoder
graph captured for n frames on the codes still on the device, and the copy of the audio to the host.
Frames sampled after EOS, or after the guard's cut, are never decoded, so the decoder state stays exact
across segments.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import torch

from engine.core.frames.capacity import HISTORY, MAX_SEQ, MAX_TRAILING
from engine.core.frames.compile import capture_frame_step
from engine.core.frames.eager import CodedAudio
from engine.core.frames.graphs.capture import graphs_enabled
from engine.core.frames.graphs.decode import DecodeGraph
from engine.core.frames.graphs.prefill import PrefillGraphs
from engine.core.frames.guard import FrameGuard
from engine.core.frames.state import NEVER, StaticState
from engine.core.model.talker import Talker
from engine.core.prompts import Prompt
from engine.core.sampling import Sampling

if TYPE_CHECKING:
    from engine.core.live_track import LiveTrack


class GraphStreamer:
    def __init__(self, talker: Talker, decoder, chunk_sizes=(1, 4), enabled: bool | None = None,
                 max_seq: int = MAX_SEQ):
        self.talker, self.decoder = talker, decoder
        self.device = talker.codec_head.weight.device
        self.enabled = enabled
        t0 = time.perf_counter()
        self.state = StaticState(talker, 1, max_seq, MAX_TRAILING, HISTORY)
        use_graphs = graphs_enabled(self.device) if enabled is None else enabled
        self.step, self.compiled = capture_frame_step(talker, self.state, self.device, use_graphs, "frame step")
        self.prefill = PrefillGraphs(talker, self.state, self.device, use_graphs, self.step.pool)
        self.decoder_state = decoder.new_state(1, self.device)
        self._decoders: dict[int, DecodeGraph] = {}
        self.prepare(chunk_sizes)
        self.capture_seconds = time.perf_counter() - t0

    def prepare(self, chunk_sizes) -> None:
        """Capture decoder graphs for these chunk sizes (and 1, for tails before EOS). Clears the decoder
        state, so call it between utterances only."""
        for n in {1, *chunk_sizes}:
            if n not in self._decoders:
                self._decoders[n] = DecodeGraph(self.decoder, self.decoder_state, n, self.device, self.enabled,
                                                self.step.pool)
        self.decoder.reset(self.decoder_state)

    @torch.inference_mode()
    def begin(self, context_codes: np.ndarray | None, chunk_sizes=()) -> None:
        self.prepare(chunk_sizes)
        if context_codes is not None and len(context_codes):
            self.decoder.decode_chunk(torch.as_tensor(context_codes, device=self.device)[None], self.decoder_state)

    @torch.inference_mode()
    def segment(self, prompt: Prompt, sampling: Sampling, seed: int, max_frames: int,
                chunk_size: Callable[[], int], cancel: threading.Event | None, decode: bool = True,
                guard: FrameGuard | None = None, live: LiveTrack | None = None,
                first_at_once: bool = True) -> CodedAudio:
        """``EagerStreamer.segment``; with ``live``, the trailing text is written into the state as it arrives, and a
        chunk ends early where its next step would wait for text. Every chunk decodes at once here (on the GPU, in
        its graph), so ``first_at_once`` changes nothing."""
        s = self.state
        room = s.max_seq - prompt.length
        max_frames = min(max_frames, room)
        guard = guard or FrameGuard(max_frames)
        s.prefill(self.talker, 0, Prompt(prompt.embeds, live.rows, prompt.pad_embed) if live else prompt,
                  sampling, seed, self.prefill)
        written = 0 if live is None else live.rows.shape[1]
        done = 0
        while done < (limit := min(max_frames if live is None else min(max_frames, live.budget), room)):
            if cancel is not None and cancel.is_set():
                return
            n = min(chunk_size(), limit - done, HISTORY)
            if live is not None:  # step f adds trailing row f to its next input
                n = min(live.runnable(done, n), min(max_frames, live.budget, room) - done)
                if n <= 0:
                    return  # cancelled while the text was awaited
                written = self._write_trailing(live, written)
            for _ in range(n):
                self.step()
            eos_at = int(s.eos_at[0])  # the chunk's one synchronisation
            valid = n if eos_at == NEVER else max(0, min(n, eos_at - done))
            if valid:  # the guard sees code 0 of the frames before EOS, before any is decoded
                if live is not None:
                    guard.shrink(min(max_frames, live.budget))
                valid = guard.keep(self._codes(done, valid)[0, :, 0].cpu().numpy())
            ends = valid < n or done + valid == limit or guard.cut
            if guard.cut and not valid:  # cut at a chunk boundary: the segment ends with an empty piece
                yield np.zeros((0, 16), np.int64), np.zeros(0, np.float32) if decode else None, True
            elif valid and decode:
                yield (*self._decode(done, valid), ends)
            elif valid:
                yield self._codes(done, valid)[0].cpu().numpy(), None, ends
            done += valid
            if valid < n or guard.cut:
                return

    def _write_trailing(self, live: LiveTrack, written: int) -> int:
        """Copy the trailing rows that arrived since ``written`` into the state (ordered before the next replay on
        the same stream); the rows now written."""
        rows = live.rows
        if rows.shape[1] > written:
            if rows.shape[1] > self.state.max_trailing:
                raise ValueError(f"trailing text of {rows.shape[1]} tokens exceeds {self.state.max_trailing}")
            self.state.trailing[0, written : rows.shape[1]] = rows[0, written:]
            self.state.trailing_len[0] = rows.shape[1]
        return rows.shape[1]

    def _codes(self, first: int, n: int) -> torch.Tensor:
        ring = torch.arange(first, first + n, device=self.device) % HISTORY
        return self.state.codes[:, ring]  # [1, n, 16]

    def _decode(self, first: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        codes = self._codes(first, n)
        if n in self._decoders:
            audio = self._decoders[n](codes)
        else:  # a short tail before EOS: frame by frame through the 1-frame graph (exact all the same)
            one = self._decoders[1]
            audio = torch.cat([one(codes[:, i : i + 1]).clone() for i in range(n)], dim=1)
        return codes[0].cpu().numpy(), audio[0].to("cpu", copy=True).numpy()  # the graph reuses its buffer
