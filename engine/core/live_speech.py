"""Speaking live text (``engine.core.text.live_text``): ``stream_live`` on one engine, ``stream_live_batched`` on its
batched loop.

One engine (``Engine.stream_live``): a segment starts as soon as its first word is certain, in the streaming-text
layout (the text fed one token per frame after the prefill), and its trailing text track is read as it arrives
(``LiveTrack``): a frame whose text row has not arrived waits for it, so the model hears exactly what it would
have heard with all the text there, only later. A segment whose model stops (EOS) before its text is complete
ends there, as it would have with the whole text. Layouts that need a segment's whole text in the prompt (the
non-streaming one, in-context clones) start each segment once it is final.

The batched loop (``stream_live_batched``) steps all its slots together, and a slot waiting for text would hold
its neighbours back or step on padding: a live session there feeds it whole final segments, each a request of
its own that takes a slot while it is spoken and none while the text is awaited, in the voice's default layout
(as ``BatchedStreams.stream`` speaks any text). Its codes are those of the one engine's for those segments (segment
``i`` seeded with the call's seed + ``i``); its audio starts each segment from a fresh decoder state (the
one-engine path carries the state across segments).
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import AsyncIterator, Iterable, Iterator

from engine.core.chunk_sizes import ChunkSizes
from engine.core.chunks import SAMPLE_RATE, Chunk, closing_chunk
from engine.core.frames.guard import FrameGuard
from engine.core.live_track import LiveTrack, text_embedder
from engine.core.prompts import build_prompt, build_prompt_ids
from engine.core.sampling import Sampling
from engine.core.speech_plan import Plan, default_max_frames, draw_seed
from engine.core.text.live_text import POLL_S, LivePlanner, LiveText, live_source
from engine.core.text.segments import Segment
from engine.core.voice import Voice


def stream_live(engine, text: LiveText | Iterable[str], voice: Voice, chunk_frames: int = 4,
                first_chunk_frames: int = 1, sampling: Sampling | None = None, cancel: threading.Event | None = None,
                max_frames: int | None = None, non_streaming: bool = False) -> Iterator[Chunk]:
    """``Engine.stream`` of text that is still arriving (see the module). Chunks of a segment that is not final yet
    carry the span of its text so far; the last chunk of the call has ``final=True``."""
    sizes = ChunkSizes(first_chunk_frames, chunk_frames)  # live speech follows its text: they never grow
    source = live_source(text)
    voice = engine.prepare_voice(voice)
    engine.check(None, voice, non_streaming)  # before the decoder is fed the reference codes
    sampling = sampling or engine.defaults
    plan = Plan(voice, [], sampling, draw_seed(sampling.seed), max_frames, non_streaming)
    tok, talker, cfg = engine.tokenizer, engine.model.talker, engine.config
    planner = LivePlanner(source, lambda s: tok.speech_ids(s)[3:-5])
    whole = voice.in_context or non_streaming  # the prompt holds the segment's whole text
    cap = max_frames or default_max_frames("x" * planner.max_chars)  # the budget of the longest segment
    embed = text_embedder(talker)
    stopped = lambda: (cancel is not None and cancel.is_set()) or planner.aborted  # noqa: E731
    t0 = time.perf_counter()

    with engine._lock:
        streamer = engine._single_streamer((first_chunk_frames, chunk_frames))
        streamer.begin(voice.ref_codes if voice.in_context else None, (first_chunk_frames, chunk_frames))
        index, last = 0, None
        while (start := _next_segment(planner, whole, stopped)) is not None:
            if isinstance(start, Segment):  # final already: what Engine.stream speaks
                seg, live = start, None
                prompt = build_prompt(talker, cfg, tok, voice, seg.text, non_streaming)
                budget, begins = plan.frame_budget(seg), seg.start
            else:
                begins, end, ids = start
                prompt = build_prompt_ids(talker, cfg, tok, voice, ids, False)
                end_row = talker.embed_constant("text", (cfg.tts_eos_token_id,))
                live = LiveTrack(planner, embed, end_row, ids, prompt.trailing[:, :-1], end, cap, plan.frame_budget,
                                 cancel)
                seg, budget = None, cap
            frame = 0
            guard = FrameGuard(budget, f"live segment {index}")
            for codes, audio, ends in streamer.segment(prompt, plan.sampling, plan.segment_seed(index), budget,
                                                       sizes.next_size, cancel, True, guard, live):
                known = seg or live.segment
                span = (known.start, known.end) if known else (begins, live.end)
                final = ends and planner.finished and (live is None or live.final)
                last = Chunk(audio, SAMPLE_RATE, frame, len(codes), index, span, time.perf_counter() - t0, final,
                             guard.warning if ends else None)
                frame += len(codes)
                yield last
            if live is not None and not live.final:  # the model ended before the text did: wait for the rest
                live.wait_for_row(1 << 40)
            if stopped():
                return
            index += 1
        if last is not None and not last.final and not stopped():
            yield closing_chunk(last)


def _next_segment(planner: LivePlanner, whole: bool, stopped) -> Segment | tuple[int, int, list[int]] | None:
    """The next segment once it can start: a final ``Segment``, or (start, end, ids) of the certain words of one
    still arriving (unless ``whole``); None when the text is done or the call stopped."""
    while not stopped():
        if planner.finals:
            return planner.take_final()
        if not whole:
            start, end, ids = planner.open_ids()
            if ids:
                return start, end, ids
        if planner.closed:
            return None
        planner.pull(wait=True)
    return None


async def stream_live_batched(streams, text: LiveText, voice: Voice, sampling: Sampling, chunk_frames: int = 4,
                              first_chunk_frames: int = 1, cancel: threading.Event | None = None,
                              max_frames: int | None = None) -> AsyncIterator[Chunk]:
    """``stream_live`` on a ``BatchedStreams`` from an asyncio event loop: each final segment is spoken as a
    request of its own (see the module); ``sampling``: the settings in full (the engine's defaults with the
    request's changes)."""
    if not isinstance(text, LiveText):
        raise TypeError("the batched loop speaks an engine.core.text.live_text.LiveText")
    planner = LivePlanner(text, None)
    seed = draw_seed(sampling.seed)
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()
    text.listen(lambda: loop.call_soon_threadsafe(woken.set))
    stopped = lambda: (cancel is not None and cancel.is_set()) or planner.aborted  # noqa: E731
    t0, index, last = time.perf_counter(), 0, None
    while True:
        while not planner.finals and not planner.closed and not stopped():
            woken.clear()
            if not planner.pull(wait=False):
                try:  # a cancel event is no asyncio one: looked at every POLL_S
                    await asyncio.wait_for(woken.wait(), POLL_S)
                except asyncio.TimeoutError:
                    pass
        if stopped() or not planner.finals:
            break
        seg = planner.take_final()
        async for chunk in streams.stream_async([seg], voice, chunk_frames=chunk_frames,
                                                first_chunk_frames=first_chunk_frames,
                                                sampling=dataclasses.replace(sampling, seed=seed + index),
                                                cancel=cancel, max_frames=max_frames):
            if chunk.n_frames == 0:
                continue  # the closing chunk of the segment's request: the session's comes at its end
            last = dataclasses.replace(chunk, segment=index, elapsed=time.perf_counter() - t0, final=False)
            yield last
        index += 1
    if last is not None and not stopped():
        yield closing_chunk(last)
