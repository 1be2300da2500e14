"""The studio's main window: editor, voice library, gauges, read-aloud controls and menus.

``MainWindow(settings, engine_factory=None, sd_module=None)`` starts the speech worker thread
(``qtapp.worker.start_worker``) and the audio player (``qtapp.player.Player``). Without an
``engine_factory`` each voice kind loads the checkpoint chosen in the settings; an injected
factory (tests, embedding) serves every voice kind. Reading aloud is delegated to
``ReadingController``; menus and toolbar are built by ``qtapp.actions``.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine.core.voice import MODEL_TYPE_FOR_VOICE
from engine.documents import Chapter, DocumentError, load_document
from engine.documents.outline import chapter_outline
from engine.pronunciation import save_lexicon
from engine.voices.library import LibraryError, VoiceLibrary
from qtapp.actions import build_actions
from qtapp.autosave import Autosave, write_lines
from qtapp.chapter_panel import ChapterDock
from qtapp.document_loader import DocumentLoader, LoadingIndicator, in_background
from qtapp.editor import Editor, FindBar
from qtapp.export_panel import ExportPanel
from qtapp.export_queue import ExportQueueController
from qtapp.gauges import GaugePanel
from qtapp.library_panel import LibraryPanel
from qtapp.model_download import preset_speakers
from qtapp.model_status import ModelStatus
from qtapp.reading import IDLE, PAUSED, PLAYING, ReadingController
from qtapp.settings import Settings, load_pronunciation
from qtapp.status_bar import StatusBar
from qtapp.voiceover_panel import VoiceoverPanel
from qtapp.worker import start_worker, stop_worker

PREVIEW_TEXT = "Hello! This is how I sound. I can read your documents aloud, one sentence at a time."
KEEP_TEXT = ("The quick brown fox jumps over the lazy dog. I am glad to read this for you, "
             "calmly and clearly, from the first page to the last.")
SAVE_IN_PLACE_SUFFIXES = (".txt", ".text")  # other formats lose markup or structure when written back as text
SAVE_FILTER = "Plain text (*.txt);;All files (*)"
PREFERRED_SPEAKER = "vivian"  # the voice of unmarked text while no library voice is the default


class Banner(QWidget):
    """A coloured strip above the editor for errors the user must see (closable, never modal)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("banner")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setStyleSheet("#banner { background: #fdecea; border-bottom: 1px solid #f5c2c0; }"
                           "QLabel { color: #611a15; }")
        self.label = QLabel(wordWrap=True, textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        icon = QLabel()
        icon.setPixmap(self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning).pixmap(20, 20))
        close = QToolButton(icon=self.style().standardIcon(QStyle.StandardPixmap.SP_TitleBarCloseButton),
                            autoRaise=True, toolTip="Dismiss")
        close.clicked.connect(self.hide)
        self.messages: list[str] = []
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 6, 6)
        layout.addWidget(icon)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.hide()

    def show_message(self, text: str) -> None:
        """Show ``text``; messages still on screen stay above it (the last three). A message that repeats one on
        screen replaces it, so no sentence is said twice: a failure and a later message quoting it show as one."""
        shown = self.messages if not self.isHidden() else []
        if any(text in m for m in shown):  # already said, alone or inside a longer message
            self.show()
            return
        self.messages = [m for m in shown if m not in text][-2:] + [text]
        self.label.setText("\n".join(self.messages))
        self.show()

    def forget(self, said: str) -> None:
        """Take away every message that says ``said`` (it no longer holds); hide the banner once none is left."""
        self.messages = [m for m in self.messages if said not in m]
        self.label.setText("\n".join(self.messages))
        if not self.messages:
            self.hide()


