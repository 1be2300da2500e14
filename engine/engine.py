"""``Engine``: the one entry point. Loads a model and turns (text, voice) into codes, audio and chunks.

Long text is split into sentence-level segments (engine.text) spoken one after another in the same
voice; the codec decoder's streaming state runs across segment boundaries, so the audio of a whole
call is one continuous signal and ``stream`` concatenated equals ``synthesize`` for the same seed.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from engine.checkpoint import load_weights, materialize_buffers, resolve_model_dir
from engine.config import ModelConfig
from engine.errors import VoiceError
from engine.graphs.capture import graphs_enabled
from engine.model import Qwen3TTS
from engine.model.layers import fuse_projections
from engine.prompts import build_prompt, check_prompts, check_voice
from engine.results import SAMPLE_RATE, Audio, Chunk, closing_chunk
from engine.runtime import check_device, check_torch, default_dtype
from engine.sampling import Sampling
from engine.streamer import EagerStreamer
from engine.text import check_text, split_segments
from engine.tokenizer import TextTokenizer
from engine.voices import Voice

ENCODINGS_KEPT = 16  # clone encodings remembered per engine
MAX_FRAMES_CAP = 4096
DECODER_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)  # from_pretrained's decoder_dtype
DECODER_DTYPE_NAMES = tuple(str(d).removeprefix("torch.") for d in DECODER_DTYPES)  # the command lines' choices


def default_max_frames(text: str) -> int:
    """A generous per-segment frame budget: 0.4 s of audio per character plus 8 s, capped."""
    return min(MAX_FRAMES_CAP, 100 + 5 * len(text))


class Engine:
    def __init__(self, model: Qwen3TTS, config: ModelConfig, tokenizer: TextTokenizer, decoder,
                 model_dir: Path, defaults: Sampling, use_graphs: bool = False):
        self.model, self.config, self.tokenizer, self.decoder = model, config, tokenizer, decoder
        self.model_dir, self.defaults = model_dir, defaults
        self.device = model.talker.codec_head.weight.device
        self.dtype = model.talker.codec_head.weight.dtype
        self._encoder = None
        self._streamer = None
        self.use_graphs = use_graphs
        self._lock = threading.Lock()  # one generation at a time per engine
        self._encodings: OrderedDict[tuple, dict] = OrderedDict()  # recent clone encodings, by reference
        self._encodings_lock = threading.Lock()

    # ---- loading --------------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, model: str, device: str | torch.device = "cpu", dtype: torch.dtype | None = None,
                        graphs: bool | None = None, decoder_dtype: torch.dtype | None = None) -> Engine:
        """Load a local model directory or a Hugging Face id such as ``Qwen/Qwen3-TTS-12Hz-0.6B-Base``.

        ``graphs`` (default: on for CUDA unless ``ORATOR_EAGER=1``) selects the CUDA-graph fast path.
        ``decoder_dtype`` is the codec decoder's precision, apart from the model's ``dtype``: float32 by default
        (float64 with a float64 model), or bfloat16 / float16, faster on a GPU when many streams are decoded at
        once (the official package decodes in bf16 when its model is loaded in bf16); slow on a CPU. The audio
        comes out float32 whatever the decoder's dtype."""
        check_torch()
        device = torch.device(device)
        check_device(device)
        dtype = dtype or default_dtype(device)
        if decoder_dtype is None:
            decoder_dtype = torch.float64 if dtype == torch.float64 else torch.float32
        elif decoder_dtype not in DECODER_DTYPES:
            names = ", ".join(DECODER_DTYPE_NAMES)
            raise ValueError(f"decoder_dtype must be one of {names} (or None for the default), not {decoder_dtype!r}")
        model_dir = resolve_model_dir(model)
        config = ModelConfig.from_file(model_dir / "config.json")
        with torch.device("meta"):
            net = Qwen3TTS(config)
        load_weights(net, model_dir / "model.safetensors", device=device, dtype=dtype)
        materialize_buffers(net, device)
        fuse_projections(net)
        net.eval()
        from engine.codec.decoder import SpeechDecoder

        decoder = SpeechDecoder.from_dir(model_dir / "speech_tokenizer", device=device, dtype=decoder_dtype)
        use_graphs = graphs_enabled(device) if graphs is None else graphs
        return cls(net, config, TextTokenizer(model_dir), decoder, model_dir, _read_defaults(model_dir), use_graphs)

    # ---- facts ----------------------------------------------------------------------------------
    @property
    def model_type(self) -> str:
        return self.config.tts_model_type

    @property
    def model_size(self) -> str:
        return self.config.tts_model_size

    @property
    def speakers(self) -> list[str]:
        return self.config.speakers

    @property
    def languages(self) -> list[str]:
        return self.config.languages

    sample_rate = SAMPLE_RATE

    # ---- voices ---------------------------------------------------------------------------------
    def prepare_voice(self, voice: Voice) -> Voice:
        """Encode a cloned voice once (speaker embedding, and reference codes for in-context mode)."""
        if voice.kind != "clone" or voice.is_encoded:
            return voice
        if self.model.speaker_encoder is None:
            raise VoiceError("cloning a voice needs a Base model (it has the speaker encoder)")
        if voice.ref_audio is None:
            raise VoiceError("this cloned voice has neither reference audio nor an encoding")
        key = (hashlib.sha1(np.ascontiguousarray(voice.ref_audio).tobytes()).hexdigest(), voice.in_context)
        with self._encodings_lock:
            encoding = self._encodings.get(key)
            if encoding is not None:
                self._encodings.move_to_end(key)
        if encoding is None:  # the same reference again (a library voice stored unencoded): encoded once
            encoding = self._encode_reference(voice.ref_audio, voice.in_context)
            with self._encodings_lock:
                self._encodings[key] = encoding
                while len(self._encodings) > ENCODINGS_KEPT:
                    self._encodings.popitem(last=False)
        return voice.with_(**encoding, meta=dict(voice.meta, model_size=self.model_size))

    def _encode_reference(self, ref_audio: np.ndarray, in_context: bool) -> dict:
        """Speaker embedding (and, in context, reference codes) of a clone's reference audio."""
        from engine.audio_io import with_icl_silence
        from engine.codec.mel import speaker_embedding

        # in-context cloning: 0.5 s of silence after the reference keeps its last phoneme out of the
        # output; the same padded audio gives the embedding and the codes, as one recording would
        audio = with_icl_silence(ref_audio) if in_context else ref_audio
        with torch.inference_mode():
            emb = speaker_embedding(self.model.speaker_encoder, audio)
        encoding = {"speaker_embedding": emb.float().cpu().numpy()}
        if in_context:
            encoding["ref_codes"] = self.speech_encoder().encode(audio)
        return encoding

    def speech_encoder(self):
        if self._encoder is None:
            from engine.codec.encoder import SpeechEncoder

            self._encoder = SpeechEncoder.from_dir(self.model_dir / "speech_tokenizer", device=self.device)
        return self._encoder

    # ---- generation -----------------------------------------------------------------------------
    def generate_codes(self, text: str, voice: Voice, sampling: Sampling | None = None,
                       max_frames: int | None = None, non_streaming: bool | None = None) -> np.ndarray:
        """All frames for ``text`` (segments concatenated): int64 [T, 16]."""
        codes = [c for _, c in self._run(text, voice, 25, 25, sampling, max_frames, non_streaming, None,
                                         decode=False)]
        return np.concatenate(codes) if codes else np.zeros((0, 16), dtype=np.int64)

    def synthesize(self, text: str, voice: Voice, sampling: Sampling | None = None,
                   max_frames: int | None = None, non_streaming: bool | None = None) -> Audio:
        chunks, codes = [], []
        for chunk, chunk_codes in self._run(text, voice, 25, 25, sampling, max_frames, non_streaming, None):
            chunks.append(chunk.samples)
            codes.append(chunk_codes)
        samples = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
        codes = np.concatenate(codes) if codes else np.zeros((0, 16), dtype=np.int64)
        return Audio(samples, SAMPLE_RATE, codes)

    def stream(self, text: str, voice: Voice, chunk_frames: int = 4, first_chunk_frames: int = 1,
               sampling: Sampling | None = None, cancel: threading.Event | None = None,
               max_frames: int | None = None, non_streaming: bool | None = None) -> Iterator[Chunk]:
        """Yield audio chunks as frames are generated; stops within one chunk once ``cancel`` is set.
        The last chunk of the call has ``final=True``; when the end is only known after a chunk was
        sent (the utterance stopped right at a chunk boundary), an empty final chunk closes the call."""
        if chunk_frames < 1 or first_chunk_frames < 1:
            raise ValueError("chunk sizes must be at least one frame")
        last = None
        for last, _ in self._run(text, voice, first_chunk_frames, chunk_frames, sampling, max_frames,
                                 non_streaming, cancel):
            yield last
        if last is not None and not last.final and not (cancel is not None and cancel.is_set()):
            yield closing_chunk(last)

    def warmup(self, chunk_sizes=(1, 4)) -> float:
        """Build the streamer now (on CUDA: capture the graphs); returns the seconds it took."""
        t0 = time.perf_counter()
        self.streamer(chunk_sizes)
        return time.perf_counter() - t0

    def check(self, text: str, voice: Voice, non_streaming: bool | None = None) -> None:
        """Raise the error a generation of ``text`` in ``voice`` would fail with at its start (``TextError``,
        ``VoiceError``, ``UnsupportedError``), without generating: cheap host work, for a server to refuse a
        request before it waits for a slot. A clone not encoded yet is checked once it is, by the generation."""
        check_text(text)  # so the text has segments, each of which check_prompts checks with the voice
        if voice.kind == "clone" and not voice.is_encoded:
            return
        check_prompts(self.config, self.tokenizer, voice, [s.text for s in split_segments(text)], non_streaming)

    # ---- internals ------------------------------------------------------------------------------
    def plan(self, text: str, voice: Voice) -> tuple[Voice, list]:
        """Check the request and cut it into segments: (the prepared voice, segments)."""
        check_text(text)
        voice = self.prepare_voice(voice)
        check_voice(self.config, voice)
        return voice, split_segments(text)

    def streamer(self, chunk_sizes=(1, 4)):
        """The engine's streamer (graph-captured on CUDA), built on first use."""
        if self._streamer is None:
            if self.use_graphs:
                from engine.graphs.runner import GraphStreamer

                self._streamer = GraphStreamer(self.model.talker, self.decoder, chunk_sizes)
            else:
                self._streamer = EagerStreamer(self.model.talker, self.decoder)
        return self._streamer

    def _run(self, text, voice, first_chunk_frames, chunk_frames, sampling, max_frames, non_streaming,
             cancel, decode: bool = True) -> Iterator[tuple[Chunk, np.ndarray]]:
        """(chunk, its codes) for the whole text, segment after segment, in one voice (chunk samples
        are None when ``decode`` is False)."""
        t0 = time.perf_counter()
        sampling = sampling or self.defaults
        voice, segments = self.plan(text, voice)
        seed = sampling.seed if sampling.seed is not None else random.getrandbits(62)
        sizes = iter(lambda: chunk_frames, None)
        first = [True]

        def chunk_size() -> int:
            if first[0]:
                first[0] = False
                return first_chunk_frames
            return next(sizes)

        with self._lock:
            streamer = self.streamer((first_chunk_frames, chunk_frames))
            streamer.begin(voice.ref_codes if voice.in_context else None, (first_chunk_frames, chunk_frames))
            for index, seg in enumerate(segments):
                prompt = build_prompt(self.model.talker, self.config, self.tokenizer, voice, seg.text, non_streaming)
                budget = max_frames or default_max_frames(seg.text)
                frame = 0
                for codes, audio, ends in streamer.segment(prompt, sampling, seed + index, budget, chunk_size,
                                                           cancel, decode):
                    final = ends and index == len(segments) - 1
                    chunk = Chunk(audio, SAMPLE_RATE, frame, len(codes), index, (seg.start, seg.end),
                                  time.perf_counter() - t0, final)
                    frame += len(codes)
                    yield chunk, codes
                if cancel is not None and cancel.is_set():
                    return


def _read_defaults(model_dir: Path) -> Sampling:
    """Sampling defaults from ``generation_config.json`` (official values when absent)."""
    path = model_dir / "generation_config.json"
    if not path.is_file():
        return Sampling()
    g = json.loads(path.read_text(encoding="utf-8"))
    return Sampling(
        greedy=not g.get("do_sample", True), temperature=g.get("temperature", 0.9), top_k=g.get("top_k", 50),
        top_p=g.get("top_p", 1.0), repetition_penalty=g.get("repetition_penalty", 1.05),
        sub_greedy=not g.get("subtalker_dosample", True), sub_temperature=g.get("subtalker_temperature", 0.9),
        sub_top_k=g.get("subtalker_top_k", 50), sub_top_p=g.get("subtalker_top_p", 1.0),
    )


__all__ = ["Engine"]
