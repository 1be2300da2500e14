"""One frame for every slot, touching only the static buffers of ``StaticState`` (capture-safe).

No host synchronisation and no allocation that depends on data: positions, frame counters and the
EOS marker live on the device; the code of frame ``f`` of slot ``b`` lands in
``state.codes[b, f % history]``.
"""

from __future__ import annotations

import torch

from engine.generate import predict_codes
from engine.graphs.compile import StepKernels
from engine.graphs.state import NEVER, StaticState
from engine.model.talker import Talker

PLAIN = StepKernels()


def frame_step(talker: Talker, s: StaticState, kernels: StepKernels = PLAIN) -> None:
    eos = talker.config.codec_eos_token_id
    code0 = kernels.sample_code0(talker, s.hidden, s.frame, s.processor, s.talker_settings, s.seeds)  # [B]
    first_eos = (code0 == eos) & (s.eos_at == NEVER)
    s.eos_at.copy_(torch.where(first_eos, s.frame, s.eos_at))
    codes = predict_codes(talker, s.hidden, code0, s.predictor_cache, s.predictor_settings, s.seeds, s.frame,
                          whole_cache=True, step=kernels.predictor_step)
    slot_in_ring = (s.frame % s.history_len)[:, None, None].expand(-1, 1, codes.shape[1])
    s.codes.scatter_(1, slot_in_ring, codes[:, None])
    # next talker input: the frame's embeddings + the trailing text (tts_pad once it runs out)
    b = torch.arange(s.batch, device=s.frame.device)
    text = s.trailing[b, s.frame.clamp(max=s.max_trailing - 1)]  # [B, H]
    text = torch.where((s.frame < s.trailing_len)[:, None], text, s.pad)
    x = talker.embed_frame(codes) + text  # [B, H]
    hidden = talker.model(x[:, None], s.pos[:, None], s.cache)[:, -1]  # [B, H]
    s.hidden.copy_(hidden)
    s.pos.add_(1).clamp_(max=s.max_seq - 1)  # idle slots keep stepping; never write past the cache
    s.frame.add_(1)
