"""Turn (voice, text) into the talker's prefill embeddings and its trailing text track.

Every prompt position is the sum of a text-track embedding T(x) and a codec-track embedding C(x)
("dual track"). Layout, in order:
  1. optional instruction, text only;
  2. the role prefix ``<|im_start|>assistant\\n``, text only;
  3. codec control ids ([think, think_bos, lang, think_eos] or [nothink, think_bos, think_eos]),
     the speaker vector if any, then [pad, bos]; summed with [tts_pad ... tts_pad, tts_bos];
  4. the tail: the text (all of it up front in non-streaming mode, else one token per decode step
     through the "trailing" track) or, with a reference (an in-context clone's, or the earlier speech a
     call's later segments continue, ``engine.core.context``), its transcript + target text against the
     reference codes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from engine.core.config import MODEL_NAMES, ModelConfig
from engine.core.frames.capacity import MAX_SEQ, MAX_TRAILING, MIN_ROOM_FRAMES
from engine.core.model.talker import Talker
from engine.core.runtime import on_device
from engine.core.text.segments import check_text
from engine.core.tokenizer import TextTokenizer
from engine.core.voice import MODEL_TYPE_FOR_VOICE, Voice, check_voice_arrays, shown, voice_arrays
from engine.errors import TextError, UnsupportedError, VoiceError


@dataclass(slots=True)
class Prompt:
    embeds: torch.Tensor  # [1, L, H] prefill
    trailing: torch.Tensor  # [1, N, H] added to the decode inputs one per step
    pad_embed: torch.Tensor  # [1, 1, H] added once the trailing track runs out

    @property
    def length(self) -> int:
        return self.embeds.shape[1]


def default_non_streaming(voice: Voice) -> bool:
    """The official default: the whole text up front, except for voice cloning."""
    return voice.kind != "clone"


def check_voice(cfg: ModelConfig, voice: Voice) -> None:
    """Raise a clear error if ``voice`` cannot be spoken by this model (its arrays included:
    ``engine.core.voice.check_voice_arrays``, the reference audio aside, which only encoding reads)."""
    check_voice_arrays(voice_arrays(voice), "this voice", audio=False)
    for field, what in (("instruct", "instructions"), ("ref_text", "reference transcript")):
        if getattr(voice, field) is not None:
            try:
                check_text(getattr(voice, field), what, allow_empty=True)
            except TextError as e:
                raise VoiceError(str(e)) from None
    need = MODEL_TYPE_FOR_VOICE[voice.kind]
    if cfg.tts_model_type != need:
        raise VoiceError(
            f"a {voice.kind} voice needs a {MODEL_NAMES[need]} model, "
            f"but this is a {MODEL_NAMES[cfg.tts_model_type]} model"
        )
    if voice.language not in cfg.languages:
        raise VoiceError(f"unsupported language {shown(voice.language)}; choose one of {', '.join(cfg.languages)}")
    tc = cfg.talker_config
    if voice.kind == "preset":
        if voice.speaker not in _lower_keys(tc.spk_id):
            raise VoiceError(f"unknown speaker {shown(voice.speaker)}; this model has {', '.join(cfg.speakers)}")
        if voice.instruct and cfg.tts_model_size == "0b6":
            raise UnsupportedError(
                "the 0.6B CustomVoice model does not support style instructions; "
                "remove the instruction or use the 1.7B CustomVoice model"
            )
    if voice.kind == "design" and not voice.instruct:
        raise VoiceError("VoiceDesign needs a written description of the voice")
    if voice.kind == "clone":
        if voice.speaker_embedding is None:
            raise VoiceError("this cloned voice has not been encoded yet (Engine.prepare_voice)")
        if voice.speaker_embedding.shape != (tc.hidden_size,):
            raise VoiceError(
                f"this cloned voice was made for a model of width {voice.speaker_embedding.shape[0]}, "
                f"this model has width {tc.hidden_size} (a voice file from a different model size?)"
            )
        if voice.in_context and voice.ref_codes is None:
            raise VoiceError("in-context cloning needs the reference codes (Engine.prepare_voice)")


@dataclass(slots=True)
class _PromptPlan:
    """What a prompt is made of, before any embedding: its voice and the ids of each piece."""

    voice: Voice
    non_streaming: bool
    role: tuple[int, ...]  # the role prefix's text ids (embedded once for every prompt)
    control: tuple[int, ...]  # the codec control ids
    texts: list[list[int]]  # text ids to embed for this prompt alone: [instruction,] tail (text or transcript + text)


@dataclass(slots=True)
class _Layout:
    """A prompt as rows of its build's ``_Rows``: position i is text[i]'s row plus codec[i]'s."""

    text: list[int]
    codec: list[int]
    trailing: list[int]
    pad: int  # T(tts_pad), the trailing track's filler


