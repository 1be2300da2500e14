"""How one frame's 16 codes are computed for a batch of streams: the functions every path of the frame loop
shares (the eager reference in ``engine.core.frames.eager``; the static-buffer step in ``engine.core.frames.step``,
which the single-stream graphs and the batched loop replay).

One frame, for a batch of B streams:
  1. talker logits at the last position -> repetition penalty over earlier code-0 ids -> EOS blocked
     for the first ``min_frames`` frames -> ids 2048..3071 suppressed except EOS -> sample code_0;
  2. predictor on [talker hidden, C(code_0)]: codebook j+1 from ``lm_head[j]`` after embedding
     code_j, fresh KV cache every frame;
  3. next talker input = sum of the 16 code embeddings + trailing text (tts_pad once it runs out).
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from engine.core.cpu.one_position import BoundStep
from engine.core.gpu_kernels.gemv import linear
from engine.core.model.predictor import CodePredictor
from engine.core.model.talker import Talker
from engine.core.noise import uniform_noise
from engine.core.sampling import StageSettings, sample

CODEBOOK_SIZE = 2048
NUM_DRAWS = 16  # random draws per frame: codebook 0 and the 15 predictor codebooks


class TalkerLogitsProcessor:
    """Repetition penalty, the EOS floor and the suppression of control ids, on device, per row."""

    def __init__(self, vocab: int, eos: int, batch: int, device):
        self.eos = eos
        allowed = torch.zeros(vocab, dtype=torch.bool, device=device)
        allowed[:CODEBOOK_SIZE] = True
        allowed[eos] = True
        self.suppressed = ~allowed  # [V]
        self.seen = torch.zeros(batch, vocab, dtype=torch.bool, device=device)  # code-0 history
        self.penalty = torch.ones(batch, dtype=torch.float32, device=device)
        self.min_frames = torch.zeros(batch, dtype=torch.int64, device=device)

    def first_rows(self, n: int) -> TalkerLogitsProcessor:
        """Rows [0, n) over the same memory."""
        view = copy.copy(self)
        view.seen, view.penalty, view.min_frames = self.seen[:n], self.penalty[:n], self.min_frames[:n]
        return view

    def __call__(self, logits: torch.Tensor, frame: torch.Tensor) -> torch.Tensor:
        # logits: [B, V] float32; frame: [B] index of the frame being sampled
        p = self.penalty[:, None]
        penalised = torch.where(logits < 0, logits * p, logits / p)
        logits = torch.where(self.seen, penalised, logits)
        block_eos = frame < self.min_frames  # [B]
        logits[:, self.eos] = torch.where(block_eos, float("-inf"), logits[:, self.eos])
        return logits.masked_fill(self.suppressed, float("-inf"))

    def record(self, code0: torch.Tensor) -> None:
        self.seen.scatter_(1, code0[:, None], True)

def sample_code0(talker: Talker, hidden, frame, processor: TalkerLogitsProcessor, settings: StageSettings,
                 seeds) -> torch.Tensor:
    """Codebook 0 for each row from the talker hidden [B, H] at frame index ``frame`` [B] -> [B]."""
    logits = linear(hidden, talker.codec_head.weight).float()  # [B, V]
    code0 = sample(processor(logits, frame), settings, seeds, frame * NUM_DRAWS)
    processor.record(code0)
    return code0


def predictor_step(cp: CodePredictor, prev_code, embedding, head, cache, pos, kv_len, settings: StageSettings,
                   seeds, counter) -> torch.Tensor:
    """One code-predictor step: embed the previous code [B], run the layers at ``pos`` [B, 1], sample the
    next code from ``head`` -> [B]. Weights come in as tensors so one compiled body serves every step."""
    rows = F.embedding(prev_code, embedding)  # the table may be narrower than the model (widened as read)
    x = cp.project(rows.to(cp.model.norm.weight.dtype))[:, None]  # [B, 1, h]
    h = cp.model(x, pos, cache, kv_len)[:, -1]  # [B, h]
    return sample(linear(h, head).float(), settings, seeds, counter)


def predictor_first(talker: Talker, hidden, code0, cache, settings: StageSettings, seeds, frame,
                    whole_cache: bool = False) -> torch.Tensor:
    """Codebook 1 for each row: the predictor's first pass over [talker hidden [B, H], C(code_0) [B]] at
    positions 0 and 1 of its (fresh) cache -> [B]."""
    cp = talker.code_predictor
    positions = torch.arange(2, device=hidden.device).expand(hidden.shape[0], 2)  # [B, 2]
    x = cp.project(torch.stack([hidden, talker.embed_codec(code0)], dim=1))  # [B, 2, h]
    h = cp.model(x, positions, cache, kv_len=None if whole_cache else 2)[:, -1]  # [B, h]
    return sample(linear(h, cp.head(0)).float(), settings, seeds, frame * NUM_DRAWS + 1)


def predict_codes(talker: Talker, hidden, code0, cache, settings: StageSettings, seeds, frame,
                  whole_cache: bool = False, step=predictor_step, code1=None) -> torch.Tensor:
    """Codebooks 1..15 for each row given the talker hidden [B, H] and code_0 [B] -> all 16 codes [B, 16].

    The predictor's KV cache is overwritten from position 0 every frame (a fresh cache per frame).
    ``whole_cache`` attends over all 16 slots (masked) at every step, so every step has one shape;
    ``step`` may be a compiled ``predictor_step``; ``code1`` is codebook 1 when the caller already ran
    ``predictor_first``."""
    cp = talker.code_predictor
    n = cp.config.num_code_groups
    b = hidden.shape[0]
    if code1 is None:
        code1 = predictor_first(talker, hidden, code0, cache, settings, seeds, frame, whole_cache)
    positions = torch.arange(n, device=hidden.device).expand(b, n)  # [B, 16]
    counters = frame[:, None] * NUM_DRAWS + torch.arange(n, device=hidden.device)  # [B, 16]
    codes = [code0, code1]
    for j in range(1, n - 1):
        codes.append(step(cp, codes[-1], cp.model.codec_embedding[j - 1].weight, cp.head(j), cache,
                          positions[:, j + 1 : j + 2], None if whole_cache else j + 2, settings, seeds,
                          counters[:, j + 1]))
    return torch.stack(codes, dim=1)


def predictor_draws(seeds, frame, draws: int, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The counters [draws] of one stream's predictor draws at frame index ``frame`` [1] (codebooks 1..draws) and
    their uniform noise [draws, V], made at once."""
    counters = frame * NUM_DRAWS + torch.arange(1, draws + 1)
    return counters, uniform_noise(seeds.expand(draws), counters, vocab)


