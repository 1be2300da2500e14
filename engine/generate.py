"""The frame loop: prefill the talker, then per frame sample codebook 0, run the code predictor for
codebooks 1..15, and feed the frame back. Eager PyTorch; ``engine/graphs`` replays the same steps
from captured CUDA graphs.

One frame, for a batch of B streams:
  1. talker logits at the last position -> repetition penalty over earlier code-0 ids -> EOS blocked
     for the first ``min_frames`` frames -> ids 2048..3071 suppressed except EOS -> sample code_0;
  2. predictor on [talker hidden, C(code_0)]: codebook j+1 from ``lm_head[j]`` after embedding
     code_j, fresh KV cache every frame;
  3. next talker input = sum of the 16 code embeddings + trailing text (tts_pad once it runs out).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

import torch
import torch.nn.functional as F

from engine.kernels.gemv import linear
from engine.model.predictor import CodePredictor
from engine.model.talker import Talker
from engine.prompts import Prompt
from engine.sampling import Sampling, StageSettings, sample

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


class FrameGenerator:
    """Generates frames for one prompt (batch 1) on the eager path."""

    def __init__(self, talker: Talker, prompt: Prompt, sampling: Sampling, max_frames: int, seed: int = 0):
        self.talker, self.prompt, self.max_frames = talker, prompt, max_frames
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

    @torch.inference_mode()
    def frames(self) -> Iterator[torch.Tensor]:
        """Yield frames as int64 tensors of shape [16] until EOS or ``max_frames``."""
        t = self.talker
        L = self.prompt.length
        positions = torch.arange(L, device=self.device)[None]  # [1, L]
        hidden = t.model(self.prompt.embeds, positions, self.cache, kv_len=L)[:, -1]  # [1, H]
        for step in range(self.max_frames):
            frame = torch.full((1,), step, device=self.device)
            code0 = sample_code0(t, hidden, frame, self.processor, self.talker_settings, self.seeds)  # [1]
            if code0.item() == self.eos:
                return
            codes = predict_codes(t, hidden, code0, self.predictor_cache, self.predictor_settings,
                                  self.seeds, frame)  # [1, 16]
            yield codes[0]
            if step + 1 == self.max_frames:
                return
            x = t.embed_frame(codes) + self.trailing(step)  # [1, H]
            pos = torch.full((1, 1), L + step, device=self.device)
            hidden = t.model(x[:, None], pos, self.cache, kv_len=L + step + 1)[:, -1]

    def trailing(self, step: int) -> torch.Tensor:
        tr = self.prompt.trailing
        return tr[:, step] if step < tr.shape[1] else self.prompt.pad_embed[:, 0]



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
    x = cp.project(F.embedding(prev_code, embedding))[:, None]  # [B, 1, h]
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
    return sample(linear(h, cp.lm_head[0].weight).float(), settings, seeds, frame * NUM_DRAWS + 1)


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
        codes.append(step(cp, codes[-1], cp.model.codec_embedding[j - 1].weight, cp.lm_head[j].weight, cache,
                          positions[:, j + 1 : j + 2], None if whole_cache else j + 2, settings, seeds,
                          counters[:, j + 1]))
    return torch.stack(codes, dim=1)
