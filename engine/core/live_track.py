"""The trailing text track of a live segment (``engine.core.text.live_text``): ``LiveTrack``.

The frame loops (``engine.core.frames``) read its rows as the text arrives and wait when the next row has not (they
never step on padding that real text would have filled), and its frame budget becomes the segment's once the
segment is final. ``text_embedder`` turns token ids into the talker's text-track rows.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import torch

from engine.core.runtime import on_device
from engine.core.text.live_text import LivePlanner
from engine.core.text.segments import Segment

log = logging.getLogger("orator.engine")


class LiveTrack:
    """The trailing text track of one segment whose text is still arriving: ``rows`` [1, N, H] (its ids after the
    first, which is in the prompt, and the end-of-text row once the segment is final), ``budget`` (frames; the
    most a segment can get until it is final), ``segment`` (the final ``Segment``, or None) and ``end`` (how far
    into the text its certain words reach)."""

    def __init__(self, planner: LivePlanner, embed: Callable[[list[int]], torch.Tensor], end_row: torch.Tensor,
                 ids: list[int], rows: torch.Tensor, end: int, budget_cap: int,
                 frame_budget: Callable[[Segment], int], cancel: threading.Event | None):
        self.planner, self.embed, self.end_row = planner, embed, end_row
        self.ids, self.rows, self.end = list(ids), rows, end
        self.budget, self.frame_budget, self.cancel = budget_cap, frame_budget, cancel
        self.segment: Segment | None = None

    @property
    def final(self) -> bool:
        return self.segment is not None

    def has_row(self, k: int) -> bool:
        """Whether trailing row ``k`` is known (or the track is final: past its rows comes padding), looking at what
        arrived without waiting."""
        if not self._known(k):
            self._refresh(wait=False)
        return self._known(k)

    def wait_for_row(self, k: int) -> bool:
        """Wait until trailing row ``k`` is known; False if the call was cancelled (or its text aborted) first."""
        while not self.has_row(k):
            if self.cancel is not None and self.cancel.is_set() or self.planner.aborted:
                return False
            self._refresh(wait=True)
        return True

    def runnable(self, done: int, n: int) -> int:
        """How many of the next ``n`` frame steps from frame ``done`` on can run now (step ``f`` reads row ``f``):
        at least one once its row is known (waited for), 0 if cancelled first."""
        if not self.wait_for_row(done):
            return 0
        return n if self.final else min(n, self.rows.shape[1] - done)

    def _known(self, k: int) -> bool:
        return self.final or k < self.rows.shape[1]

    def _refresh(self, wait: bool) -> None:
        planner = self.planner
        if not planner.pull(wait) and not planner.finals:
            return
        if planner.finals:
            seg = planner.take_final()
            ids = planner.body_ids(seg.text)
            if ids[: len(self.ids)] != self.ids:
                log.warning("live text: the words spoken early tokenize otherwise within their sentence %r; "
                            "the rest of it follows them", seg.text[:80])
            self._extend(ids[len(self.ids):], final=True)
            self.segment, self.end, self.budget = seg, seg.end, self.frame_budget(seg)
            return
        _, end, ids = planner.open_ids()
        if len(ids) > len(self.ids) and ids[: len(self.ids)] == self.ids:
            self._extend(ids[len(self.ids):], final=False)
            self.end = end

    def _extend(self, ids: list[int], final: bool) -> None:
        parts = [self.rows]
        if ids:
            parts.append(self.embed(ids))
            self.ids += ids
        if final:
            parts.append(self.end_row)
        if len(parts) > 1:
            self.rows = torch.cat(parts, dim=1)


def text_embedder(talker) -> Callable[[list[int]], torch.Tensor]:
    """ids -> their text-track rows [1, n, H] on the talker's device."""
    dev = talker.codec_head.weight.device

    def embed(ids: list[int]) -> torch.Tensor:
        with torch.inference_mode():
            return talker.embed_text(on_device(ids, dev))[None]

    return embed
