"""``POST /v1/audio/speech``: the OpenAI speech endpoint, streamed as audio bytes or server-sent events.

OpenAI fields: ``model`` (the server's model name, or tts-1, tts-1-hd, gpt-4o-mini-tts), ``input`` (at most 4096
characters), ``voice`` (a preset, a library voice name or ``{"id": name}``), ``instructions`` (style of a preset
voice, or the voice description on a VoiceDesign model), ``response_format`` (mp3, opus, aac as ADTS, flac, wav,
pcm: ``server.formats``), ``speed`` (0.25-4.0, tempo changed without changing pitch), ``stream_format`` (``audio``: the
encoded audio as chunked transfer, frames sent as they are ready; ``sse``: server-sent events).
Extra fields: ``language``; sampling ``temperature``, ``top_k``, ``top_p``, ``repetition_penalty``,
``greedy``, ``seed``; streaming ``chunk_frames``, ``first_chunk_frames``; ``max_frames`` (frame budget
per segment); ``min_frames`` (no end of speech before that many frames: benchmarks force lengths);
``pronunciation`` (true: the server's pronunciation rules change what is said; default false, the input as
written). The rules run once per request, on a worker thread (a slow pattern must not stall the event loop), within
``pronunciation_budget_s`` for the whole text; past it the request answers 400.

SSE events: ``speech.queue`` ``{position}`` while waiting for a generation slot,
``speech.audio.delta`` ``{audio: base64}``, ``speech.warning`` ``{segment, message}`` when the engine cut a segment
that did not end by its frame budget or looped (``engine.core.frames.guard``), ``speech.audio.done`` ``{usage,
timing}``, or ``error``. An audio response cannot say so once it has started: its cuts are logged and listed under
``warnings`` in the request's status. Audio responses carry ``X-Request-Id`` and ``X-Queue-Position``; ``GET
/v1/audio/speech/{id}`` reports a request's state, queue position and timing while it runs and a while after.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import time
from typing import Literal

import numpy as np
from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool

from engine import LiveText, OratorError, SamplingError
from engine.core.chunks import SAMPLE_RATE, Chunk
from engine.core.prompts import check_voice
from engine.core.sampling import FLOAT_RANGES, INT_RANGES, MAX_SEED, OPEN_BELOW
from engine.core.speech_plan import MAX_FRAMES_CAP
from engine.core.text.segments import Segment, segments_of
from engine.production.tempo import MAX_SPEED, MIN_SPEED, ChunkTempo
from engine.pronunciation import Lexicon, pronounce
from server.errors import APIError, engine_error, error_body
from server.formats import MEDIA_TYPES, StreamEncoder, check_format
from server.scheduler import LimitReached, Queued, QueueFull, SpeechJob, Ticket
from server.settings import check_model
from server.streaming import DisconnectAwareStream, StreamAborted
from server.voices import resolve_voice

log = logging.getLogger("orator.server")
router = APIRouter()
_SAMPLING_FIELDS = ("temperature", "top_k", "top_p", "repetition_penalty", "seed", "min_frames")


class VoiceId(BaseModel):
    id: str


def _range(name: str, **extra):
    """A ``Field`` bounded by the engine's range for the sampling setting ``name`` (``engine.core.sampling``)."""
    low, high = {**FLOAT_RANGES, **INT_RANGES}[name]
    return Field(None, gt=low, le=high, **extra) if name in OPEN_BELOW else Field(None, ge=low, le=high, **extra)


class SpeechSettings(BaseModel):
    """Every field of a speech request but its text: a ``SpeechRequest`` less ``input``, and what a live-text session
    is configured with (``server.speech_stream``)."""

    # strict numbers: no inf or nan, and no strings or booleans standing in for them
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    model: str = Field("orator", max_length=256)
    voice: str | VoiceId
    instructions: str | None = None
    response_format: str = Field("mp3", max_length=16)
    speed: float = Field(1.0, ge=MIN_SPEED, le=MAX_SPEED, strict=True)
    stream_format: Literal["audio", "sse"] = "audio"
    language: str | None = Field(None, max_length=64)
    temperature: float | None = _range("temperature", strict=True)
    top_k: int | None = _range("top_k", strict=True)
    top_p: float | None = _range("top_p", strict=True)
    repetition_penalty: float | None = _range("repetition_penalty", strict=True)
    greedy: bool | None = Field(None, strict=True)
    seed: int | None = Field(None, ge=0, lt=MAX_SEED, strict=True)
    chunk_frames: int | None = Field(None, ge=1, le=64, strict=True)
    first_chunk_frames: int | None = Field(None, ge=1, le=64, strict=True)
    max_frames: int | None = Field(None, ge=1, le=MAX_FRAMES_CAP, strict=True)
    min_frames: int | None = _range("min_frames", strict=True)
    pronunciation: bool = Field(False, strict=True)

    @field_validator("model", "instructions", "response_format", "language")
    @classmethod
    def _unicode(cls, value: str | None) -> str | None:
        """No lone surrogates (JSON can escape them; they have no UTF-8 form and reach no tokenizer or file)."""
        if value is not None:
            value.encode("utf-8")  # UnicodeEncodeError is a ValueError: pydantic reports it as this field's
        return value

    @field_validator("voice")
    @classmethod
    def _unicode_voice(cls, value: str | VoiceId) -> str | VoiceId:
        (value if isinstance(value, str) else value.id).encode("utf-8")
        return value


