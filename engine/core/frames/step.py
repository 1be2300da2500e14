"""One frame for every slot, touching only the static buffers of ``StaticState`` (capture-safe).

No host synchronisation and no allocation that depends on data: positions, frame counters and the
EOS marker live on the device; the code of frame ``f`` of slot ``b`` lands in
``state.codes[b, f % history]``. The frame is three pieces around the 14 predictor steps and the
talker's layers, each of which ``engine.core.frames.compile`` may compile whole:
``frame_head`` (code 0, the EOS marker, code 1), ``predictor_step`` and ``next_input``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from engine.core.frames.codes import predict_codes, predictor_first, predictor_step, sample_code0
from engine.core.frames.state import NEVER, StaticState
from engine.core.model.talker import Talker


def frame_head(talker: Talker, s: StaticState) -> tuple[torch.Tensor, torch.Tensor]:
    """Codebook 0 (marking a first EOS in ``eos_at``) and codebook 1 of every slot: two [B] tensors."""
    eos = talker.config.codec_eos_token_id
    code0 = sample_code0(talker, s.hidden, s.frame, s.processor, s.talker_settings, s.seeds)  # [B]
    first_eos = (code0 == eos) & (s.eos_at == NEVER)
    s.eos_at.copy_(torch.where(first_eos, s.frame, s.eos_at))
    code1 = predictor_first(talker, s.hidden, code0, s.predictor_cache, s.predictor_settings, s.seeds, s.frame,
                            whole_cache=True)
    return code0, code1


def next_input(talker: Talker, s: StaticState, codes: torch.Tensor) -> torch.Tensor:
    """Store the frame's codes [B, 16] in the ring; the talker's next input: the frame's embeddings plus
    the trailing text (tts_pad once it runs out) -> [B, H]."""
    slot_in_ring = (s.frame % s.history_len)[:, None, None].expand(-1, 1, codes.shape[1])
    s.codes.scatter_(1, slot_in_ring, codes[:, None])
    b = torch.arange(s.batch, device=s.frame.device)
    text = s.trailing[b, s.frame.clamp(max=s.max_trailing - 1)]  # [B, H]
    text = torch.where((s.frame < s.trailing_len)[:, None], text, s.pad)
    return talker.embed_frame(codes) + text


@dataclass(frozen=True)
class StepKernels:
    """The functions ``frame_step`` calls; plain by default, compiled by ``engine.core.frames.compile``."""

    frame_head: Callable = frame_head
    predictor_step: Callable = predictor_step
    next_input: Callable = next_input


def frame_step(talker: Talker, s: StaticState, kernels: StepKernels = StepKernels()) -> None:
    code0, code1 = kernels.frame_head(talker, s)
    codes = predict_codes(talker, s.hidden, code0, s.predictor_cache, s.predictor_settings, s.seeds, s.frame,
                          whole_cache=True, step=kernels.predictor_step, code1=code1)  # [B, 16]
    x = kernels.next_input(talker, s, codes)  # [B, H]
    hidden = talker.model(x[:, None], s.pos[:, None], s.cache)[:, -1]  # [B, H]
    s.hidden.copy_(hidden)
    s.pos.add_(s.live).clamp_(max=s.max_seq - 1)  # free slots stay put; never write past the cache
    s.frame.add_(1)
