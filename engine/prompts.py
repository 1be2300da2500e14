"""Turn (voice, text) into the talker's prefill embeddings and its trailing text track.

Every prompt position is the sum of a text-track embedding T(x) and a codec-track embedding C(x)
("dual track"). Layout, in order:
  1. optional instruction, text only;
  2. the role prefix ``<|im_start|>assistant\\n``, text only;
  3. codec control ids ([think, think_bos, lang, think_eos] or [nothink, think_bos, think_eos]),
     the speaker vector if any, then [pad, bos]; summed with [tts_pad ... tts_pad, tts_bos];
  4. the tail: the text (all of it up front in non-streaming mode, else one token per decode step
     through the "trailing" track) or, for in-context cloning, transcript + target text against
     the reference codes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from engine.config import ModelConfig
from engine.errors import TextError, UnsupportedError, VoiceError
from engine.model.talker import Talker
from engine.runtime import on_device
from engine.tokenizer import TextTokenizer
from engine.voices import Voice

REQUIRED_MODEL = {"preset": "custom_voice", "design": "voice_design", "clone": "base"}
MODEL_NAMES = {"custom_voice": "CustomVoice", "voice_design": "VoiceDesign", "base": "Base"}


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
    """Raise a clear error if ``voice`` cannot be spoken by this model."""
    need = REQUIRED_MODEL[voice.kind]
    if cfg.tts_model_type != need:
        raise VoiceError(
            f"a {voice.kind} voice needs a {MODEL_NAMES[need]} model, "
            f"but this is a {MODEL_NAMES[cfg.tts_model_type]} model"
        )
    if voice.language not in cfg.languages:
        raise VoiceError(f"unsupported language {voice.language!r}; choose one of {', '.join(cfg.languages)}")
    tc = cfg.talker_config
    if voice.kind == "preset":
        if voice.speaker not in _lower_keys(tc.spk_id):
            raise VoiceError(f"unknown speaker {voice.speaker!r}; this model has {', '.join(cfg.speakers)}")
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
class _Plan:
    """What a prompt is made of, before any embedding: its voice and the ids of each piece."""

    voice: Voice
    non_streaming: bool
    role: tuple[int, ...]  # the role prefix's text ids (embedded once for every prompt)
    control: tuple[int, ...]  # the codec control ids
    texts: list[list[int]]  # text ids to embed for this prompt alone: [instruction,] tail (text or transcript + text)
    body: int  # the tail's last ``body`` ids are the text to speak


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
    """The prompt of each (voice, text), or the error that refuses it (the others are built all the same). The
    text of all of them goes through the text embedding and projection in one pass: on a GPU a prompt is a few
    dozen small kernel launches, which the many-streams loop would otherwise pay one prompt at a time."""
    plans: list[_Plan | Exception] = []
    for voice, text in requests:
        try:
            plans.append(_plan(cfg, tok, voice, text, non_streaming))
        except Exception as e:  # the request's own error (its text or voice refused): only its own
            plans.append(e)
    pieces = [ids for plan in plans if isinstance(plan, _Plan) for ids in plan.texts]
    if not pieces:
        return plans
    dev = talker.codec_head.weight.device
    embedded = talker.embed_text(on_device([i for ids in pieces for i in ids], dev)[None])  # [1, all, H]
    texts = iter(embedded.split([len(ids) for ids in pieces], dim=1))
    return [plan if isinstance(plan, Exception) else _assemble(talker, cfg, plan, [next(texts) for _ in plan.texts])
            for plan in plans]


def _plan(cfg: ModelConfig, tok: TextTokenizer, voice: Voice, text: str, non_streaming: bool | None) -> _Plan:
    """Check (voice, text) and tokenize it: host work only."""
    if not text or not text.strip():
        raise TextError("there is no text to speak")
    check_voice(cfg, voice)
    tc = cfg.talker_config
    text_ids = tok.speech_ids(text)
    body = text_ids[3:-5]
    language_id = _language_id(cfg, voice)
    if language_id is None:
        control = (tc.codec_nothink_id, tc.codec_think_bos_id, tc.codec_think_eos_id)
    else:
        control = (tc.codec_think_id, tc.codec_think_bos_id, language_id, tc.codec_think_eos_id)
    tail = tok.reference_text_ids(voice.ref_text) + body if voice.in_context else body
    texts = ([tok.instruct_ids(voice.instruct)] if voice.instruct else []) + [tail]
    return _Plan(voice, default_non_streaming(voice) if non_streaming is None else non_streaming,
                 tuple(text_ids[:3]), control, texts, len(body))


def _assemble(talker: Talker, cfg: ModelConfig, plan: _Plan, texts: list[torch.Tensor]) -> Prompt:
    """The prompt of ``plan`` from its texts' embeddings (``plan.texts``, each [1, n, H])."""
    tc, voice = cfg.talker_config, plan.voice

    def T_const(x) -> torch.Tensor:  # T of ids found in every prompt, computed once
        return talker.embed_constant("text", x)

    def C_const(x) -> torch.Tensor:  # C of those
        return talker.embed_constant("codec", x)

    bos_embed, eos_embed, pad_embed = T_const((cfg.tts_bos_token_id, cfg.tts_eos_token_id,
                                          cfg.tts_pad_token_id)).split(1, dim=1)  # 3 x [1, 1, H]
    *instruct, tail = texts
    parts = instruct + [T_const(plan.role)]

    # codec control track
    codec = [C_const(plan.control)]
    speaker = _speaker_embed(talker, cfg, voice)
    if speaker is not None:
        codec.append(speaker.view(1, 1, -1))
    codec.append(C_const((tc.codec_pad_id, tc.codec_bos_id)))
    codec = torch.cat(codec, dim=1)  # [1, Lc, H]
    text_track = torch.cat([pad_embed.expand(-1, codec.shape[1] - 2, -1), bos_embed], dim=1)
    parts.append(text_track + codec[:, :-1])
    codec_bos = codec[:, -1:]

    if voice.in_context:
        tail, trailing = _icl_tail(talker, voice, tail, eos_embed, pad_embed, plan.non_streaming)
        parts.append(tail)
    elif plan.non_streaming:
        n = plan.body + 1
        parts.append(torch.cat([tail, eos_embed], dim=1) + C_const((tc.codec_pad_id,)).expand(-1, n, -1))
        parts.append(pad_embed + codec_bos)
        trailing = pad_embed
    else:
        parts.append(tail[:, :1] + codec_bos)
        trailing = torch.cat([tail[:, 1:], eos_embed], dim=1)
    return Prompt(torch.cat(parts, dim=1), trailing, pad_embed)