class MainWindow(QMainWindow):
    def __init__(self, settings: Settings, engine_factory=None, sd_module=None):
        super().__init__()
        self.settings = settings
        self.document_path: Path | None = None
        self.save_path: Path | None = None  # where Save writes without asking: a plain text opened or saved
        self._heard_at: int | None = None  # start of the last sentence heard in this document
        self.document_chapters: list[Chapter] = []  # spans in the loaded text, for jumping by chapter
        self.document_author = ""  # the open document's, for the tags of its exports
        self._chapter_marks: list[QTextCursor] = []  # chapter starts; cursors, so edits before them move them
        self._injected_factory = engine_factory
        self._pending_keep: str | None = None
        self._load_failures: dict[str, str] = {}  # voice kind -> why its last model load failed, while on screen
        self.setWindowTitle("Orator")
        self.resize(1280, 800)

        # ---- views ---------------------------------------------------------------------------------
        self.editor = Editor(font_size=settings.font_size)
        self.find_bar = FindBar(self.editor)
        self.banner = Banner()
        self.library = VoiceLibrary(settings.library_dir)
        self.library_panel = LibraryPanel(self.library, settings.default_voice, preset_speakers=self.preset_speakers,
                                          start_folder=settings.start_folder)
        self.gauges = GaugePanel()
        editor_column = QWidget()
        column = QVBoxLayout(editor_column)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.banner)
        column.addWidget(self.editor, 1)
        column.addWidget(self.find_bar)
        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(self.library_panel, 1)
        side_layout.addWidget(self.gauges)
        self.splitter = QSplitter()
        self.splitter.addWidget(editor_column)
        self.splitter.addWidget(side)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([880, 400])
        self.setCentralWidget(self.splitter)
        self.counts_label = QLabel("0 words · 0 characters")
        self.model_status = ModelStatus()
        self.model_label = self.model_status.label
        self.loader = DocumentLoader(self)
        self.loading_indicator = LoadingIndicator()
        self.setStatusBar(StatusBar(self))
        self.statusBar().addPermanentWidget(self.loading_indicator)
        self.statusBar().addPermanentWidget(self.counts_label)
        self.statusBar().addPermanentWidget(self.model_status)

        # ---- engine, player, reading ---------------------------------------------------------------
        self.player = self._make_player(sd_module)
        initial_spec = settings.model_spec(self._default_voice_kind())
        self._requested_kinds = {initial_spec.kind}
        buffered = self.player.buffered_seconds if self.player is not None else None
        # the first model starts loading once the event loop runs, after _connect below
        self.pronunciation, pronunciation_problem = load_pronunciation(settings.pronunciation_path)
        self.worker_thread, self.worker = start_worker(engine_factory or initial_spec, buffered_seconds=buffered,
                                                       chunk_frames=settings.chunk_frames, speed=settings.speed,
                                                       any_kind=engine_factory is not None,
                                                       pronunciation=self.pronunciation)
        if engine_factory is None:
            self.model_status.loading(f"the model for {initial_spec.kind} voices ({initial_spec.checkpoint})")
        self.reader = ReadingController(self.worker, self.player, self.resolve_voice, self.ensure_model, self)
        self.reader.segment_chars = settings.segment_chars
        self.reader.reading_policy = settings.reading_policy()
        self.reader.cast = settings.reading_cast()
        self.exports = ExportQueueController(settings.root(), self.worker.engine_when_ready,
                                             self.resolve_export_voice, self.ensure_model,
                                             pronunciation=self.pronunciation,
                                             segment_chars=settings.segment_chars, parent=self)
        self.exports.runner.reading_policy = self.reader.reading_policy
        self.export_request = None  # the open Export dialog's request (qtapp.export_requests)
        self.segment_preview = None  # the last File ▸ Preview segments dialog (qtapp.segment_preview)
        self.export_panel = ExportPanel(self.exports)
        self.export_dock = QDockWidget("Export queue", self)
        self.export_dock.setObjectName("export-queue")
        self.export_dock.setAccessibleName("Export queue")
        self.export_dock.setWidget(self.export_panel)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.export_dock)
        if not self.exports.jobs:
            self.export_dock.hide()
        self.voiceover_panel = VoiceoverPanel(self.worker.engine_when_ready, self.resolve_voiceover_voice,
                                              self.player, pronunciation=self.pronunciation)
        self.voiceover_dock = QDockWidget("Voiceover", self)
        self.voiceover_dock.setObjectName("voiceover")
        self.voiceover_dock.setAccessibleName("Voiceover")
        self.voiceover_dock.setWidget(self.voiceover_panel)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.voiceover_dock)
        self.voiceover_dock.hide()
        self.chapter_dock = ChapterDock(self)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.chapter_dock)
        self.window_actions = build_actions(self)
        self.autosave = Autosave(self.editor, settings)
        self._connect()
        self._restore_session()
        problems = [p for p in (settings.load_problem, pronunciation_problem) if p]
        if problems:  # one banner: each problem would hide the one before
            self.show_error(" ".join(problems))

    # ---- construction helpers ----------------------------------------------------------------------
    def _make_player(self, sd_module):
        from qtapp.player import Player

        try:
            player = Player(sd_module=sd_module)
        except Exception as e:  # noqa: BLE001 - no PortAudio / no device: the rest of the studio works
            self.banner.show_message(f"No audio output is available ({e}). Reading aloud is off; "
                                     "File ▸ Export audio… still works.")
            return None
        player.error.connect(self.show_error)
        player.buffer_level.connect(self.gauges.set_buffer)
        player.underrun.connect(self.gauges.set_underruns)
        return player

    def _connect(self) -> None:
        # the worker's signals go to methods of objects on the GUI thread, which Qt queues onto that thread; a
        # lambda would run on the worker thread and touch widgets from there
        self.worker.error.connect(self.show_error)
        self.worker.model_loaded.connect(self._on_model_loaded)
        self.worker.model_in_use.connect(self.model_status.in_use)
        self.worker.model_status.connect(self.model_status.status)
        self.worker.model_failed.connect(self._on_model_failed)
        self.worker.download_progress.connect(self.model_status.download_progress)
        # a lambda runs on the GUI thread at once; the worker thread is busy downloading and would never get to it
        self.model_status.stop_requested.connect(lambda: self.worker.cancel_download())
        self.worker.stats.connect(self._on_stats)
        self.worker.segment_cut.connect(self._on_segment_cut)  # a method: delivered on the window's thread
        self.worker.voice_kept.connect(self._on_voice_kept)
        self.worker.keep_progress.connect(self._on_keep_progress)
        self.reader.sentence_changed.connect(self._on_sentence_changed)
        self.reader.state_changed.connect(self._on_state_changed)
        self.reader.message.connect(self.show_status)
        self.editor.counts_changed.connect(
            lambda words, chars: self.counts_label.setText(f"{words:,} words · {chars:,} characters"))
        self.editor.position_activated.connect(lambda pos: self.reader.jump_to(self.editor.text_source, pos))
        self.editor.files_dropped.connect(self.open_dropped)
        self.editor.loading_progress.connect(
            lambda done, total: self.show_status(f"Loading… {100 * done // max(total, 1)} %"))
        self.editor.loading_finished.connect(self._on_loading_finished)
        self.loader.loaded.connect(self._on_document_read)
        self.loader.failed.connect(self._on_document_failed)
        self.loading_indicator.cancel_requested.connect(self.cancel_opening)
        self.editor.document().contentsChange.connect(self._on_contents_change)
        self.library_panel.preview_requested.connect(self.preview_voice)
        self.library_panel.keep_requested.connect(self.keep_design)
        self.library_panel.default_changed.connect(self._on_default_changed)
        self.library_panel.message.connect(self.show_status)
        self.exports.message.connect(self.show_status)
        self.voiceover_panel.message.connect(self.show_status)
        self.exports.failed.connect(self.show_error)
        self.exports.added.connect(lambda _: self.export_dock.show())
        self.chapter_dock.panel.chapter_chosen.connect(self.go_to_chapter)
        self.chapter_dock.panel.done.connect(self.editor.setFocus)
        self.editor.cursorPositionChanged.connect(self._show_current_chapter)
        for warning in self.exports.warnings:
            self.show_error(warning)
        self._gauge_state = IDLE
        self._on_state_changed(IDLE)

    def _restore_session(self) -> None:
        if self.settings.window_geometry:
            self.restoreGeometry(QByteArray.fromHex(self.settings.window_geometry.encode()))
        restored = self.autosave.restore()
        if restored:
            self.show_status("Restored the text you had not saved last time.")
        else:  # the editor's setup marks its empty document modified; nothing is unsaved yet
            self.editor.document().setModified(False)

    # ---- messages ----------------------------------------------------------------------------------
    def show_status(self, text: str) -> None:
        self.statusBar().showMessage(text, 8000)

    def _on_segment_cut(self, _job: int, _segment: int, why: str) -> None:
        self.show_status(f"Speech was {why}.")

    def show_error(self, text: str) -> None:
        self.banner.show_message(text)
        self.statusBar().showMessage(text, 8000)

    # ---- pronunciation -----------------------------------------------------------------------------
    def set_pronunciation(self, lexicon) -> bool:
        """Save ``lexicon`` as the studio's rules and use it from the next sentence on (the one being heard is
        read again with them, as a speed change does) and in exports; False, with the reason shown, when the file
        cannot be written."""
        try:
            save_lexicon(lexicon, self.settings.pronunciation_path)
        except OSError as e:
            self.show_error(f"Could not save the pronunciation rules: {e.strerror or e}")
            return False
        self.pronunciation = self.worker.pronunciation = self.exports.runner.pronunciation = lexicon
        self.voiceover_panel.runner.pronunciation = lexicon
        self.reader.restart_sentence()
        self.show_status(f"Pronunciation: {len(lexicon.rules)} rules saved.")
        return True

    # ---- voices and models -------------------------------------------------------------------------
    def _default_voice_kind(self) -> str:
        name = self.settings.default_voice
        if name and name in self.library:
            entry = next((e for e in self.library.entries() if e.name == self.library.find(name)), None)
            if entry is not None and entry.readable:
                return entry.kind
        return "preset"

    def resolve_voice(self, name: str | None):
        """The Voice for a passage: a marked library voice, else the default voice, else a preset."""
        from engine import Voice

        for wanted in (name, self.settings.default_voice):
            if not wanted:
                continue
            try:
                return self.library.load(wanted)
            except LibraryError as e:
                self.show_status(f"{e} Using the default voice instead.")
        speakers = self.preset_speakers()
        return Voice.preset(PREFERRED_SPEAKER if PREFERRED_SPEAKER in speakers else speakers[0])

    def resolve_export_voice(self, name: str | None):
        """The Voice an export job names: a library voice, a speaker of the preset model, else as
        ``resolve_voice``."""
        from engine import Voice

        if name and self.library.find(name) is None:
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
        checkpoint = self.settings.model_spec("preset").checkpoint
        return preset_speakers(self.worker.engine_of_type("custom_voice"), checkpoint)

    def ensure_model(self, voice) -> None:
        """Ask the worker to load the model for ``voice``'s kind once (an injected factory serves all)."""
        if self._injected_factory is not None or voice.kind in self._requested_kinds:
            return
        self._requested_kinds.add(voice.kind)
        spec = self.settings.model_spec(voice.kind)
        self.model_status.loading(f"the model for {voice.kind} voices ({spec.checkpoint})")
        self.worker.request_load_model(spec)

    def reload_models(self) -> None:
        """After the settings changed: reload what is in use with the new checkpoint/device/precision. Reading
        stops first, so the model the settings no longer name does not read on."""
        if self.reader.state != IDLE:
            self.reader.stop()
            self.show_status("Reading stopped: the settings name another model.")
        kind = self._default_voice_kind()
        self._requested_kinds = set()
        self.worker.chunk_frames = self.settings.chunk_frames
        if self._injected_factory is not None:
            self.model_status.loading("the model")
            self.worker.request_load_model(self._injected_factory)
            return
        self._requested_kinds.add(kind)
        spec = self.settings.model_spec(kind)
        self.model_status.loading(f"the model for {kind} voices ({spec.checkpoint})")
        self.worker.request_load_model(spec)

    def preview_voice(self, name: str) -> None:
        try:
            voice = self.library.load(name)
        except LibraryError as e:
            self.show_error(str(e))
            return
        self.show_status(f"Previewing “{name}”…")
        self.reader.preview(voice, PREVIEW_TEXT)

    def keep_design(self, name: str) -> None:
        try:
            voice = self.library.load(name)
        except LibraryError as e:
            self.show_error(str(e))
            return
        self.ensure_model(voice)
        self._pending_keep = name
        self.show_status(f"Generating a sample of “{name}” to keep as a clone…")
        self.worker.request_keep_design(voice, KEEP_TEXT)

    def _on_model_failed(self, kind: str, message: str) -> None:
        self._load_failures[kind] = message
        self.model_status.failed(kind, message, self.worker.engine_in_use())

    def _on_model_loaded(self, info: str) -> None:
        """A model is in: the failures of the kinds it now serves no longer hold, so the banner stops saying them
        (and every message that quoted them, such as "No model … is loaded: …")."""
        self.model_status.loaded(info)
        for kind, message in list(self._load_failures.items()):
            if self._serves(kind):
                del self._load_failures[kind]
                self.banner.forget(message)

    def _serves(self, kind: str) -> bool:
        """True when a loaded engine speaks ``kind``'s voices ("": any, for a spec of no kind)."""
        if not kind or self._injected_factory is not None:
            return bool(self.worker.engine_in_use())
        return self.worker.engine_of_type(MODEL_TYPE_FOR_VOICE[kind]) is not None

    def _on_keep_progress(self, seconds: float) -> None:
        self.show_status(f"Generating a sample of “{self._pending_keep}”: {seconds:.0f} s…")

    def _on_voice_kept(self, voice) -> None:
        base = self._pending_keep or voice.name or "Kept voice"
        self._pending_keep = None
        self.library_panel.add_voice(voice, f"{base} (kept)")

    def _on_default_changed(self, name: str) -> None:
        self.settings.default_voice = name
        self.settings.save()
        if name:
            self.ensure_model(self.library.load(name))
            self.show_status(f"Unmarked paragraphs are read by “{name}”.")

    # ---- reading -----------------------------------------------------------------------------------
    def play(self) -> None:
        if self.reader.state == PAUSED:
            self.reader.resume()
            return
        cursor = self.editor.textCursor()
        source = self.editor.text_source
        if cursor.hasSelection():
            self.reader.read(source, cursor.selectionStart(), cursor.selectionEnd())
        else:  # from the start of the cursor's line, so the line's voice mark applies
            position = cursor.position()
            self.reader.read(source, source.line_start(position), None, from_position=position)

    def _on_sentence_changed(self, start: int, end: int) -> None:
        if start < 0:
            self.editor.clear_highlight()
        else:
            self._heard_at = start
            self.editor.highlight_span(start, end)
            self._show_current_chapter()

    def _remember_position(self) -> None:
        """Keep where reading of the open document stopped, so reopening it resumes there."""
        if self.document_path is not None and self._heard_at is not None:
            self.settings.remember_position(self.document_path, self._heard_at)
            self.settings.save()
            self._heard_at = None

    def _on_state_changed(self, state: str) -> None:
        self.window_actions.play.setEnabled(state != PLAYING)
        self.window_actions.pause.setEnabled(state == PLAYING)
        self.window_actions.stop.setEnabled(state != IDLE)
        self.window_actions.previous.setEnabled(state != IDLE)
        self.window_actions.next.setEnabled(state != IDLE)
        self.window_actions.play.setText("Resume" if state == PAUSED else "Play")
        self.editor.jump_on_double_click = state != IDLE  # idle, a double-click selects a word and starts nothing
        if state == PLAYING and self._gauge_state == IDLE:  # a resume keeps the counts since Play
            self.gauges.reset()
        self._gauge_state = state
        self.gauges.set_reading(state == PLAYING)
        if state == IDLE:
            self._remember_position()

    def _on_stats(self, rtf: float, first_audio_s: float) -> None:
        self.gauges.set_rtf(rtf)
        self.gauges.set_first_audio(first_audio_s)

    def _on_contents_change(self, position: int, removed: int, added: int) -> None:
        if (removed or added) and self.reader.state != IDLE and not self.editor.is_loading:
            self.reader.stop()
            self.show_status("Reading stopped because the text changed.")

    # ---- documents ---------------------------------------------------------------------------------
    @property
    def is_modified(self) -> bool:
        """True while the editor's text differs from what was opened or saved last."""
        return self.editor.document().isModified()

    def confirm_discard(self, doing: str) -> bool:
        """Before replacing the text: True if there is nothing unsaved, or the user saved it or chose to
        discard it; False if the user cancelled (or saving failed), and the text must stay."""
        if not self.is_modified:
            return True
        buttons = (QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                   | QMessageBox.StandardButton.Cancel)
        answer = QMessageBox.question(self, "Unsaved text",
                                      f"The text has changes that are not saved. Save them before {doing}?",
                                      buttons, QMessageBox.StandardButton.Save)
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        return answer == QMessageBox.StandardButton.Discard

    def open_path(self, path: Path) -> bool:
        """Open ``path``: a small file at once (True if it is shown), a large one on ``self.loader``'s thread
        (True: it is loading; the window stays usable and the text comes in when read)."""
        path = Path(path)
        if self.editor.is_loading or self.loader.busy:
            self.show_status("Still loading the previous document…")
            return False
        if in_background(path):
            self.loader.start(path)
            self.loading_indicator.opening(path)
            return True
        try:
            document = load_document(path)
        except DocumentError as e:
            self.show_error(str(e))
            return False
        return self._show_document(path, document)

    def cancel_opening(self) -> None:
        if self.loader.busy:
            self.loader.cancel()
            self.loading_indicator.hide()
            self.show_status("Not opened; your text is as it was.")

    def _on_document_read(self, path: Path, document) -> None:
        self.loading_indicator.hide()
        self._show_document(path, document)

    def _on_document_failed(self, path: Path, message: str) -> None:
        self.loading_indicator.hide()
        self.show_error(message)

    def _show_document(self, path: Path, document) -> bool:
        """Put a read ``document`` in the editor, once unsaved changes are saved or discarded."""
        if not self.confirm_discard(f"opening “{Path(path).name}”"):
            self.show_status("Not opened; your text is as it was.")
            return False
        self.reader.stop()
        self.banner.hide()
        self.document_path = Path(path)
        self.save_path = self.document_path if self.document_path.suffix.lower() in SAVE_IN_PLACE_SUFFIXES else None
        self.document_chapters = chapter_outline(document)  # the chapters export numbers alike
        self.document_author = getattr(document, "author", "") or ""
        self.settings.add_recent_file(path)
        self.settings.save()
        self.window_actions.rebuild_recent_menu()
        self.setWindowTitle(f"{document.title} — Orator")
        self.editor.load_text(document.text)
        edits = self.editor.edits  # the document's blocks hold until the text is edited
        length = len(document.text)
        self.reader.block_kinds = lambda: document.kind_at if self.editor.edits == edits \
            and self.editor.document().characterCount() - 1 == length else None
        for warning in document.warnings:
            self.show_error(warning)
        return True

    def open_dropped(self, paths: list[str]) -> bool:
        """Open the first dropped file; the others are named in the status bar, since one document opens at
        a time."""
        if not paths:
            return False
        opened = self.open_path(Path(paths[0]))
        if opened and len(paths) > 1:
            others = len(paths) - 1
            self.statusBar().showMessage(
                f"Only one document opens at a time: opened “{Path(paths[0]).name}”; "
                f"{others} other file{'s were' if others > 1 else ' was'} not opened.", 15000)
        return opened

    def new_document(self) -> bool:
        """An empty editor for a new text, after asking about unsaved changes."""
        if self.editor.is_loading or self.loader.busy or not self.confirm_discard("starting a new text"):
            return False
        self.reader.stop()
        self._remember_position()
        self.document_path = self.save_path = None
        self.document_chapters = []
        self.document_author = ""
        self._chapter_marks = []
        self.reader.block_kinds = lambda: None
        self.setWindowTitle("Orator")
        self.editor.load_text("")
        self.show_status("New text.")
        return True

    def save(self) -> bool:
        """Write the text where Save writes (a plain text opened or saved before), else ask for a path."""
        if self.save_path is None:
            return self.save_as()
        return self._write_text(self.save_path)

    def save_as(self) -> bool:
        """Ask for a path and write the text there as UTF-8 plain text; an imported document is never the
        target, since writing text over it would destroy the book."""
        if self.document_path is not None:
            start = str(self.document_path.with_suffix(".txt"))
        else:
            start = str(self.settings.start_folder() / "Untitled.txt")
        name, _ = QFileDialog.getSaveFileName(self, "Save the text as", start, SAVE_FILTER)
        if not name:
            return False
        path = Path(name)
        if not path.suffix:
            path = path.with_suffix(".txt")
        imported = self.document_path is not None and self.document_path.suffix.lower() not in SAVE_IN_PLACE_SUFFIXES
        if imported and path.resolve() == self.document_path.resolve():
            self.show_error(f"“{path.name}” is the imported document; save the text under another name.")
            return False
        return self._write_text(path)

    def _write_text(self, path: Path) -> bool:
        if self.editor.is_loading:
            self.show_status("Still loading; save again once the text is in.")
            return False
        try:
            write_lines(path, self.editor.mirror.snapshot())
        except OSError as e:
            self.show_error(f"Could not save “{path.name}”: {e.strerror or e}")
            return False
        self.save_path = self.document_path = path
        self.editor.document().setModified(False)
        self.settings.add_recent_file(path)
        self.settings.save()
        self.window_actions.rebuild_recent_menu()
        self.setWindowTitle(f"{path.stem} — Orator")
        self.show_status(f"Saved {path.name}.")
        return True

    # ---- chapters ----------------------------------------------------------------------------------
    def chapter_starts(self) -> list[int]:
        """Where each of ``document_chapters`` starts in the editor now (edits before a chapter move it)."""
        return [mark.position() for mark in self._chapter_marks]

    def go_to_chapter(self, index: int) -> None:
        """Put the cursor at the start of chapter ``index``; while reading, reading goes on from there."""
        if not 0 <= index < len(self._chapter_marks):
            return
        position = self._chapter_marks[index].position()
        cursor = self.editor.textCursor()
        cursor.setPosition(position)
        self.editor.setTextCursor(cursor)
        self.editor.centerCursor()
        self.show_status(f"Chapter: {self.document_chapters[index].title}")
        if self.reader.state != IDLE:
            self.reader.jump_to(self.editor.text_source, position)

    def current_chapter(self) -> int | None:
        """The chapter holding the place in the text (the sentence being read, else the cursor): the last one
        starting at or before it; None before the first chapter or in a text without chapters."""
        here = self._place_in_text()
        return next((i for i in range(len(self._chapter_marks) - 1, -1, -1)
                     if self._chapter_marks[i].position() <= here), None)

    def _place_in_text(self) -> int:
        span = self.editor.highlighted_span if self.reader.state != IDLE else None
        return span[0] if span is not None else self.editor.textCursor().position()

    def _show_current_chapter(self) -> None:
        if self._chapter_marks:
            self.chapter_dock.panel.set_current(self.current_chapter())

    def next_chapter(self) -> None:
        self._step_chapter(+1)

    def previous_chapter(self) -> None:
        self._step_chapter(-1)

    def _step_chapter(self, step: int) -> None:
        """To the first chapter after the place in the text (the sentence being read, else the cursor) or,
        backward, the last one before it, so Previous inside a chapter first goes back to its start."""
        starts = self.chapter_starts()
        if not starts:
            self.show_status("This text has no chapters.")
            return
        here = self._place_in_text()
        if step > 0:
            index = next((i for i, start in enumerate(starts) if start > here), None)
        else:
            index = next((i for i in range(len(starts) - 1, -1, -1) if starts[i] < here), None)
        if index is None:
            self.show_status("No further chapter." if step > 0 else "No earlier chapter.")
            return
        self.go_to_chapter(index)

    def _mark_chapters(self) -> None:
        """Anchor the loaded document's chapters in the editor and list them in the chapter panel."""
        last = max(self.editor.document().characterCount() - 1, 0)
        self._chapter_marks = []
        for chapter in self.document_chapters:
            mark = QTextCursor(self.editor.document())
            mark.setPosition(min(chapter.start, last))
            self._chapter_marks.append(mark)
        self.window_actions.enable_chapter_steps()
        self.chapter_dock.show_chapters(self.document_chapters)
        self._show_current_chapter()

    def _on_loading_finished(self) -> None:
        self._mark_chapters()
        self.show_status(f"Opened {self.document_path.name}." if self.document_path else "Ready.")
        self.autosave.mark_dirty()
        resume = self.settings.resume_position(self.document_path) if self.document_path else None
        if resume is not None:
            cursor = self.editor.textCursor()
            cursor.setPosition(min(resume, self.editor.document().characterCount() - 1))
            self.editor.setTextCursor(cursor)
            self.editor.centerCursor()
            self.show_status(f"Opened {self.document_path.name}; Play goes on where you stopped.")

    # ---- closing -----------------------------------------------------------------------------------
    def closeEvent(self, event) -> None:
        if self.is_modified and not self.confirm_discard("quitting"):
            event.ignore()
            return
        self.editor.document().setModified(False)  # saved or discarded: autosave keeps nothing for next time
        self.reader.stop()
        self.loader.cancel()
        self.exports.shutdown()
        self.voiceover_panel.shutdown()
        self.autosave.close()
        self.settings.font_size = self.editor.font_size
        self.settings.window_geometry = bytes(self.saveGeometry().toHex()).decode()
        self.settings.save()
        stop_worker(self.worker_thread, self.worker)
        if self.player is not None:
            self.player.close()
        super().closeEvent(event)
