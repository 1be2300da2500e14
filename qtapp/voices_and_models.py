"""Which voice reads and which model loads for it: the main window's ``VoicesAndModels``.

A passage's voice is a library voice it names, else the default voice, else a speaker of the preset model
(``resolve_voice``; exports and voiceover cues may also name a preset speaker). The worker loads one model per
voice kind, asked for once each (``ensure_model``), and again with new settings (``reload_models``); a failed load
stays in the banner until a model that serves its kind is in. The library panel's Preview, Keep as clone and
default voice come here too. An injected engine factory (tests, embedding) serves every kind.

It is a QObject parented to the window, so the worker's signals reach it on the GUI thread.
"""

from __future__ import annotations

from PySide6.QtCore import QObject

from engine.core.voice import MODEL_TYPE_FOR_VOICE
from engine.voices.library import LibraryError
from qtapp.model_download import preset_speakers
from qtapp.reading import IDLE

PREVIEW_TEXT = "Hello! This is how I sound. I can read your documents aloud, one sentence at a time."
KEEP_TEXT = ("The quick brown fox jumps over the lazy dog. I am glad to read this for you, "
             "calmly and clearly, from the first page to the last.")
PREFERRED_SPEAKER = "vivian"  # the voice of unmarked text while no library voice is the default


class VoicesAndModels(QObject):
    """The voices and models of ``window`` (a ``MainWindow``: its settings, library, worker, reader, banner,
    model status, library panel and status bar)."""

    def __init__(self, window, injected_factory=None):
        super().__init__(window)
        self.window = window
        self.injected_factory = injected_factory
        self.requested_kinds: set[str] = set()  # the kinds whose model the worker was asked to load
        self.load_failures: dict[str, str] = {}  # voice kind -> why its last model load failed, while on screen
        self.pending_keep: str | None = None  # the design whose sample is being made to keep as a clone

    def first_model(self):
        """The ModelSpec to load at start: the default voice's kind's, counted as asked for."""
        spec = self.window.settings.model_spec(self.default_voice_kind())
        self.requested_kinds = {spec.kind}
        return spec

    def connect_signals(self) -> None:
        worker, panel = self.window.worker, self.window.library_panel
        worker.model_loaded.connect(self.on_model_loaded)
        worker.model_failed.connect(self.on_model_failed)
        worker.voice_kept.connect(self.on_voice_kept)
        worker.keep_progress.connect(self.on_keep_progress)
        panel.preview_requested.connect(self.preview_voice)
        panel.keep_requested.connect(self.keep_design)
        panel.default_changed.connect(self.on_default_changed)

    # ---- voices ------------------------------------------------------------------------------------
    def default_voice_kind(self) -> str:
        name, library = self.window.settings.default_voice, self.window.library
        if name and name in library:
            entry = next((e for e in library.entries() if e.name == library.find(name)), None)
            if entry is not None and entry.readable:
                return entry.kind
        return "preset"

    def resolve_voice(self, name: str | None):
        """The Voice for a passage: a marked library voice, else the default voice, else a preset."""
        from engine import Voice

        for wanted in (name, self.window.settings.default_voice):
            if not wanted:
                continue
            try:
                return self.window.library.load(wanted)
            except LibraryError as e:
                self.window.show_status(f"{e} Using the default voice instead.")
        speakers = self.preset_speakers()
        return Voice.preset(PREFERRED_SPEAKER if PREFERRED_SPEAKER in speakers else speakers[0])

    def resolve_export_voice(self, name: str | None):
        """The Voice an export job names: a library voice, a speaker of the preset model, else as
        ``resolve_voice``."""
        from engine import Voice

        if name and self.window.library.find(name) is None:
            speakers = {s.lower(): s for s in self.preset_speakers()}
            if name.strip().lower() in speakers:
                return Voice.preset(speakers[name.strip().lower()])
        return self.resolve_voice(name)

    def resolve_voiceover_voice(self, name: str | None):
        """The Voice a voiceover cue names, as an export job's, with its model asked for."""
        voice = self.resolve_export_voice(name)
        self.ensure_model(voice)
        return voice

    def default_speaker(self) -> str:
        """The preset speaker of unmarked text while no library voice is the default."""
        speakers = self.preset_speakers()
        return PREFERRED_SPEAKER if PREFERRED_SPEAKER in speakers or not speakers else speakers[0]

    def preset_speakers(self) -> list[str]:
        """The speakers of the preset model in use (loaded, else the configured model's folder)."""
        checkpoint = self.window.settings.model_spec("preset").checkpoint
        return preset_speakers(self.window.worker.engine_of_type("custom_voice"), checkpoint)

    # ---- models ------------------------------------------------------------------------------------
    def ensure_model(self, voice) -> None:
        """Ask the worker to load the model for ``voice``'s kind once (an injected factory serves all)."""
        if self.injected_factory is not None or voice.kind in self.requested_kinds:
            return
        self.requested_kinds.add(voice.kind)
        spec = self.window.settings.model_spec(voice.kind)
        self.window.model_status.loading(f"the model for {voice.kind} voices ({spec.checkpoint})")
        self.window.worker.request_load_model(spec)

    def reload_models(self) -> None:
        """After the settings changed: reload what is in use with the new checkpoint/device/precision. Reading
        stops first, so the model the settings no longer name does not read on."""
        window = self.window
        if window.reader.state != IDLE:
            window.reader.stop()
            window.show_status("Reading stopped: the settings name another model.")
        kind = self.default_voice_kind()
        self.requested_kinds = set()
        window.worker.chunk_frames = window.settings.chunk_frames
        if self.injected_factory is not None:
            window.model_status.loading("the model")
            window.worker.request_load_model(self.injected_factory)
            return
        self.requested_kinds.add(kind)
        spec = window.settings.model_spec(kind)
        window.model_status.loading(f"the model for {kind} voices ({spec.checkpoint})")
        window.worker.request_load_model(spec)

    def on_model_failed(self, kind: str, message: str) -> None:
        self.load_failures[kind] = message
        self.window.model_status.failed(kind, message, self.window.worker.engine_in_use())

    def on_model_loaded(self, info: str) -> None:
        """A model is in: the failures of the kinds it now serves no longer hold, so the banner stops saying them
        (and every message that quoted them, such as "No model … is loaded: …")."""
        self.window.model_status.loaded(info)
        for kind, message in list(self.load_failures.items()):
            if self.serves(kind):
                del self.load_failures[kind]
                self.window.banner.forget(message)

    def serves(self, kind: str) -> bool:
        """True when a loaded engine speaks ``kind``'s voices ("": any, for a spec of no kind)."""
        if not kind or self.injected_factory is not None:
            return bool(self.window.worker.engine_in_use())
        return self.window.worker.engine_of_type(MODEL_TYPE_FOR_VOICE[kind]) is not None

    # ---- the library panel's requests --------------------------------------------------------------
    def preview_voice(self, name: str) -> None:
        try:
            voice = self.window.library.load(name)
        except LibraryError as e:
            self.window.show_error(str(e))
            return
        self.window.show_status(f"Previewing “{name}”…")
        self.window.reader.preview(voice, PREVIEW_TEXT)

    def keep_design(self, name: str) -> None:
        try:
            voice = self.window.library.load(name)
        except LibraryError as e:
            self.window.show_error(str(e))
            return
        self.ensure_model(voice)
        self.pending_keep = name
        self.window.show_status(f"Generating a sample of “{name}” to keep as a clone…")
        self.window.worker.request_keep_design(voice, KEEP_TEXT)

    def on_keep_progress(self, seconds: float) -> None:
        self.window.show_status(f"Generating a sample of “{self.pending_keep}”: {seconds:.0f} s…")

    def on_voice_kept(self, voice) -> None:
        base = self.pending_keep or voice.name or "Kept voice"
        self.pending_keep = None
        self.window.library_panel.add_voice(voice, f"{base} (kept)")

    def on_default_changed(self, name: str) -> None:
        self.window.settings.default_voice = name
        self.window.settings.save()
        if name:
            self.ensure_model(self.window.library.load(name))
            self.window.show_status(f"Unmarked paragraphs are read by “{name}”.")
