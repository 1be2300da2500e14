"""The speech worker: a QObject living on its own QThread that owns the engines.

The GUI never calls the engine. It asks the worker (``request_speak``, ``request_load_model``,
``request_keep_design``: thread-safe, return at once) and listens to its signals. Engines are
created inside the worker thread, so the model loads there. One engine per model type is kept
(``custom_voice`` speaks presets, ``voice_design`` speaks descriptions, ``base`` speaks clones), and a voice
goes only to an engine of its type (``any_kind=True``: to the latest engine when its own is missing, for an
injected engine that serves every kind).

Loading a ``qtapp.settings.ModelSpec`` first downloads a hub id that is not in the Hugging Face cache, with
``download_progress`` and a ``cancel_download()``; loading one for a voice kind first drops the engine that
served that kind, so a model the settings no longer name never reads on. Every failed load emits
``model_failed`` (the kind, the reason in plain words) as well as ``error``.

Speaking generates ahead of playback, but not without bound: after each chunk the worker waits
while the player holds more than ``max_ahead_s`` seconds (``buffered_seconds`` is the player's
thread-safe probe), so a 500-page book never sits in memory. ``cancel()`` is thread-safe too: it
sets a ``threading.Event`` the engine checks every chunk, and drops every job requested so far.

A job speaks a text, or a list of ``engine.core.text.segments.Segment``s already planned (``qtapp.reading_plan``): the
engine speaks those as given and each chunk carries its segment's index in the list and its span (document
offsets), so what is highlighted is what is heard.

``pronunciation`` (an ``engine.pronunciation.Lexicon``, read when a job starts; None: as written) is handed to the
engine, which speaks each segment as its rules say while the chunks keep the written text's spans.

``speed`` (read when a job starts) changes the tempo of the emitted chunks without changing their
pitch (``engine.production.tempo.ChunkTempo``); at 1.0 chunks go out as the engine made them.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch
from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from engine import Engine, Voice
from engine.core.config import MODEL_NAMES, model_title
from engine.core.text.segments import Segment
from engine.core.voice import MODEL_TYPE_FOR_VOICE
from engine.production.tempo import ChunkTempo
from qtapp.collector import settle_heap_on_gui_thread
from qtapp.design_sample import speak_sample
from qtapp.engine_errors import StudioError, describe_error
from qtapp.model_download import (
    Downloader,
    describe_download_error,
    hub_download,
    local_model_dir,
    looks_like_hub_id,
)
from qtapp.settings import ModelSpec

BACKPRESSURE_POLL_S = 0.05
PROGRESS_INTERVAL_S = 0.25  # download progress reaches the GUI at most this often


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_engine(spec) -> Engine:
    """``spec`` is a ``ModelSpec``, a model directory / hub id (str or Path) or a callable returning an Engine."""
    if isinstance(spec, ModelSpec):
        return spec.load_engine()
    if callable(spec):
        return spec()
    if isinstance(spec, str | Path):
        return Engine.from_pretrained(str(spec), device=default_device())
    raise TypeError(f"cannot load a model from {spec!r}")


def describe_engine(engine: Engine) -> str:
    """The model and the path it runs on: "CustomVoice 0.6B on cpu (int8 weights, 7 or 8 threads as measured)"."""
    device = torch.device(engine.device)
    if device.type == "cpu":
        path = "int8 weights" if getattr(engine, "cpu_int8", False) else "exact float32"
        if getattr(engine, "cpu_numba_steps", False) is True:
            path += ", compiled steps"
            if any(getattr(engine, "cpu_vnni_products", ())):
                path += ", VNNI products"
        counts = getattr(engine, "cpu_thread_counts", None) or (torch.get_num_threads(),)
        threads = (" or ".join(map(str, counts)) + " threads as measured" if len(counts) > 1 else
                   f"{counts[0]} thread{'' if counts[0] == 1 else 's'}")
        return f"{model_title(engine.model_type, engine.model_size)} on cpu ({path}, {threads})"
    return f"{model_title(engine.model_type, engine.model_size)} on {engine.device} ({engine.dtype})"


class SpeechWorker(QObject):
    model_loaded = Signal(str)
    model_in_use = Signal(str)  # the engine a job starts speaking with (``describe_engine``)
    model_status = Signal(str)  # what a model load is doing now, for the status bar
    model_failed = Signal(str, str)  # voice kind ("" for a spec of no kind), why, in plain words
    download_progress = Signal(str, int, int)  # hub id, bytes done, bytes total (0: not known yet)
    segment_started = Signal(int, int, int, int)  # job, segment, start, end (the segment's span)
    chunk_ready = Signal(int, object)  # job, engine.Chunk (segment and span refer to the job's text or segments)
    segment_cut = Signal(int, int, str)  # job, segment, why the engine cut it short (engine.core.frames.guard)
    job_failed = Signal(int)  # the job stopped on an error (``error`` says which); job_finished follows
    job_finished = Signal(int)  # also after a cancel or an error
    error = Signal(str)
    stats = Signal(float, float)  # real-time factor (audio s per generation s), first audio s
    voice_kept = Signal(object)  # a clone Voice made from a design voice
    keep_progress = Signal(float)  # seconds of the design sample generated so far

    _speak_requested = Signal(int, object, object)
    _load_requested = Signal(object)
    _keep_requested = Signal(object, str)

    def __init__(self, engine_factory: Callable[[], Engine],
                 buffered_seconds: Callable[[], float] | None = None, max_ahead_s: float = 30.0,
                 chunk_frames: int = 4, first_chunk_frames: int = 1, sampling=None,
                 max_frames: int | None = None, speed: float = 1.0, pronunciation=None, any_kind: bool = False,
                 downloader: Downloader | None = None, clock: Callable[[], float] = time.perf_counter):
        super().__init__()
        self._engine_factory = engine_factory
        self.clock = clock  # the seconds that speed and first audio are told in (a parameter, so they can be checked)
        self.any_kind = any_kind
        self.downloader = downloader or hub_download
        self._download_cancel = threading.Event()
        self._failures: dict[str, str] = {}  # voice kind -> why its last load failed
        self._buffered_seconds = buffered_seconds
        self.max_ahead_s = max_ahead_s
        self.chunk_frames = chunk_frames
        self.first_chunk_frames = first_chunk_frames
        self.sampling = sampling
        self.max_frames = max_frames  # per segment; None: the engine's budget
        self.speed = speed  # playback tempo of the next job (same pitch)
        self.pronunciation = pronunciation  # the rules of the next job; an immutable Lexicon, swapped whole
        self._engines: dict[str, Engine] = {}
        self._current: Engine | None = None
        self._cancel = threading.Event()
        self._jobs_lock = threading.Lock()
        self._last_requested_job = -1
        self._cancelled_through = -1
        self._loads = threading.Condition()
        self._pending_loads = 1  # requested and not yet finished (loaded or failed); 1: the first model
        self._speak_requested.connect(self.speak)
        self._load_requested.connect(self.load_model)
        self._keep_requested.connect(self.keep_design)

    # ---- thread-safe requests (call from the GUI thread) ---------------------------------------
    def request_speak(self, job_id: int, text: str | list[Segment], voice: Voice) -> None:
        """Queue a job speaking ``text`` (a string, or its planned segments); ``job_id`` must grow from one
        request to the next."""
        with self._jobs_lock:
            self._last_requested_job = max(self._last_requested_job, job_id)
        self._speak_requested.emit(job_id, text, voice)

    def request_initial_model(self) -> None:
        """Load the model from the constructor's ``engine_factory`` (in the worker thread); counted as
        pending from construction on, so ``engine_when_ready`` waits for it."""
        self._load_requested.emit(self._engine_factory)

    def request_load_model(self, spec) -> None:
        with self._loads:
            self._pending_loads += 1
        self._load_requested.emit(spec)

    def request_keep_design(self, voice: Voice, text: str) -> None:
        self._keep_requested.emit(voice, text)

    def cancel_download(self) -> None:
        """Stop a running model download at its next progress report (thread-safe); the load fails."""
        self._download_cancel.set()

    def cancel(self) -> None:
        """Stop the running job within one chunk and drop every job requested before this call."""
        with self._jobs_lock:
            self._cancelled_through = self._last_requested_job
            self._cancel.set()

    def engine_for(self, voice: Voice) -> Engine | None:
        """The loaded engine of ``voice``'s model type (with ``any_kind``, else the latest engine)."""
        return self._engines.get(MODEL_TYPE_FOR_VOICE[voice.kind], self._current if self.any_kind else None)

    def engine_of_type(self, model_type: str) -> Engine | None:
        """The loaded engine of ``model_type`` ("custom_voice", "voice_design", "base"), if any."""
        return self._engines.get(model_type)

    def engine_in_use(self) -> str:
        """What the latest loaded engine is (``describe_engine``), or "" while none is loaded."""
        current = self._current
        return describe_engine(current) if current is not None else ""

    def plan_in_use(self) -> str:
        """The latest loaded engine's execution plan in one line (``engine.core.execution_plan``), or "" while none is
        loaded (or a display-only engine has none)."""
        plan = getattr(self._current, "execution_plan", None)
        return plan.summary() if plan is not None else ""

    def engine_when_ready(self, voice: Voice, timeout_s: float = 600.0,
                          cancel: threading.Event | None = None) -> Engine | None:
        """``engine_for`` once every requested model load has finished (or ``cancel`` is set: then None). Blocks:
        for other threads (the export queue's), never for the GUI thread or the worker itself."""
        deadline = time.monotonic() + timeout_s
        with self._loads:
            while self._pending_loads and not (cancel is not None and cancel.is_set()):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._loads.wait(min(left, 0.1))  # a cancel is seen within a tenth of a second
        if cancel is not None and cancel.is_set():
            return None
        return self.engine_for(voice)

    # ---- slots (worker thread) -----------------------------------------------------------------
    @Slot(object)
    def load_model(self, spec) -> None:
        kind = spec.kind if isinstance(spec, ModelSpec) else ""
        if kind:
            self._forget(kind)
        try:
            if isinstance(spec, ModelSpec):  # loaded from its folder: no second look-up on the hub
                spec = dataclasses.replace(spec, checkpoint=self._download(spec.checkpoint))
            engine = load_engine(spec)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a message for the GUI
            message = describe_error(exc)
            if kind:
                self._failures[kind] = message
            self.error.emit(message)
            self.model_failed.emit(kind, message)
        else:
            self._failures.pop(kind, None)
            self._prepare_graphs(engine)
            settle_heap_on_gui_thread()  # a full collection over the loaded model would pause the speech
            self._engines[engine.model_type] = engine
            self._current = engine
            self.model_loaded.emit(describe_engine(engine))
        finally:
            with self._loads:
                self._pending_loads = max(0, self._pending_loads - 1)
                self._loads.notify_all()

    @Slot(int, object, object)
    def speak(self, job_id: int, text: str | list[Segment], voice: Voice) -> None:
        with self._jobs_lock:
            if job_id <= self._cancelled_through:
                self.job_finished.emit(job_id)
                return
            self._cancel.clear()
        try:
            self._speak(job_id, text, voice)
        except Exception as exc:  # noqa: BLE001
            self.error.emit(describe_error(exc))
            self.job_failed.emit(job_id)
        self.job_finished.emit(job_id)

    @Slot(object, str)
    def keep_design(self, voice: Voice, text: str) -> None:
        """Speak ``text`` with a design voice (within the clone limit, ``qtapp.design_sample``) and turn the
        result into a reusable clone voice."""
        try:
            designer = self._engines.get("voice_design")
            if designer is None:
                raise StudioError("Keeping a designed voice needs a VoiceDesign model: load one first.")
            cap = {} if self.max_frames is None else {"max_frames": self.max_frames}
            samples, transcript = speak_sample(designer, text, voice, self.keep_progress.emit,
                                               sampling=self.sampling, **cap)
            kept = Voice.clone((samples, designer.sample_rate), ref_text=transcript, language=voice.language,
                               name=voice.name)
            kept = kept.with_(meta=dict(kept.meta, design=voice.instruct))
            base = self._engines.get("base")
            if base is not None:
                kept = base.prepare_voice(kept)
        except Exception as exc:  # noqa: BLE001
            self.error.emit(describe_error(exc))
            return
        self.voice_kept.emit(kept)

    # ---- internals -----------------------------------------------------------------------------
    def _forget(self, kind: str) -> None:
        """Drop the engine that served ``kind``: the settings now name another model for it."""
        engine = self._engines.pop(MODEL_TYPE_FOR_VOICE[kind], None)
        if engine is not None and engine is self._current:
            self._current = next(reversed(self._engines.values()), None)

    def _download(self, checkpoint: str) -> str:
        """The folder of a hub id (downloaded, with progress, when the cache does not hold it), else ``checkpoint``
        as it is; a failed download as a ``StudioError``."""
        if not looks_like_hub_id(checkpoint):
            return checkpoint
        cached = local_model_dir(checkpoint)
        if cached is not None:
            return str(cached)
        self._download_cancel.clear()
        self.download_progress.emit(checkpoint, 0, 0)  # started: nothing known yet
        last = [0.0]

        def report(done: int, total: int) -> None:
            now = time.monotonic()
            if now - last[0] >= PROGRESS_INTERVAL_S or (total and done >= total):
                last[0] = now
                self.download_progress.emit(checkpoint, done, total)

        try:
            folder = self.downloader(checkpoint, report, self._download_cancel)
        except Exception as exc:  # noqa: BLE001 - offline, 404, gated, disk full, cancelled: worded once
            raise StudioError(describe_download_error(checkpoint, exc)) from None
        self.model_status.emit(f"Loading {checkpoint}…")
        return str(folder)

    def _prepare_graphs(self, engine: Engine) -> None:
        """Capture the engine's graphs on a GPU, or compile its CPU step, now (tens of seconds the first time)
        rather than on the first Read aloud; a failure leaves them to be prepared then, and says why."""
        if engine.use_graphs:
            self.model_status.emit("Preparing the GPU for fast speech (the first time takes up to a minute)…")
        elif getattr(engine, "cpu_int8", False):  # display-only engines (tools/screenshots.py) have none
            self.model_status.emit("Preparing fast speech on the processor (the first time takes a few seconds)…")
        else:
            return
        try:
            engine.warmup((self.first_chunk_frames, self.chunk_frames))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a message for the GUI
            self.error.emit(describe_error(exc))

    def _speak(self, job_id: int, text: str | list[Segment], voice: Voice) -> None:
        engine = self.engine_for(voice)
        if engine is None:
            raise StudioError(self._missing_engine(voice.kind))
        self.model_in_use.emit(describe_engine(engine))
        voice = engine.prepare_voice(voice)
        t0 = self.clock()
        cap = {} if self.max_frames is None else {"max_frames": self.max_frames}
        stream = engine.stream(text, voice, chunk_frames=self.chunk_frames,
                               first_chunk_frames=self.first_chunk_frames, sampling=self.sampling,
                               cancel=self._cancel, pronunciation=self.pronunciation, **cap)
        tempo = ChunkTempo(self.speed)
        generating_s, audio_s, first_audio_s = 0.0, 0.0, None
        current = [None]  # segment of the latest emitted chunk
        try:
            while not self._cancel.is_set():
                step_start = self.clock()
                chunk = next(stream, None)
                if chunk is None:
                    self._emit_chunks(job_id, tempo.finish(), current)
                    break
                generating_s += self.clock() - step_start
                if first_audio_s is None:
                    first_audio_s = self.clock() - t0
                if chunk.warning is not None:
                    self.segment_cut.emit(job_id, chunk.segment, chunk.warning)
                self._emit_chunks(job_id, tempo.feed(chunk), current)
                audio_s += chunk.duration
                self.stats.emit(audio_s / max(generating_s, 1e-9), first_audio_s)
                self._wait_for_room()
        finally:
            stream.close()  # releases the engine's generation lock at once

    def _missing_engine(self, kind: str) -> str:
        """Why no engine speaks ``kind``: the failure of its last load, or that none is loaded yet."""
        model = MODEL_NAMES[MODEL_TYPE_FOR_VOICE[kind]]
        if kind in self._failures:
            return f"No {model} model for {kind} voices is loaded: {self._failures[kind]}"
        return (f"No model is loaded yet for {kind} voices (they need a {model} model): wait for it to load, "
                "or pick one in Settings ▸ Models & settings.")

    def _emit_chunks(self, job_id: int, chunks: list, current: list) -> None:
        """Emit ``chunks``, each new segment announced first."""
        for chunk in chunks:
            if chunk.segment != current[0]:
                current[0] = chunk.segment
                self.segment_started.emit(job_id, chunk.segment, *chunk.span)
            self.chunk_ready.emit(job_id, chunk)

    def _wait_for_room(self) -> None:
        """Backpressure: sleep while the player already holds more than ``max_ahead_s``."""
        if self._buffered_seconds is None:
            return
        while self._buffered_seconds() > self.max_ahead_s and not self._cancel.wait(BACKPRESSURE_POLL_S):
            pass


def start_worker(engine_factory: Callable[[], Engine], **options) -> tuple[QThread, SpeechWorker]:
    """Create a SpeechWorker on a new, started QThread. The first model starts loading there when
    the calling thread's event loop next runs, so signals connected right after this call see it.
    ``options`` go to ``SpeechWorker`` (``buffered_seconds=player.buffered_seconds``, ...)."""
    thread = QThread()
    thread.setObjectName("speech-worker")
    worker = SpeechWorker(engine_factory, **options)
    worker.moveToThread(thread)
    thread.start()
    QTimer.singleShot(0, lambda: worker.request_initial_model())  # a lambda runs in this thread
    return thread, worker


def stop_worker(thread: QThread, worker: SpeechWorker, timeout_ms: int = 10000) -> bool:
    """Cancel what runs (a download too), stop the thread's event loop and wait for it; True if it ended in time."""
    worker.cancel()
    worker.cancel_download()
    thread.quit()
    return thread.wait(timeout_ms)