def predict_codes_by_position(talker: Talker, step: BoundStep, hidden, code0, settings: StageSettings, seeds,
                              frame, heads=None) -> torch.Tensor:
    """``predict_codes`` for one stream on the fast CPU path: the predictor stepped one position at a time over its
    cache (``engine.core.cpu.one_position``; its first pass as positions 0 and 1 in one ``rows`` call), the noise of
    its 15 draws made at once -> all 16 codes [1, 16]. ``heads``: the 15 heads' products (``row(x)``) where they are
    not the predictor's own (the Numba steps')."""
    cp = talker.code_predictor
    draws = cp.config.num_code_groups - 1
    counters, noise = predictor_draws(seeds, frame, draws, cp.config.vocab_size)  # [15], [15, V]
    # positions 0 and 1 (the talker's hidden, code 0) as one call of two rows, as the fused frame takes them
    h = step.rows(torch.cat([cp.project(hidden), cp.project(talker.embed_codec(code0))]), 0)
    codes = [code0]
    for j in range(draws):
        if j:
            rows = F.embedding(codes[-1], cp.model.codec_embedding[j - 1].weight)  # a bfloat16 table, widened
            h = step(cp.project(rows.to(torch.float32)), j + 1)
        logits = (cp.head(j) if heads is None else heads[j]).row(h).float()
        codes.append(sample(logits, settings, seeds, counters[j : j + 1], noise[j : j + 1]))
    return torch.stack(codes, dim=1)