class SpeechRequest(SpeechSettings):
    input: str

    @field_validator("input")
    @classmethod
    def _unicode_input(cls, value: str) -> str:
        value.encode("utf-8")
        return value


@router.post("/v1/audio/speech")
async def create_speech(body: SpeechRequest, request: Request):
    state = request.app.state
    engine, settings = state.engine_or_503(), state.settings
    check_model(body.model, settings)
    name = body.voice if isinstance(body.voice, str) else body.voice.id
    # a library voice's file is read, and the pronunciation rules run, off the event loop
    if body.pronunciation or state.store.find(name.strip()) is not None:
        job = await run_in_threadpool(_job_for, body, engine, state.store, settings)
    else:
        job = _job_for(body, engine, state.store, settings)
    check_format(body.response_format)
    try:
        ticket = state.scheduler.submit(job)
    except QueueFull as e:
        raise APIError(429, f"the server is busy ({e}); retry shortly", code="queue_full",
                       headers={"Retry-After": str(settings.retry_after_s)}) from None
    headers = {"X-Request-Id": ticket.id, "X-Queue-Position": str(ticket.position)}
    if body.stream_format == "sse":
        usage_tokens = len(engine.tokenizer.encode(body.input))
        return DisconnectAwareStream(_sse(ticket, body, usage_tokens), media_type="text/event-stream",
                                     headers={**headers, "Cache-Control": "no-cache"},
                                     send_timeout_s=settings.send_timeout_s)
    return DisconnectAwareStream(_audio(ticket, body), media_type=MEDIA_TYPES[body.response_format], headers=headers,
                                 send_timeout_s=settings.send_timeout_s)


@router.get("/v1/audio/speech/{request_id}")
async def speech_status(request_id: str, request: Request):
    status = request_status(request.app.state.scheduler, request_id)
    elsewhere = request.app.state.status_elsewhere  # a Ray replica's: the status a sibling replica holds
    if status is None and elsewhere is not None:
        status = await elsewhere(request_id)
    if status is None:
        raise APIError(404, f"no recent speech request {request_id!r}", param="request_id", code="not_found")
    return status


def request_status(scheduler, request_id: str) -> dict | None:
    """What ``GET /v1/audio/speech/{id}`` answers for a request this server's ``scheduler`` holds, else None."""
    ticket = scheduler.get(request_id) if scheduler is not None else None
    return None if ticket is None else _with_rates(ticket.status(), ticket)


def _job_for(body: SpeechRequest, engine, store, settings) -> SpeechJob:
    text = body.input
    if not text.strip():
        raise APIError(400, "input is empty: there is no text to speak", param="input", code="invalid_input")
    if len(text) > settings.max_input_chars:
        raise APIError(400, f"input has {len(text)} characters; the limit is {settings.max_input_chars}",
                       param="input", code="input_too_long")
    return speech_job(body, text, engine, store, settings)


def speech_job(body: SpeechSettings, text: str | LiveText, engine, store, settings) -> SpeechJob:
    """The job of a request's (or a live session's) settings speaking ``text``, checked as far as can be before it
    waits for a slot. With ``pronunciation`` asked for it applies the rules: call it off the event loop then."""
    if body.instructions and len(body.instructions) > settings.max_instructions_chars:
        raise APIError(400, f"instructions have {len(body.instructions)} characters; the limit is "
                            f"{settings.max_instructions_chars}", param="instructions", code="input_too_long")
    pronunciation = None
    if body.pronunciation and isinstance(text, LiveText):
        raise APIError(400, "pronunciation rules do not apply to live text (/v1/audio/speech/stream) yet",
                       param="pronunciation", code="unsupported_value")
    if body.pronunciation:
        pronunciation = settings.pronunciation
        if pronunciation is None:
            raise APIError(400, "this server speaks without pronunciation rules (it was started with "
                                "--no-pronunciation)", param="pronunciation", code="invalid_value")
    voice = resolve_voice(engine, store, body.voice, body.instructions, body.language)
    if isinstance(text, LiveText):
        if voice.kind != "clone" or voice.is_encoded:
            check_voice(engine.config, voice)
    else:
        if pronunciation is not None:  # applied once, here: the engine speaks these segments as they are
            text = pronounced(text, pronunciation, voice.name, settings.pronunciation_budget_s)
        # refused now, while the client can still be answered with an error status; what is checked is what is said
        engine.check(text, voice)
    overrides = {name: getattr(body, name) for name in _SAMPLING_FIELDS if getattr(body, name) is not None}
    if body.greedy is not None:
        overrides["greedy"] = body.greedy
    try:
        sampling = dataclasses.replace(engine.defaults, **overrides)
    except SamplingError as e:
        raise APIError(400, str(e), param=e.field, code="invalid_value") from None
    chunk_frames = body.chunk_frames or settings.default_chunk_frames
    return SpeechJob(text, voice, sampling, chunk_frames=chunk_frames,
                     first_chunk_frames=body.first_chunk_frames or 1, max_frames=body.max_frames)


