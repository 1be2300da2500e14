"""Static per-stream buffers for the fast path, allocated once for a fixed batch of slots.

Slot ``b`` holds one stream. Prefill writes the prompt into the slot's rows of the talker KV cache
and resets the slot's counters; ``step.frame_step`` then advances every slot in place.
"""

from __future__ import annotations

import copy

import torch
from torch.nn.utils.rnn import pad_sequence

from engine.core.cpu.one_position_numba import prompt_step
from engine.core.frames.codes import TalkerLogitsProcessor
from engine.core.model.layers import KVCache
from engine.core.model.talker import Talker
from engine.core.prompts import Prompt
from engine.core.runtime import check_memory, on_device
from engine.core.sampling import Sampling, StageSettings, put_rows

NEVER = 1 << 40  # "no EOS yet" marker for eos_at


class CacheRows:
    """Rows [start, stop) of a ``KVCache``, shaped like a smaller ``KVCache`` (views: writes go through)."""

    def __init__(self, cache: KVCache, start: int, stop: int):
        self.k = cache.k[:, start:stop]
        self.v = cache.v[:, start:stop]

    @property
    def max_len(self) -> int:
        return self.k.shape[3]


def cache_bytes(talker: Talker, batch: int, max_seq: int) -> int:
    """Bytes of the talker's key/value cache for ``batch`` streams of ``max_seq`` positions."""
    c, w = talker.config, talker.codec_head.weight
    return 2 * c.num_hidden_layers * batch * c.num_key_value_heads * max_seq * c.head_dim * w.element_size()