class _Rows:
    """The rows [n, H] one ``build_prompts`` call gathers its prompts from, in the order added; each constant
    (``embed_constant``) once."""

    def __init__(self, talker: Talker):
        self.talker, self.parts, self.count = talker, [], 0
        self._constants: dict[tuple[str, tuple[int, ...]], list[int]] = {}

    def add(self, rows: torch.Tensor) -> list[int]:
        """Append ``rows`` [n, H]; their row numbers."""
        self.parts.append(rows)
        self.count += rows.shape[0]
        return list(range(self.count - rows.shape[0], self.count))

    def constant(self, track: str, ids: tuple[int, ...]) -> list[int]:
        """The rows of ``embed_constant(track, ids)``."""
        if (track, ids) not in self._constants:
            self._constants[track, ids] = self.add(self.talker.embed_constant(track, ids)[0])
        return self._constants[track, ids]


def build_prompt(talker: Talker, cfg: ModelConfig, tok: TextTokenizer, voice: Voice, text: str,
                 non_streaming: bool | None = None) -> Prompt:
    """The prompt of one (voice, text); a clear error (``TextError``, ``VoiceError``, ``UnsupportedError``) when the
    model cannot speak it."""
    prompt = build_prompts(talker, cfg, tok, [(voice, text)], non_streaming)[0]
    if isinstance(prompt, Exception):
        raise prompt
    return prompt


def build_prompts(talker: Talker, cfg: ModelConfig, tok: TextTokenizer, requests: list[tuple[Voice, str]],
                  non_streaming: bool | None = None) -> list[Prompt | Exception]:
    """The prompt of each (voice, text), or the error that refuses it (the others are built all the same).

    A handful of device operations for all of them, whatever their number (on a GPU each operation is a
    kernel launch and its host work, and the many-streams loop builds the prompts of every request joining at
    once): the texts are tokenized in one call, go through the text embedding and projection in one pass, and
    every prompt position, a text-track row plus a codec-track row (``_Layout``), is gathered from one table of
    rows (those texts, the constant embeddings, speakers, reference frames, a zero row) by two indexed reads
    and a sum; each prompt is a view of the result."""
    return _embedded(talker, cfg, _plans(cfg, tok, requests, non_streaming))


def build_prompt_ids(talker: Talker, cfg: ModelConfig, tok: TextTokenizer, voice: Voice, text_ids: list[int],
                     non_streaming: bool | None = None) -> Prompt:
    """``build_prompt`` of a text given as its ids (the text part of ``tok.speech_ids``, without the wrapper):
    live text speaks the ids of a segment's words before the segment is complete (``engine.core.text.live_text``)."""
    check_voice(cfg, voice)
    empty = tok.speech_ids("")
    plan = _fitting_plan(cfg, tok, voice, empty[:3] + list(text_ids) + empty[3:], non_streaming)
    prompt = _embedded(talker, cfg, [plan])[0]
    if isinstance(prompt, Exception):
        raise prompt
    return prompt


def _embedded(talker: Talker, cfg: ModelConfig, plans: list[_PromptPlan | Exception]) -> list[Prompt | Exception]:
    """The prompt of each plan (see ``build_prompts``), or the error already in its place."""
    pieces = [ids for plan in plans if isinstance(plan, _PromptPlan) for ids in plan.texts]
    if not pieces:
        return plans
    dev = talker.codec_head.weight.device
    rows = _Rows(talker)
    embedded = iter(rows.add(talker.embed_text(on_device([i for ids in pieces for i in ids], dev))))  # [all, H]
    zero = rows.add(talker.codec_head.weight.new_zeros(1, talker.config.hidden_size))[0]
    layouts = [plan if isinstance(plan, Exception)
               else _layout(cfg, plan, [[next(embedded) for _ in ids] for ids in plan.texts], rows, zero)
               for plan in plans]
    table = torch.cat(rows.parts)  # [rows, H]
    laid = [layout for layout in layouts if isinstance(layout, _Layout)]
    text, codec = [r for layout in laid for r in layout.text], [r for layout in laid for r in layout.codec]
    index = on_device(text + codec + [r for layout in laid for r in layout.trailing], dev)
    n = len(text)
    embeds = table[index[:n]] + table[index[n : 2 * n]]  # [positions of all prompts, H]
    trailing = table[index[2 * n :]]
    prompts, at, at_trailing = [], 0, 0
    for layout in layouts:
        if isinstance(layout, Exception):
            prompts.append(layout)
            continue
        end, end_trailing = at + len(layout.text), at_trailing + len(layout.trailing)
        prompts.append(Prompt(embeds[None, at:end], trailing[None, at_trailing:end_trailing],
                              table[None, layout.pad : layout.pad + 1]))
        at, at_trailing = end, end_trailing
    return prompts


