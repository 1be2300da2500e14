"""``Engine``: the one entry point. Loads a model (``engine.core.loading``) and turns (text, voice) into codes, audio
and chunks.

Long text is planned as segments (engine.core.text.segments: a line's short sentences merged) spoken one after another
in the same voice (a designed voice carries its first segment as reference, engine.core.context); the codec decoder's
streaming state runs across segment boundaries, so the audio of a whole call is one continuous signal and
``stream`` concatenated equals ``synthesize`` for the same seed. A segment that does not end is cut by the
runaway guard (engine.core.frames.guard) and the call goes on.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from engine.core import execution_plan, options
from engine.core.chunk_sizes import GROWN_CHUNK_FRAMES, ChunkSizes
from engine.core.chunks import SAMPLE_RATE, Audio, Chunk, closing_chunk
from engine.core.config import DECODER_DTYPE_NAMES, ModelConfig
from engine.core.context import VoiceContext
from engine.core.cpu.threads import ThreadGovernor
from engine.core.frames.capacity import fitted_budget
from engine.core.frames.eager import EagerStreamer
from engine.core.frames.guard import FrameGuard
from engine.core.loading import load_engine
from engine.core.model import Qwen3TTS
from engine.core.prompts import build_prompt, build_prompts, check_prompts, prompt_positions
from engine.core.pronunciation.lexicon import Lexicon, pronounce
from engine.core.sampling import Sampling
from engine.core.speech_plan import Plan, draw_seed
from engine.core.text.segments import Segment, segments_of
from engine.core.tokenizer import TextTokenizer
from engine.core.voice import Voice, check_voice_arrays, voice_arrays
from engine.errors import VoiceError

if TYPE_CHECKING:
    from engine.core.frames.batched.streams import BatchedStreams
    from engine.core.text.live_text import LiveText

ENCODINGS_KEPT = 16  # clone encodings remembered per engine
LIVE_PROBE_TEXT = "Hello."  # the text a live session's voice is checked with before its own text arrives
log = logging.getLogger(__name__)


class Engine:
    def __init__(self, model: Qwen3TTS, config: ModelConfig, tokenizer: TextTokenizer, decoder,
                 model_dir: Path, defaults: Sampling, use_graphs: bool = False, cpu_int8: bool = False):
        self.model, self.config, self.tokenizer, self.decoder = model, config, tokenizer, decoder
        self.model_dir, self.defaults = model_dir, defaults
        self.device = model.talker.codec_head.weight.device
        self.dtype = model.talker.codec_head.weight.dtype
        self._encoder = None
        self._single = None  # the single-stream streamer, built on first use
        self.use_graphs = use_graphs
        self.cpu_int8 = cpu_int8  # the decoder layers' projections are quantized: int8 (engine.core.cpu.int8)
        self.precision = "fast" if cpu_int8 or self.dtype not in (torch.float32, torch.float64) else "exact"
        # what it runs, chosen once at load (engine.core.execution_plan); set by ``from_pretrained``
        self.execution_plan: execution_plan.ExecutionPlan | None = None
        self._lock = threading.Lock()  # one generation at a time per engine
        self._encodings: OrderedDict[tuple, dict] = OrderedDict()  # recent clone encodings, by reference
        self._encodings_lock = threading.Lock()

    # ---- loading --------------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, model: str, device: str | torch.device = "cpu", dtype: torch.dtype | None = None,
                        graphs: bool | None = None, decoder_dtype: torch.dtype | None = None,
                        cpu_int8: bool | None = None, precision: str | None = None) -> Engine:
        """Load a local model directory or a Hugging Face id such as ``Qwen/Qwen3-TTS-12Hz-0.6B-Base``.

        ``graphs`` (default: on for CUDA while the ``graphs`` option is on, ``engine.core.options``) selects the
        CUDA-graph fast path.
        ``decoder_dtype`` is the codec decoder's precision, apart from the model's ``dtype``: float32 by default
        (float64 with a float64 model; on the fast CPU path bfloat16 where the CPU multiplies it natively,
        ``engine.core.runtime.fast_cpu_decoder_dtype``), or bfloat16 / float16, faster on a GPU when many streams are
        decoded at once (the official package decodes in bf16 when its model is loaded in bf16). The audio
        comes out float32 whatever the decoder's dtype.
        ``precision`` (default: the ``precision`` option, ``fast``; ``engine.core.execution_plan.resolve_precision``):
        ``fast`` gives a model on a CPU int8 projections in its decoder layers (``engine.core.cpu.int8``) and a bfloat16
        decoder where the CPU multiplies bfloat16, and on a GPU the device's default dtype; ``exact`` keeps float32.
        On a CPU ``dtype`` is what stays float (float32; float64 only with ``exact``): it no longer chooses int8.
        ``cpu_int8`` is its old spelling (True: ``fast``, False: ``exact``). What the engine runs is chosen here,
        once, and kept as ``execution_plan`` (logged once)."""
        engine = load_engine(cls, model, device, dtype, graphs, decoder_dtype, cpu_int8, precision)
        log.info("execution plan: %s", engine.execution_plan.summary())
        return engine

    # ---- facts ----------------------------------------------------------------------------------
    @property
    def model_type(self) -> str:
        return self.config.tts_model_type

    @property
    def model_size(self) -> str:
        return self.config.tts_model_size

    @property
    def cpu_thread_counts(self) -> tuple[int, ...]:
        """The CPU thread counts a call may run with: the two the fast path chooses between as it measures
        (``engine.core.cpu.threads``), or the one in use."""
        streamer = self._single_streamer() if not self.use_graphs else None
        governor = getattr(streamer, "governor", None)
        return tuple(governor.choices) if governor is not None else (torch.get_num_threads(),)

    @property
    def speakers(self) -> list[str]:
        return self.config.speakers

    @property
    def languages(self) -> list[str]:
        return self.config.languages

    sample_rate = SAMPLE_RATE

    # ---- voices ---------------------------------------------------------------------------------
    def prepare_voice(self, voice: Voice) -> Voice:
        """Encode a cloned voice once (speaker embedding, and reference codes for in-context mode); a voice whose
        arrays no model could use (``check_voice_arrays``) is refused first."""
        check_voice_arrays(voice_arrays(voice), "this voice", audio=voice.kind == "clone" and not voice.is_encoded)
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
        from engine.core.audio_files import with_icl_silence
        from engine.core.codec.mel import speaker_embedding

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
            from engine.core.codec.encoder import SpeechEncoder

            self._encoder = SpeechEncoder.from_dir(self.model_dir / "speech_tokenizer", device=self.device)
        return self._encoder

    # ---- generation -----------------------------------------------------------------------------
    def plan(self, text: str | Sequence[Segment], voice: Voice, sampling: Sampling | None = None,
             max_frames: int | None = None, non_streaming: bool | None = None,
             pronunciation: Lexicon | None = None, segment_chars: int | None = None) -> Plan:
        """What a call with these arguments will speak: the text checked and cut into segments (the spans that
        chunks, highlighting and subtitles refer to; short sentences merged up to ``segment_chars``, default
        ``engine.core.text.segments.DEFAULT_TARGET_CHARS``, 0 for one sentence a segment; ``text`` may be those
        segments already
        cut, see ``engine.core.text.segments.segments_of``), each with what it is spoken as under ``pronunciation``'s
        rules for
        this voice (``Segment.speech``; the spans stay those of the written text), the voice checked and prepared
        (a clone encoded), the sampling (the model's defaults when None) and the call's seed. Raises the error the
        call would."""
        segments = pronounce(segments_of(text, segment_chars), pronunciation, voice.name)
        voice = self.prepare_voice(voice)
        self._check(segments, voice, non_streaming)
        sampling = sampling or self.defaults
        return Plan(voice, segments, sampling, draw_seed(sampling.seed), max_frames, non_streaming)

    def generate_codes(self, text: str, voice: Voice, sampling: Sampling | None = None,
                       max_frames: int | None = None, non_streaming: bool | None = None,
                       pronunciation: Lexicon | None = None, segment_chars: int | None = None) -> np.ndarray:
        """All frames for ``text`` (segments concatenated): int64 [T, 16]."""
        plan = self.plan(text, voice, sampling, max_frames, non_streaming, pronunciation, segment_chars)
        codes = [c for _, c in self._run(plan, ChunkSizes(25, 25), decode=False)]
        return np.concatenate(codes) if codes else np.zeros((0, 16), dtype=np.int64)

    def synthesize(self, text: str, voice: Voice, sampling: Sampling | None = None,
                   max_frames: int | None = None, non_streaming: bool | None = None,
                   pronunciation: Lexicon | None = None, segment_chars: int | None = None) -> Audio:
        plan = self.plan(text, voice, sampling, max_frames, non_streaming, pronunciation, segment_chars)
        chunks, codes = [], []
        for chunk, chunk_codes in self._run(plan, ChunkSizes(25, 25)):
            chunks.append(chunk.samples)
            codes.append(chunk_codes)
        samples = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
        codes = np.concatenate(codes) if codes else np.zeros((0, 16), dtype=np.int64)
        return Audio(samples, SAMPLE_RATE, codes)

    def stream(self, text: str | Sequence[Segment], voice: Voice, chunk_frames: int = 4, first_chunk_frames: int = 1,
               sampling: Sampling | None = None, cancel: threading.Event | None = None,
               max_frames: int | None = None, non_streaming: bool | None = None,
               pronunciation: Lexicon | None = None, segment_chars: int | None = None,
               largest_chunk_frames: int | None = None) -> Iterator[Chunk]:
        """Yield audio chunks as frames are generated; stops within one chunk once ``cancel`` is set. ``text`` may
        be segments already cut (``plan``): the chunks then carry their spans and index them. ``pronunciation``
        rules change what is said, not the spans (``plan``).
        The last chunk of the call has ``final=True``; when the end is only known after a chunk was
        sent (the utterance stopped right at a chunk boundary), an empty final chunk closes the call. A segment
        cut by the runaway guard (``engine.core.frames.guard``) says why in its last chunk's ``warning``.
        ``largest_chunk_frames``: chunks may grow up to it while the audio is far enough ahead of real time
        (``engine.core.chunk_sizes``); by default they do on the CPU path, up to ``GROWN_CHUNK_FRAMES``, and not on a
        GPU, whose decoder's graphs are captured for the two sizes."""
        if largest_chunk_frames is None:
            largest_chunk_frames = max(chunk_frames, GROWN_CHUNK_FRAMES) if self.grows_chunks else chunk_frames
        sizes = ChunkSizes(first_chunk_frames, chunk_frames, largest_chunk_frames)
        plan = self.plan(text, voice, sampling, max_frames, non_streaming, pronunciation, segment_chars)
        last = None
        for last, _ in self._run(plan, sizes, cancel=cancel):
            yield last
        if last is not None and not last.final and not (cancel is not None and cancel.is_set()):
            yield closing_chunk(last)

    def stream_live(self, text: LiveText | Iterable[str], voice: Voice, chunk_frames: int = 4,
                    first_chunk_frames: int = 1, sampling: Sampling | None = None,
                    cancel: threading.Event | None = None, max_frames: int | None = None,
                    non_streaming: bool = False) -> Iterator[Chunk]:
        """``stream`` of text still arriving: an ``engine.core.text.live_text.LiveText`` its producer appends to (and
        closes), or an iterator of text deltas. Speech starts once the first word is certain and follows the text as it
        comes, waiting where it runs dry (``engine.core.live_speech``); with all the text there at once it is ``stream``
        of that text with ``non_streaming=False``, code for code."""
        from engine.core.live_speech import stream_live

        return stream_live(self, text, voice, chunk_frames, first_chunk_frames, sampling, cancel, max_frames,
                           non_streaming)

    def batched(self, slots: int, warmup: bool | None = None,
                warmup_progress: Callable[[int, int, str], None] | None = None) -> BatchedStreams:
        """``stream`` for many callers at once (threads, or coroutines through ``stream_async``): one loop
        that steps and decodes up to ``slots`` streams together; more callers wait for a free slot. With
        graphs, ``warmup`` (default on) captures every batch size first, ``warmup_progress(done, total, what)``
        hearing of each piece."""
        from engine.core.frames.batched.streams import BatchedStreams

        return BatchedStreams(self.model.talker, self.decoder, self.plan, self._prompt_builder(), slots,
                              graphs=self.use_graphs, warmup=warmup, warmup_progress=warmup_progress,
                              prompt_positions=self._prompt_positions)

    @property
    def cpu_numba_steps(self) -> bool:
        """Whether this engine's CPU frames step through the Numba kernels (``engine.core.cpu.one_position_numba``;
        compiled now if not yet)."""
        if self.use_graphs:  # the streamer would be the graphs' (captured on first use)
            return False
        streamer = self._single_streamer()
        return isinstance(streamer, EagerStreamer) and streamer.numba_steps

    @property
    def cpu_vnni_products(self) -> tuple[bool, bool]:
        """Whether the talker's and the code predictor's Numba steps take the VNNI products (``engine.core.cpu.vnni``:
        where the processor has the instruction and they measured faster at load)."""
        if not self.cpu_numba_steps:
            return False, False
        stacks = self.model.talker._numba_stacks[1]
        return stacks[0].vnni, stacks[1].vnni

    def warmup(self, chunk_sizes=(1, 4)) -> float:
        """Build the streamer now (on CUDA: capture the graphs; on a CPU: compile its predictor step, when it
        compiles); returns the seconds it took."""
        t0 = time.perf_counter()
        streamer = self._single_streamer(chunk_sizes)
        if isinstance(streamer, EagerStreamer):
            with self._lock:
                streamer.warm_up()
        return time.perf_counter() - t0

    def check(self, text: str | Sequence[Segment] | None, voice: Voice, non_streaming: bool | None = None,
              pronunciation: Lexicon | None = None) -> None:
        """Raise the error a generation of ``text`` in ``voice`` would fail with at its start (``TextError``,
        ``VoiceError``, ``UnsupportedError``), without generating: cheap host work, for a server to refuse a
        request before it waits for a slot. What is checked is what would be spoken: the segments as
        ``pronunciation``'s rules change them. ``text`` None: text still to come (a live session), so the voice
        and the prompt it makes with the shortest text. A clone not encoded yet has its arrays checked now and the
        rest once it is encoded, by the generation. Every generation (``plan``, so ``stream``, ``synthesize`` and
        the batched streams; ``stream_live``) runs this same check before anything is allocated for it."""
        segments = None if text is None else pronounce(segments_of(text), pronunciation, voice.name)
        self._check(segments, voice, non_streaming)

    # ---- internals ------------------------------------------------------------------------------
    def _check(self, segments: Sequence[Segment] | None, voice: Voice, non_streaming: bool | None) -> None:
        """``check`` of segments already pronounced (None: text still to come)."""
        if voice.kind == "clone" and not voice.is_encoded:
            check_voice_arrays(voice_arrays(voice), "this voice")
            return
        texts = [s.speech for s in segments] if segments is not None else [LIVE_PROBE_TEXT]
        check_prompts(self.config, self.tokenizer, voice, texts, non_streaming)

    def _prompt_builder(self) -> Callable[[list[tuple[Voice, str]]], list]:
        """``build_prompts`` over this engine's model: [(voice, text)] -> a prompt or an error each."""
        return functools.partial(build_prompts, self.model.talker, self.config, self.tokenizer)

    def _prompt_positions(self, plan: Plan) -> Callable[[Voice, str], int | None]:
        """(voice, text) -> the prompt positions of ``plan``'s layout (``engine.core.context``)."""
        return functools.partial(prompt_positions, self.config, self.tokenizer, non_streaming=plan.non_streaming)

    def _single_streamer(self, chunk_sizes=(1, 4)):
        """The engine's single-stream streamer (graph-captured on CUDA), built on first use."""
        if self._single is None:
            if self.use_graphs:
                from engine.core.frames.graphs.runner import GraphStreamer

                self._single = GraphStreamer(self.model.talker, self.decoder, chunk_sizes)
            else:
                # the fast CPU path measures which thread count runs its frames faster now; the exact path's are fixed
                governed = self.cpu_int8 and options.current().threads is None
                governor = ThreadGovernor.for_this_machine() if governed else None
                self._single = EagerStreamer(self.model.talker, self.decoder, governor)
        return self._single

    @property
    def grows_chunks(self) -> bool:
        """Whether a stream's chunks grow by default: on the CPU path, where a chunk's decode has a fixed cost
        worth spreading over more frames; a GPU's decoder runs graphs captured for the stream's two sizes. The
        ``grow_chunks`` option (``ORATOR_GROW_CHUNKS=0``) turns it off."""
        return self.device.type == "cpu" and not self.use_graphs and options.current().grow_chunks

    def _run(self, plan: Plan, sizes: ChunkSizes, *, cancel: threading.Event | None = None,
             decode: bool = True) -> Iterator[tuple[Chunk, np.ndarray]]:
        """(chunk, its codes) for every segment of ``plan`` in turn, in one voice, in the chunks ``sizes`` gives
        (chunk samples are None when ``decode`` is False)."""
        t0 = time.perf_counter()
        chunk_size = sizes.next_size

        voice, segments = plan.voice, plan.segments
        context = VoiceContext(voice, self._prompt_positions(plan))
        with self._lock:
            streamer = self._single_streamer((sizes.first, sizes.size))
            streamer.begin(voice.ref_codes if voice.in_context else None, (sizes.first, sizes.size))
            for index, seg in enumerate(segments):
                prompt = build_prompt(self.model.talker, self.config, self.tokenizer,
                                      context.voice_for(seg.speech, plan.frame_budget(seg)), seg.speech,
                                      plan.non_streaming)
                budget = fitted_budget(plan.frame_budget(seg), prompt.length)
                guard = FrameGuard(budget, f"segment {index} ({seg.start}-{seg.end})")
                frame, spoken = 0, []
                # a stream's first chunk is decoded at once, for its listener's first audio
                first_at_once = index == 0 and sizes.first < sizes.size
                for codes, audio, ends in streamer.segment(prompt, plan.sampling, plan.segment_seed(index),
                                                           budget, chunk_size, cancel, decode, guard,
                                                           first_at_once=first_at_once):
                    final = ends and index == len(segments) - 1
                    chunk = Chunk(audio, SAMPLE_RATE, frame, len(codes), index, (seg.start, seg.end),
                                  time.perf_counter() - t0, final, guard.warning if ends else None)
                    frame += len(codes)
                    spoken.append(codes)
                    sizes.made(len(codes))
                    yield chunk, codes
                if cancel is not None and cancel.is_set():
                    return
                context.offer(seg.speech, spoken, guard.warning)


__all__ = ["DECODER_DTYPE_NAMES", "Engine"]  # the names the benchmarks read from here too