class StaticState:
    def __init__(self, talker: Talker, batch: int, max_seq: int, max_trailing: int, history: int):
        c = talker.config
        w = talker.codec_head.weight
        dev, dtype = w.device, w.dtype
        check_memory(cache_bytes(talker, batch, max_seq), dev, f"the key/value cache of {batch} stream(s)",
                     "Run fewer streams at once (serve --batch) or free the GPU.")
        self.batch, self.max_seq, self.max_trailing, self.history_len = batch, max_seq, max_trailing, history
        self.cache = talker.model.new_cache(batch, max_seq, dtype, dev)
        self.predictor_cache = talker.code_predictor.model.new_cache(
            batch, c.code_predictor_config.num_code_groups, dtype, dev)
        self.hidden = torch.zeros(batch, c.hidden_size, dtype=dtype, device=dev)  # last talker hidden
        self.pos = torch.zeros(batch, dtype=torch.int64, device=dev)  # talker position of the next input
        self.live = torch.zeros(batch, dtype=torch.int64, device=dev)  # 1: a stream holds the slot, its pos moves
        self.frame = torch.zeros(batch, dtype=torch.int64, device=dev)  # index of the next frame
        self.trailing = torch.zeros(batch, max_trailing, c.hidden_size, dtype=dtype, device=dev)
        self.trailing_len = torch.zeros(batch, dtype=torch.int64, device=dev)
        self.pad = torch.zeros(batch, c.hidden_size, dtype=dtype, device=dev)
        self.seeds = torch.zeros(batch, dtype=torch.int64, device=dev)
        self.talker_settings = StageSettings.allocate(batch, dev)
        self.predictor_settings = StageSettings.allocate(batch, dev)
        self.processor = TalkerLogitsProcessor(c.vocab_size, c.codec_eos_token_id, batch, dev)
        self.codes = torch.zeros(batch, history, 16, dtype=torch.int64, device=dev)  # ring of recent frames
        self.eos_at = torch.full((batch,), NEVER, dtype=torch.int64, device=dev)

    def first_rows(self, n: int) -> StaticState:
        """Slots [0, n) as a state of batch n over the same memory, for a graph of a smaller batch."""
        view = copy.copy(self)
        view.batch = n
        for name, value in vars(self).items():
            if isinstance(value, torch.Tensor):
                setattr(view, name, value[:n])
        view.cache = CacheRows(self.cache, 0, n)
        view.predictor_cache = CacheRows(self.predictor_cache, 0, n)
        view.talker_settings = self.talker_settings.first_rows(n)
        view.predictor_settings = self.predictor_settings.first_rows(n)
        view.processor = self.processor.first_rows(n)
        return view

    def check(self, prompt: Prompt) -> None:
        """Raise ``ValueError`` when ``prompt`` does not fit this state's cache or trailing-text buffer."""
        if prompt.length >= self.max_seq:
            raise ValueError(f"prompt of {prompt.length} positions does not fit the {self.max_seq}-position cache")
        if prompt.trailing.shape[1] > self.max_trailing:
            raise ValueError(f"trailing text of {prompt.trailing.shape[1]} tokens exceeds {self.max_trailing}")

    @torch.inference_mode()
    def prefill(self, talker: Talker, slot: int, prompt: Prompt, sampling: Sampling, seed: int,
                run_prompt=None) -> None:
        """Run the prompt through the talker into ``slot`` and reset the slot's counters and settings.

        ``run_prompt(embeds)`` may do the talker pass instead (a captured graph); it returns False
        when it cannot, and the pass then runs eagerly here."""
        self.check(prompt)
        if run_prompt is None or not run_prompt(prompt.embeds):
            positions = torch.arange(prompt.length, device=self.pos.device)[None]
            hidden = talker.model(prompt.embeds, positions, CacheRows(self.cache, slot, slot + 1),
                                  kv_len=prompt.length)[:, -1]
            self.hidden[slot] = hidden[0]
        self._reset_slots(on_device([slot], self.pos.device), [(slot, prompt, sampling, seed)])

    @torch.inference_mode()
    def prefill_many(self, talker: Talker, entries: list[tuple[int, Prompt, Sampling, int]],
                     run_prompts=None) -> None:
        """``prefill`` of several (slot, prompt, sampling, seed) at once: one talker pass over the prompts
        padded on the right to the longest, into a scratch cache copied into the slots' rows. Padding
        lands in cache slots past each prompt, which a decode step overwrites before attending to.

        ``run_prompts(slots, prompts)`` may do that pass and the copies instead (captured graphs:
        ``batched_prefill.BatchedPrefill``); it returns False when it cannot, and the pass runs eagerly. One prompt
        on the CPU plan whose frames step through Numba goes through that kernel's rows
        (``engine.core.cpu.one_position_numba.prompt_step``), as a single stream's prompt does."""
        for _, prompt, _, _ in entries:
            self.check(prompt)
        if not entries:
            return
        dev, n = self.pos.device, len(entries)
        slots = on_device([slot for slot, _, _, _ in entries], dev)
        prompts = [prompt for _, prompt, _, _ in entries]
        if run_prompts is None or not run_prompts(slots, prompts):
            lengths = [prompt.length for prompt in prompts]
            longest = max(lengths)
            scratch = talker.model.new_cache(n, longest, self.cache.k.dtype, dev)
            step = prompt_step(talker, scratch) if n == 1 else None
            if step is not None:
                last_hidden = step.rows(prompts[0].embeds, 0)  # [1, H]
            else:
                embeds = pad_sequence([prompt.embeds[0] for prompt in prompts], batch_first=True)
                positions = torch.arange(longest, device=dev).expand(n, longest)
                hidden = talker.model(embeds, positions, scratch, kv_len=longest)  # [n, longest, H]
                last_hidden = hidden[torch.arange(n, device=dev), on_device(lengths, dev) - 1]
            self.cache.k[:, :, :, :longest].index_copy_(1, slots, scratch.k)
            self.cache.v[:, :, :, :longest].index_copy_(1, slots, scratch.v)
            self.hidden.index_copy_(0, slots, last_hidden)
        self._reset_slots(slots, entries)

    def retire(self, slot: int) -> None:
        """A freed slot stays at position 0 while the others step: its attention reads one cache slot."""
        self.live[slot] = 0
        self.pos[slot] = 0

    def _reset_slots(self, slots: torch.Tensor, entries: list[tuple[int, Prompt, Sampling, int]]) -> None:
        """Counters, trailing text and settings of freshly prefilled (slot, prompt, sampling, seed), their
        slots also as the device tensor ``slots``: one indexed write per field for all of them (an admission
        of 64 streams is not 1,000 tiny copies)."""
        prompts = [prompt for _, prompt, _, _ in entries]
        samplings = [sampling for _, _, sampling, _ in entries]
        n = len(entries)
        put_rows(self.pos, slots, [p.length for p in prompts])
        put_rows(self.live, slots, [1] * n)
        put_rows(self.frame, slots, [0] * n)
        put_rows(self.trailing_len, slots, [p.trailing.shape[1] for p in prompts])
        put_rows(self.seeds, slots, [seed for _, _, _, seed in entries])
        put_rows(self.eos_at, slots, [NEVER] * n)
        trailing = pad_sequence([p.trailing[0] for p in prompts], batch_first=True)
        rows = self.trailing.new_zeros(n, *self.trailing.shape[1:])
        rows[:, : trailing.shape[1]] = trailing
        self.trailing.index_copy_(0, slots, rows)
        self.pad.index_copy_(0, slots, torch.stack([p.pad_embed[0, 0] for p in prompts]))
        self.talker_settings.set_rows(slots, [s.greedy for s in samplings], [s.temperature for s in samplings],
                                      [s.top_k for s in samplings], [s.top_p for s in samplings])
        self.predictor_settings.set_rows(slots, [s.predictor_greedy for s in samplings],
                                         [s.sub_temperature for s in samplings], [s.sub_top_k for s in samplings],
                                         [s.sub_top_p for s in samplings])
        self.processor.seen.index_fill_(0, slots, False)
        put_rows(self.processor.penalty, slots, [s.repetition_penalty for s in samplings])
        put_rows(self.processor.min_frames, slots, [s.min_frames for s in samplings])