def check_prompts(cfg: ModelConfig, tok: TextTokenizer, voice: Voice, texts: list[str],
                  non_streaming: bool | None = None) -> None:
    """Raise the error ``build_prompts`` would give the first of ``(voice, text)`` for ``texts`` that the model
    cannot speak or whose prompt would not fit, without building anything (host work only)."""
    for plan in _plans(cfg, tok, [(voice, text) for text in texts], non_streaming):
        if isinstance(plan, Exception):
            raise plan


def _plans(cfg: ModelConfig, tok: TextTokenizer, requests: list[tuple[Voice, str]],
           non_streaming: bool | None) -> list[_PromptPlan | Exception]:
    """The plan of each (voice, text) whose prompt fits a stream, or the error that refuses it: host work only,
    the texts tokenized in one call."""
    plans: list[_PromptPlan | Exception | None] = [_checked(cfg, voice, text) for voice, text in requests]
    valid = [i for i, plan in enumerate(plans) if plan is None]
    for i, ids in zip(valid, _speech_ids(tok, [requests[i][1] for i in valid]), strict=True):
        plans[i] = ids if isinstance(ids, Exception) else _fitting_plan(cfg, tok, requests[i][0], ids, non_streaming)
    return plans


def _checked(cfg: ModelConfig, voice: Voice, text: str) -> Exception | None:
    """Why (voice, text) cannot be spoken by this model, or None."""
    try:
        check_text(text)
        check_voice(cfg, voice)
    except Exception as e:  # the request's own error: only its own
        return e
    return None


def _speech_ids(tok: TextTokenizer, texts: list[str]) -> list[list[int] | Exception]:
    """``tok.speech_ids_many(texts)``, or where that fails as a whole, each text's ids or its own error."""
    try:
        return tok.speech_ids_many(texts)
    except Exception:  # one text the tokenizer refuses must not refuse the others
        out: list[list[int] | Exception] = []
        for text in texts:
            try:
                out.append(tok.speech_ids_many([text])[0])
            except Exception as e:
                out.append(TextError(f"the text cannot be tokenized: {e}"))
        return out


def _fitting_plan(cfg: ModelConfig, tok: TextTokenizer, voice: Voice, text_ids: list[int],
                  non_streaming: bool | None) -> _PromptPlan | Exception:
    """``_plan``, or the error of a request whose prompt would not fit a stream (``engine.core.frames.capacity``)."""
    try:
        plan = _plan(cfg, tok, voice, text_ids, non_streaming)
    except Exception as e:  # the request's own error: only its own
        return e
    positions, trailing = prompt_size(plan)
    if positions + MIN_ROOM_FRAMES > MAX_SEQ or trailing > MAX_TRAILING:
        parts = " and ".join(name for name, present in (("instructions", voice.instruct),
                                                        ("reference transcript", has_reference(voice)))
                         if present)
        return TextError(f"this request's prompt is too long: {positions} positions and {trailing} trailing text "
                         f"tokens, where at most {MAX_SEQ - MIN_ROOM_FRAMES} and {MAX_TRAILING} fit"
                         + (f"; shorten the {parts}" if parts else ""))
    return plan


def has_reference(voice: Voice) -> bool:
    """Whether ``voice``'s prompts hold reference speech (transcript and codes) that the target text continues:
    an in-context clone's reference, or a voice a call carries from its first segment on (``engine.core.context``)."""
    return voice.in_context or (voice.kind != "clone" and voice.ref_text is not None and voice.ref_codes is not None)


def prompt_positions(cfg: ModelConfig, tok: TextTokenizer, voice: Voice, text: str,
                     non_streaming: bool | None = None) -> int | None:
    """The prefill positions of (voice, text)'s prompt, or None when it would be refused (host work only)."""
    [plan] = _plans(cfg, tok, [(voice, text)], non_streaming)
    return None if isinstance(plan, Exception) else prompt_size(plan)[0]


def prompt_size(plan: _PromptPlan) -> tuple[int, int]:
    """(prefill positions, trailing text tokens) of ``plan``'s prompt, counted as ``_layout`` lays it out, before
    anything is embedded."""
    voice = plan.voice
    *instruct, tail = plan.texts
    speaker = 1 if voice.kind in ("preset", "clone") else 0
    head = sum(map(len, instruct)) + len(plan.role) + len(plan.control) + speaker + 1
    if has_reference(voice):
        text, codec = len(tail) + 1, 1 + len(voice.ref_codes)
        if plan.non_streaming:
            return head + text + codec, 1
        return head + codec, max(1, text - codec)
    if plan.non_streaming:
        return head + len(tail) + 2, 1
    return head + min(1, len(tail)), len(tail[1:]) + 1