def pronounced(text: str, lexicon: Lexicon, voice_name: str | None, budget_s: float) -> list[Segment]:
    """The segments the engine cuts ``text`` into, each with what ``lexicon`` makes it say in the voice
    ``voice_name``; a 400 once the rules have taken ``budget_s`` over the text (each segment's own searches are
    bounded by the lexicon, so this returns within ``budget_s`` and one segment's bound)."""
    deadline = time.monotonic() + budget_s
    out = []
    for segment in segments_of(text):
        if time.monotonic() > deadline:
            raise APIError(400, f"the server's pronunciation rules took more than {budget_s:g} s over this input; "
                                "send it without \"pronunciation\": true, or in smaller parts",
                           param="pronunciation", code="pronunciation_too_slow")
        out.extend(pronounce([segment], lexicon, voice_name))
    return out


class Output:
    """Chunks -> bytes of the response format, the whole response stretched as one signal when speed != 1."""

    def __init__(self, body: SpeechSettings):
        self.encoder = StreamEncoder(body.response_format, SAMPLE_RATE)
        self.tempo = ChunkTempo(body.speed, per_segment=False)

    def add(self, chunk: Chunk) -> bytes:
        return self.encoder.encode(_samples(self.tempo.feed(chunk)))

    def finish(self) -> bytes:
        tail = self.tempo.finish()
        return (self.encoder.encode(_samples(tail)) if tail else b"") + self.encoder.finish()


def _samples(chunks: list[Chunk]) -> np.ndarray:
    return np.concatenate([c.samples for c in chunks]) if chunks else np.zeros(0, dtype=np.float32)


async def _audio(ticket: Ticket, body: SpeechRequest):
    """The encoded audio as it comes. The response starts with the first part (``DisconnectAwareStream``): an empty
    one at once for a request waiting in line, so its client sees its place; a failure before any audio answers
    as an API error, one after it aborts the response (``StreamAborted``): the client sees a cut stream, never a
    complete-looking one."""
    output = Output(body)
    started = False
    try:
        if ticket.position:
            started = True
            yield b""
        async for event in ticket.events():
            if not isinstance(event, Queued):
                data = output.add(event)
                if data:
                    started = True
                    yield data
        if ticket.state == "done":
            yield output.finish()
    except Exception as e:
        error = stream_error(e, ticket)
        if not started:
            raise error from e
        raise StreamAborted(f"speech {ticket.id} failed after its response started: {error.message}") from e
    finally:
        ticket.cancel()


def stream_error(e: Exception, ticket: Ticket) -> APIError:
    """What a client should see of a stream's failure: the engine's refusals and the limits as 4xx errors; anything
    else (a device failure) as a 500, logged."""
    if isinstance(e, OratorError):
        error = engine_error(e)
    elif isinstance(e, LimitReached):
        error = APIError(413 if e.code == "audio_too_long" else 408, str(e), code=e.code)
    else:
        log.error("speech %s failed", ticket.id, exc_info=e)
        error = APIError(500, f"speech generation failed ({type(e).__name__})", code="generation_failed")
    error.headers = {"X-Request-Id": ticket.id}
    return error


async def _sse(ticket: Ticket, body: SpeechRequest, input_tokens: int):
    output = Output(body)
    try:
        async for event in ticket.events():
            if isinstance(event, Queued):
                yield _event({"type": "speech.queue", "id": ticket.id, "position": event.position})
                continue
            data = output.add(event)
            if data:
                yield _event({"type": "speech.audio.delta", "audio": base64.b64encode(data).decode()})
            if event.warning is not None:  # after the segment's last audio
                yield _event({"type": "speech.warning", "id": ticket.id, "segment": event.segment,
                              "message": event.warning})
        if ticket.state != "done":
            return
        data = output.finish()
        if data:
            yield _event({"type": "speech.audio.delta", "audio": base64.b64encode(data).decode()})
        usage = {"input_tokens": input_tokens, "output_tokens": ticket.frames,
                 "total_tokens": input_tokens + ticket.frames}
        yield _event({"type": "speech.audio.done", "id": ticket.id, "usage": usage,
                      "timing": _with_rates(ticket.status(), ticket)})
    except Exception as e:
        err = stream_error(e, ticket)
        yield _event({"type": "error", **error_body(err.status, err.message, err.param, err.code)})
    finally:
        ticket.cancel()


def _with_rates(status: dict, ticket: Ticket) -> dict:
    """Add generation seconds and the real-time factor (generation time / audio time)."""
    if ticket.started is not None and ticket.audio_seconds > 0:
        end = ticket.finished or ticket.first_audio
        generating = end - ticket.started
        status.update(generation_seconds=round(generating, 4), rtf=round(generating / ticket.audio_seconds, 4))
    return status


def _event(payload: dict) -> str:
    return f"data: {json.dumps(payload)}\n\n"
