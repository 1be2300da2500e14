"""Voices: resolving a request's ``voice`` to an engine ``Voice``, and the ``/v1/audio/voices`` API.

``voice`` is a preset speaker of the model (CustomVoice), a library voice name, or ``{"id": name}``
(a library voice). On a VoiceDesign model, a name that is not in the library is spoken with the
request's ``instructions`` as the voice description.

``POST /v1/audio/voices`` stores a new library voice from either
- multipart form data: ``audio_sample`` (a reference recording: wav, flac, ogg or mp3), ``name``, and
  optionally ``transcript`` (or ``ref_text``) for in-context cloning, and ``language``; or
- JSON or form fields without a file: ``name`` plus ``description`` (a designed voice) or ``speaker``
  (a preset, with optional ``instructions``), and optionally ``language``.
A new voice is checked against the loaded model (``Engine.check``): a preset speaker the model does not have,
a designed voice on a model that is not VoiceDesign, or a description or transcript too long for any prompt,
is refused with 400 and not stored. A clone is encoded at once when the server runs a Base model; otherwise
its reference audio is kept unencoded in the voice file (``"encoded": false`` in the answer, with a note) and
a Base model encodes it when it is first used: the library is shared with the studio, which loads a Base model
for clones.
Every field but ``audio_sample`` is text: a JSON value of another type (``{"name": ["x"]}``), a file in its place,
or a JSON body that is not an object, too large or nested too deeply (``engine.json_limits``) is a 400 naming it.
``GET`` lists presets and library voices (a library file that cannot be read is listed with
``"readable": false`` and its ``error``), ``DELETE /v1/audio/voices/{name}`` removes one (an unreadable one
too). Library file work runs in worker threads, off the event loop (``server.voice_library``); error messages name
no temporary or absolute paths and never list the library.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from engine import Engine, OratorError, UnsupportedError, Voice, VoiceError, json_limits
from engine.core.prompts import check_voice
from engine.core.voice import shown
from engine.core.voice_file import VoiceInfo
from engine.voices.library import VoiceEntry
from server.errors import APIError, engine_error
from server.voice_library import VoiceStore, checked_name

router = APIRouter()
_AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3")
_PROBE_TEXT = "Hello."  # a short text a new voice must be able to speak
_SHOWN_NAME_CHARS = 80  # a voice name echoed in an error is cut to this: the request's field has no limit
# the fields a new voice is made from; all text but the file
_TEXT_FIELDS = ("name", "language", "transcript", "ref_text", "description", "speaker", "instructions")
_JSON_TYPES = {dict: "an object", list: "an array", bool: "a boolean", int: "a number", float: "a number"}


def resolve_voice(engine: Engine, store: VoiceStore, voice, instructions: str | None,
                  language: str | None) -> Voice:
    """The engine voice a speech request asks for, checked against the model; APIError if unusable."""
    by_id = not isinstance(voice, str)
    name = (voice.id if by_id else voice).strip()
    if not name:
        raise APIError(400, "voice is empty", param="voice", code="invalid_voice")
    speakers = {s.lower() for s in engine.speakers}
    stored = store.find(name)  # compared with the folder's names: a path never matches
    try:
        if stored is not None:
            chosen = store.load(stored)
            if instructions:
                if chosen.kind != "preset":
                    raise APIError(400, f"instructions apply to preset voices; {stored!r} is a {chosen.kind} voice",
                                   param="instructions", code="unsupported")
                chosen = chosen.with_(instruct=instructions)
        elif not by_id and name.lower() in speakers:
            chosen = Voice.preset(name, instruct=instructions)
        elif not by_id and engine.model_type == "voice_design" and instructions:
            chosen = Voice.design(instructions)
        else:
            hint = f"presets: {', '.join(engine.speakers)}; " if engine.speakers else ""
            raise APIError(400, f"unknown voice {_shown(name)} ({hint}GET /v1/audio/voices lists the library)",
                           param="voice", code="voice_not_found")
        if language:
            chosen = chosen.with_(language=language.lower())
        if chosen.kind != "clone" or chosen.is_encoded:
            check_voice(engine.config, chosen)
        elif engine.model_type != "base":
            raise VoiceError(f"the cloned voice {name!r} needs a Base model; this server runs a "
                             f"{engine.model_type} model")
    except (OratorError, ValueError) as e:
        param = "instructions" if isinstance(e, UnsupportedError) else "voice"
        raise engine_error(e if isinstance(e, OratorError) else VoiceError(str(e)), param=param) from e
    return chosen


def _shown(name: str) -> str:
    return repr(name if len(name) <= _SHOWN_NAME_CHARS else name[:_SHOWN_NAME_CHARS] + "…")


def _summary(voice: Voice | VoiceInfo) -> str | None:
    """What a listing says of a voice or a voice file's header: its speaker, description or transcript."""
    return {"preset": voice.speaker, "design": voice.instruct, "clone": voice.ref_text}[voice.kind]


def describe(name: str, voice: Voice, source: str) -> dict:
    return {"id": name, "name": name, "object": "voice", "kind": voice.kind, "source": source,
            "language": voice.language, "summary": _summary(voice), "encoded": voice.is_encoded, "readable": True}


def describe_entry(entry: VoiceEntry) -> dict:
    """A library voice as listed, from its file's header; an unreadable file with its error instead."""
    info = entry.info
    answer = {"id": entry.name, "name": entry.name, "object": "voice", "source": "library",
              "readable": entry.readable}
    if info is None:
        return {**answer, "kind": None, "language": None, "summary": None, "encoded": False, "error": entry.error}
    return {**answer, "kind": info.kind, "language": info.language, "summary": _summary(info),
            "encoded": info.is_encoded, "created": info.created}


