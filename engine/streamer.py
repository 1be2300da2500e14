"""The eager streamer: frames from ``FrameGenerator`` grouped into chunks and decoded to audio.

A streamer turns one prompt at a time into (codes, audio) chunks and keeps the codec decoder's
streaming state across the segments of one call. ``engine.graphs.runner.GraphStreamer`` has the
same interface and replays CUDA graphs; this one is the reference the fast path must equal.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import numpy as np
import torch

from engine.generate import FrameGenerator
from engine.model.talker import Talker
from engine.prompts import Prompt
from engine.sampling import Sampling

# (codes int64 [n, 16], audio float32 [n * 1920] or None, True if known to end the segment)
CodedAudio = Iterator[tuple[np.ndarray, np.ndarray | None, bool]]


class EagerStreamer:
    def __init__(self, talker: Talker, decoder):
        self.talker, self.decoder = talker, decoder
        self.device = talker.codec_head.weight.device
        self.decoder_state = decoder.new_state(1, self.device)

    @torch.inference_mode()
    def begin(self, context_codes: np.ndarray | None, chunk_sizes=()) -> None:
        """Start a new call: clear the decoder state, then feed ``context_codes`` [T, 16] (audio dropped)."""
        self.decoder.reset(self.decoder_state)
        if context_codes is not None and len(context_codes):
            self.decoder.decode_chunk(torch.as_tensor(context_codes, device=self.device)[None], self.decoder_state)

    @torch.inference_mode()
    def segment(self, prompt: Prompt, sampling: Sampling, seed: int, max_frames: int,
                chunk_size: Callable[[], int], cancel: threading.Event | None, decode: bool = True) -> CodedAudio:
        """(codes int64 [n, 16], audio float32 [n * 1920], ends) chunks for one prompt; ``chunk_size()``
        gives the size of each next chunk. With ``decode=False`` the audio is None (codes only). ``ends``
        is True on a chunk that reaches ``max_frames``; an utterance that stops on EOS is only known
        to have ended after its last chunk."""
        gen = FrameGenerator(self.talker, prompt, sampling, max_frames, seed)
        buf: list[torch.Tensor] = []
        size = chunk_size()
        done = 0
        for frame in gen.frames():
            if cancel is not None and cancel.is_set():
                return
            buf.append(frame)
            done += 1
            if len(buf) >= size or done == max_frames:
                yield (*self._decode(buf, decode), done == max_frames)
                buf, size = [], chunk_size()
        if buf and not (cancel is not None and cancel.is_set()):
            yield (*self._decode(buf, decode), False)

    def _decode(self, frames: list[torch.Tensor], decode: bool) -> tuple[np.ndarray, np.ndarray | None]:
        codes = torch.stack(frames)[None]  # [1, n, 16]
        if not decode:
            return codes[0].cpu().numpy(), None
        audio = self.decoder.decode_chunk(codes, self.decoder_state)  # [1, n * 1920]
        return codes[0].cpu().numpy(), audio[0].float().cpu().numpy()