def _icl_tail(talker, voice, text, eos_embed, pad_embed, non_streaming):
    """In-context cloning: transcript + text (``text``: their embeddings) against [bos, reference frames]."""
    tc_pad = talker.config.codec_pad_id
    text = torch.cat([text, eos_embed], dim=1)
    ref = on_device(np.asarray(voice.ref_codes), text.device)  # [Tr, 16]
    codec = torch.cat([talker.embed_constant("codec", (talker.config.codec_bos_id,)),
                       talker.embed_frame(ref)[None]], dim=1)  # [1, 1 + Tr, H]
    n_text, n_codec = text.shape[1], codec.shape[1]
    if non_streaming:
        pads = talker.embed_constant("codec", (tc_pad,)).expand(-1, n_text, -1)
        tail = torch.cat([text + pads, codec + pad_embed], dim=1)
        return tail, pad_embed
    if n_text > n_codec:
        return text[:, :n_codec] + codec, text[:, n_codec:]
    text = torch.cat([text, pad_embed.expand(-1, n_codec - n_text, -1)], dim=1)
    return text + codec, pad_embed


def _language_id(cfg: ModelConfig, voice: Voice) -> int | None:
    tc = cfg.talker_config
    lang = None if voice.language == "auto" else tc.codec_language_id[voice.language]
    if voice.kind == "preset" and voice.language in ("chinese", "auto"):
        dialect = _lower_keys(tc.spk_is_dialect).get(voice.speaker)
        if dialect:
            lang = tc.codec_language_id[dialect]
    return lang


def _speaker_embed(talker: Talker, cfg: ModelConfig, voice: Voice) -> torch.Tensor | None:
    if voice.kind == "preset":
        return talker.embed_constant("codec", (_lower_keys(cfg.talker_config.spk_id)[voice.speaker],))
    if voice.kind == "clone":
        w = talker.codec_head.weight
        return on_device(voice.speaker_embedding, w.device, None).to(w.dtype)
    return None


def _lower_keys(d: dict) -> dict:
    return {k.lower(): v for k, v in d.items()}