@router.get("/v1/audio/voices")
async def list_voices(request: Request):
    engine, store = request.app.state.engine_or_503(), request.app.state.store
    presets = [describe(s, Voice.preset(s), "preset") for s in engine.speakers]
    entries = await run_in_threadpool(store.entries)
    return {"object": "list", "data": presets + [describe_entry(e) for e in entries]}


@router.delete("/v1/audio/voices/{name}")
async def delete_voice(name: str, request: Request):
    removed = await run_in_threadpool(request.app.state.store.delete, name)
    return {"id": removed, "object": "voice", "deleted": True}


@router.post("/v1/audio/voices")
async def create_voice(request: Request):
    engine, store = request.app.state.engine_or_503(), request.app.state.store
    fields = await _read_fields(request, request.app.state.settings.max_upload_bytes)
    name = checked_name(fields.get("name"))
    existing = await run_in_threadpool(store.find, name)
    if existing is not None:
        raise APIError(409, f"a voice called {_shown(existing)} already exists; delete it first", param="name",
                       code="voice_exists")
    language = (fields.get("language") or "auto").lower()
    if language not in engine.languages:
        raise APIError(400, f"unsupported language {shown(language)}; choose one of {', '.join(engine.languages)}",
                       param="language", code="invalid_language")
    sample = fields.get("audio_sample")
    note = None
    try:
        if isinstance(sample, UploadFile):
            transcript = fields.get("transcript") or fields.get("ref_text")
            voice = await run_in_threadpool(_clone_from_upload, sample, transcript, language, name)
            if engine.model_type == "base":
                voice = await run_in_threadpool(engine.prepare_voice, voice)
            else:
                note = (f"stored unencoded: this server runs a {engine.model_type} model; the reference audio "
                        "is kept in the voice file and a Base model encodes it when it is first used")
        elif fields.get("description"):
            voice = Voice.design(fields["description"], language=language)
        elif fields.get("speaker"):
            voice = Voice.preset(fields["speaker"], language=language, instruct=fields.get("instructions"))
        else:
            raise APIError(400, "send an audio_sample file (a clone), a description (a designed voice) or a "
                                "speaker (a preset)", param="audio_sample", code="missing_voice_source")
    except VoiceError as e:
        raise engine_error(e, param="audio_sample") from e
    if note is None:
        _check_usable(engine, voice)
    stored = await run_in_threadpool(store.save, voice, name)
    answer = describe(stored, voice, "library")
    answer["note"] = note
    return answer


async def _read_fields(request: Request, max_upload_bytes: int) -> dict:
    """The request's fields from multipart/urlencoded form data or a JSON object: ``audio_sample`` (a file) and
    the text fields, each checked to be text."""
    content_type = request.headers.get("content-type", "")
    if content_type.startswith(("multipart/form-data", "application/x-www-form-urlencoded")):
        form = await request.form(max_files=1, max_fields=16)
        fields = {key: value for key, value in form.items()}
        sample = fields.get("audio_sample")
        if isinstance(sample, UploadFile) and (sample.size or 0) > max_upload_bytes:
            raise APIError(413, f"audio_sample has {sample.size} bytes; the limit is {max_upload_bytes}",
                           param="audio_sample", code="upload_too_large")
        for key in _TEXT_FIELDS:
            if isinstance(fields.get(key), UploadFile):
                raise APIError(400, f"{key} must be text, not a file", param=key, code="invalid_field")
        return {k: v if isinstance(v, UploadFile) else str(v).strip() for k, v in fields.items()}
    try:
        body = json_limits.loads(await request.body())
    except json_limits.JSONLimitError as e:
        raise APIError(400, f"the request body cannot be read: {e}", code="invalid_body") from None
    except ValueError:
        raise APIError(400, "send multipart form data or a JSON object", code="invalid_body") from None
    if not isinstance(body, dict):
        raise APIError(400, "the request body must be a JSON object", code="invalid_body")
    fields = {}
    for key in _TEXT_FIELDS:
        value = body.get(key)
        if value is not None and not isinstance(value, str):
            raise APIError(400, f"{key} must be a string, not {_JSON_TYPES.get(type(value), 'that')}", param=key,
                           code="invalid_field")
        if value is not None:
            fields[key] = value.strip()
    return fields


def _check_usable(engine: Engine, voice: Voice) -> None:
    """A 400 unless the loaded model can speak ``voice``, its prompt included (a description or a transcript too
    long for any prompt): a voice no request could use is not stored."""
    try:
        engine.check(_PROBE_TEXT, voice)
    except OratorError as e:
        field = {"preset": "speaker", "design": "description", "clone": "audio_sample"}[voice.kind]
        raise engine_error(e, param="instructions" if isinstance(e, UnsupportedError) else field) from e


def _clone_from_upload(sample: UploadFile, transcript: str | None, language: str, name: str) -> Voice:
    suffix = Path(sample.filename or "").suffix.lower()
    label = Path(sample.filename).name if sample.filename else "audio_sample"
    with tempfile.NamedTemporaryFile(suffix=suffix if suffix in _AUDIO_SUFFIXES else ".wav") as tmp:
        sample.file.seek(0)
        while block := sample.file.read(1 << 20):
            tmp.write(block)
        tmp.flush()
        try:
            voice = Voice.clone(tmp.name, ref_text=transcript, language=language, name=name)
        except VoiceError as e:  # it names the temporary file: say the upload's name instead
            raise VoiceError(str(e).replace(tmp.name, label).replace(Path(tmp.name).name, label)) from None
    return voice.with_(meta=dict(voice.meta, source=sample.filename or "upload"))