def _plan(cfg: ModelConfig, tok: TextTokenizer, voice: Voice, text_ids: list[int],
          non_streaming: bool | None) -> _PromptPlan:
    """The pieces of the prompt of ``voice`` speaking the text of ``text_ids`` (``tok.speech_ids``): host work only."""
    tc = cfg.talker_config
    body = text_ids[3:-5]
    language_id = _language_id(cfg, voice)
    if language_id is None:
        control = (tc.codec_nothink_id, tc.codec_think_bos_id, tc.codec_think_eos_id)
    else:
        control = (tc.codec_think_id, tc.codec_think_bos_id, language_id, tc.codec_think_eos_id)
    tail = tok.reference_text_ids(voice.ref_text) + body if has_reference(voice) else body
    texts = ([tok.instruct_ids(voice.instruct)] if voice.instruct else []) + [tail]
    return _PromptPlan(voice, default_non_streaming(voice) if non_streaming is None else non_streaming,
                 tuple(text_ids[:3]), control, texts)


def _layout(cfg: ModelConfig, plan: _PromptPlan, texts: list[list[int]], rows: _Rows, zero: int) -> _Layout:
    """The rows of ``plan``'s prompt; ``texts``: the rows of its pieces' embeddings (``plan.texts``)."""
    tc, voice = cfg.talker_config, plan.voice
    bos, eos, pad = rows.constant("text", (cfg.tts_bos_token_id, cfg.tts_eos_token_id, cfg.tts_pad_token_id))
    *instruct, tail = texts
    text = [r for piece in instruct for r in piece] + rows.constant("text", plan.role)  # text only
    codec = [zero] * len(text)

    # codec control track, the speaker, then [pad, bos], against [tts_pad ... tts_pad, tts_bos]
    control = rows.constant("codec", plan.control) + _speaker_rows(cfg, voice, rows)
    codec_pad, codec_bos = rows.constant("codec", (tc.codec_pad_id, tc.codec_bos_id))
    text += [pad] * len(control) + [bos]
    codec += control + [codec_pad]

    if has_reference(voice):
        tail_text, tail_codec, trailing = _icl_tail(rows, voice, tail + [eos], codec_bos, codec_pad, pad,
                                                    plan.non_streaming)
        text += tail_text
        codec += tail_codec
    elif plan.non_streaming:
        text += tail + [eos, pad]
        codec += [codec_pad] * (len(tail) + 1) + [codec_bos]
        trailing = [pad]
    else:
        text += tail[:1]
        codec += [codec_bos] * len(tail[:1])
        trailing = tail[1:] + [eos]
    return _Layout(text, codec, trailing, pad)


def _icl_tail(rows: _Rows, voice: Voice, text: list[int], codec_bos: int, codec_pad: int, pad: int,
              non_streaming: bool) -> tuple[list[int], list[int], list[int]]:
    """In-context cloning: transcript + text + eos (``text``, rows) against [bos, reference frames]; the (text,
    codec) rows of the tail and the trailing track's."""
    talker = rows.talker
    ref = on_device(np.asarray(voice.ref_codes), talker.codec_head.weight.device)  # [Tr, 16]
    codec = [codec_bos] + rows.add(talker.embed_frame(ref))
    if non_streaming:
        return text + [pad] * len(codec), [codec_pad] * len(text) + codec, [pad]
    if len(text) > len(codec):
        return text[: len(codec)], codec, text[len(codec) :]
    return text + [pad] * (len(codec) - len(text)), codec, [pad]


def _speaker_rows(cfg: ModelConfig, voice: Voice, rows: _Rows) -> list[int]:
    """The speaker's row on the codec track: a preset's embedding, a clone's x-vector; none for a design."""
    if voice.kind == "preset":
        return rows.constant("codec", (_lower_keys(cfg.talker_config.spk_id)[voice.speaker],))
    if voice.kind == "clone":
        w = rows.talker.codec_head.weight
        return rows.add(on_device(voice.speaker_embedding, w.device, None).to(w.dtype)[None])
    return []


def _language_id(cfg: ModelConfig, voice: Voice) -> int | None:
    tc = cfg.talker_config
    lang = None if voice.language == "auto" else tc.codec_language_id[voice.language]
    if voice.kind == "preset" and voice.language in ("chinese", "auto"):
        dialect = _lower_keys(tc.spk_is_dialect).get(voice.speaker)
        if dialect:
            lang = tc.codec_language_id[dialect]
    return lang


def _lower_keys(d: dict) -> dict:
    return {k.lower(): v for k, v in d.items()}
