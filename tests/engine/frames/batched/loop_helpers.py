"""What the many-streams tests share: requests of every kind, and ways to make something happen while the loop
thread of a ``BatchedStreams`` steps."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import torch

from engine import Sampling, Voice
from engine.core.frames.batched import BatchedFrames
from engine.core.model.talker import Talker
from engine.core.prompts import Prompt

REQUESTS = [
    ("Good morning to you.", Voice.preset("vivian", "english"), Sampling(greedy=True), 11),
    ("A second, different request.", Voice.preset("ryan", "english"), Sampling(seed=5), 17),
    ("你好，世界。", Voice.preset("eric", "chinese"), Sampling(seed=9, top_k=10), 7),
    ("Short.", Voice.preset("serena", "auto"), Sampling(greedy=True, repetition_penalty=1.3), 13),
    ("The last one waits for a free slot.", Voice.preset("aiden", "english"), Sampling(seed=2, top_p=0.8), 9),
]


def late_caller(streams, text: str, voice: Voice, max_frames: int) -> tuple[threading.Thread, list]:
    """A thread (not started) that streams ``text`` greedily, and the list its chunks land in."""
    chunks: list = []
    caller = threading.Thread(target=lambda: chunks.extend(streams.stream(
        text, voice, sampling=Sampling(greedy=True), max_frames=max_frames)))
    return caller, chunks


def start_during_step(streams, caller, when: Callable[[list[int]], bool]) -> list[int]:
    """Make ``streams``' loop start the thread ``caller`` during the first step for which ``when(steps)`` holds
    (``steps``: the frames of each step taken so far, this one last), on the loop thread, and return only once
    the caller's request is queued; returns ``steps`` (a list that grows)."""
    real_step, steps = streams.frames.step, []

    def step_starting_the_caller(n=1):
        steps.append(n)
        real_step(n)
        if caller.ident is None and when(steps):  # not started yet
            caller.start()
            while streams._requests.empty():
                threading.Event().wait(0.001)

    streams.frames.step = step_starting_the_caller
    return steps


def outstanding_steps(events: list[str]) -> list[int]:
    """After each phase event: the steps queued and not yet collected."""
    queued, counts = 0, []
    for event in events:
        queued += {"step": 1, "collect": -1}.get(event, 0)
        counts.append(queued)
    return counts


def generate_batch(talker: Talker, prompts: list[tuple[Prompt, Sampling, int, int]], slots: int,
                   chunk: int = 8, graphs: bool | None = None) -> list[np.ndarray]:
    """Codes of every (prompt, sampling, seed, max_frames), run ``slots`` at a time; a new stream joins as
    soon as a slot frees. Returns int64 [T_i, 16] per prompt, in order."""
    batch = BatchedFrames(talker, slots, graphs=graphs)
    pending = list(enumerate(prompts))
    owner: dict[int, int] = {}
    frames: dict[int, list[np.ndarray]] = {i: [] for i in range(len(prompts))}
    with torch.inference_mode():
        while pending or owner:
            joining, pending = pending[: slots - len(owner)], pending[slots - len(owner) :]
            if joining:
                for slot, (index, _) in zip(batch.add_many([r for _, r in joining]), joining, strict=True):
                    owner[slot] = index
            batch.step(chunk)
            for slot, (codes, ended) in batch.collect().items():
                frames[owner[slot]].append(codes)
                if ended:
                    batch.release(slot)
                    del owner[slot]
    return [np.concatenate(frames[i]) if frames[i] else np.zeros((0, 16), np.int64) for i in range(len(prompts))]
