"""``DecodeGraph``: the codec decoder's streaming ``decode_chunk`` for a fixed number of frames and rows, captured
as a CUDA graph (or run eagerly over the same static buffers); the single stream and the batched loop both replay
it."""

from __future__ import annotations

import torch

from engine.core.frames.graphs.capture import Graphed
from engine.core.runtime import autotuned_convolutions


class DecodeGraph:
    """The decoder's ``decode_chunk`` for exactly n frames of every row of ``decoder_state``, captured over
    static input/output buffers (the output buffer is rewritten by the next call), each convolution with
    the cuDNN algorithm timed fastest for its shape."""

    def __init__(self, decoder, decoder_state, n: int, device, enabled, pool, capture_stream=None):
        batch = decoder_state.batch
        self.codes = torch.zeros(batch, n, decoder.cfg.num_quantizers, dtype=torch.int64, device=device)
        self.audio = torch.zeros(batch, n * decoder.samples_per_frame, dtype=torch.float32, device=device)

        def run():
            self.audio.copy_(decoder.decode_chunk(self.codes, decoder_state, validate=False))

        with autotuned_convolutions():  # its warm-up calls pick each convolution's fastest algorithm
            self.graph = Graphed(run, device, enabled, pool=pool, name=f"{n}-frame decoder",
                                 capture_stream=capture_stream)

    def __call__(self, codes: torch.Tensor) -> torch.Tensor:
        self.codes.copy_(codes)
        self.graph()
        return self.audio
