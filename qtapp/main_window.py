"""The studio's main window: it assembles the views and hands their behaviour to helpers of its own.

``MainWindow(settings, engine_factory=None, sd_module=None)`` starts the speech worker thread
(``qtapp.worker.start_worker``) and the audio player (``qtapp.player.Player``). Without an
``engine_factory`` each voice kind loads the checkpoint chosen in the settings; an injected
factory (tests, embedding) serves every voice kind. The views are the editor with its banner
(``qtapp.banner``) and find bar, the voice library, the gauges, the status bar and the Chapters,
Export queue and Voiceover docks; menus and toolbar are built by ``qtapp.actions``. Behaviour lives in
the helpers the window owns, each wiring its own signals:

- ``window.documents`` (``qtapp.document_files``): open, new, save, save as, unsaved changes;
- ``window.chapters`` (``qtapp.chapter_navigation``): the open document's chapters;
- ``window.read_aloud`` (``qtapp.read_aloud``): Play, the highlight, the reading actions and gauges, where
  reading stopped; ``window.reader`` (``qtapp.reading``) does the reading;
- ``window.voices`` (``qtapp.voices_and_models``): which voice reads and which models load.

The window itself keeps what the open document is (its path and chapters, read by exports and menus), the
messages (status bar and banner), the pronunciation rules every reader shares, and closing.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow, QSplitter, QVBoxLayout, QWidget

from engine.documents import Chapter
from engine.pronunciation import save_lexicon
from engine.voices.library import VoiceLibrary
from qtapp.actions import build_actions
from qtapp.autosave import Autosave
from qtapp.banner import Banner
from qtapp.chapter_navigation import ChapterNavigation
from qtapp.chapter_panel import ChapterDock
from qtapp.document_files import DocumentFiles
from qtapp.document_loader import DocumentLoader, LoadingIndicator
from qtapp.editor import Editor, FindBar
from qtapp.export_panel import ExportPanel
from qtapp.export_queue import ExportQueueController
from qtapp.gauges import GaugePanel
from qtapp.library_panel import LibraryPanel
from qtapp.model_status import ModelStatus
from qtapp.read_aloud import ReadAloud
from qtapp.reading import IDLE, ReadingController
from qtapp.settings import Settings, load_pronunciation
from qtapp.status_bar import StatusBar
from qtapp.voiceover_panel import VoiceoverPanel
from qtapp.voices_and_models import VoicesAndModels
from qtapp.worker import start_worker, stop_worker


class MainWindow(QMainWindow):
    def __init__(self, settings: Settings, engine_factory=None, sd_module=None):
        super().__init__()
        self.settings = settings
        self.document_path: Path | None = None
        self.save_path: Path | None = None  # where Save writes without asking: a plain text opened or saved
        self.document_chapters: list[Chapter] = []  # spans in the loaded text, for jumping by chapter
        self.document_author = ""  # the open document's, for the tags of its exports
        self.setWindowTitle("Orator")
        self.resize(1280, 800)
        self.voices = VoicesAndModels(self, engine_factory)

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
        initial_spec = self.voices.first_model()
        buffered = self.player.buffered_seconds if self.player is not None else None
        # the first model starts loading once the event loop runs, after _connect below
        self.pronunciation, pronunciation_problem = load_pronunciation(settings.pronunciation_path)
        self.worker_thread, self.worker = start_worker(engine_factory or initial_spec, buffered_seconds=buffered,
                                                       chunk_frames=settings.chunk_frames, speed=settings.speed,
                                                       any_kind=engine_factory is not None,
                                                       pronunciation=self.pronunciation)
        if engine_factory is None:
            self.model_status.loading(f"the model for {initial_spec.kind} voices ({initial_spec.checkpoint})")
        self.reader = ReadingController(self.worker, self.player, self.voices.resolve_voice,
                                        self.voices.ensure_model, self)
        self.reader.segment_chars = settings.segment_chars
        self.reader.reading_policy = settings.reading_policy()
        self.reader.cast = settings.reading_cast()
        self.exports = ExportQueueController(settings.root(), self.worker.engine_when_ready,
                                             self.voices.resolve_export_voice, self.voices.ensure_model,
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
        self.voiceover_panel = VoiceoverPanel(self.worker.engine_when_ready, self.voices.resolve_voiceover_voice,
                                              self.player, pronunciation=self.pronunciation)
        self.voiceover_dock = QDockWidget("Voiceover", self)
        self.voiceover_dock.setObjectName("voiceover")
        self.voiceover_dock.setAccessibleName("Voiceover")
        self.voiceover_dock.setWidget(self.voiceover_panel)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.voiceover_dock)
        self.voiceover_dock.hide()
        self.chapter_dock = ChapterDock(self)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.chapter_dock)
        self.documents = DocumentFiles(self)
        self.chapters = ChapterNavigation(self)
        self.read_aloud = ReadAloud(self)
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
        # the worker's signals go to methods of objects on the GUI thread (the window and its helpers, all
        # QObjects), which Qt queues onto that thread; a lambda would run on the worker thread and touch widgets
        self.worker.error.connect(self.show_error)
        self.worker.model_in_use.connect(self.model_status.in_use)
        self.worker.model_status.connect(self.model_status.status)
        self.worker.download_progress.connect(self.model_status.download_progress)
        # a lambda runs on the GUI thread at once; the worker thread is busy downloading and would never get to it
        self.model_status.stop_requested.connect(lambda: self.worker.cancel_download())
        self.worker.segment_cut.connect(self._on_segment_cut)  # a method: delivered on the window's thread
        self.editor.counts_changed.connect(
            lambda words, chars: self.counts_label.setText(f"{words:,} words · {chars:,} characters"))
        self.library_panel.message.connect(self.show_status)
        self.exports.message.connect(self.show_status)
        self.voiceover_panel.message.connect(self.show_status)
        self.exports.failed.connect(self.show_error)
        self.exports.added.connect(lambda _: self.export_dock.show())
        for helper in (self.voices, self.documents, self.chapters, self.read_aloud):
            helper.connect_signals()
        for warning in self.exports.warnings:
            self.show_error(warning)
        self.read_aloud.on_state_changed(IDLE)

    def _restore_session(self) -> None:
        if self.settings.window_geometry:
            self.restoreGeometry(QByteArray.fromHex(self.settings.window_geometry.encode()))
        restored = self.autosave.restore()
        if restored:
            self.show_status("Restored the text you had not saved last time.")
        else:  # the editor's setup marks its empty document modified; nothing is unsaved yet
            self.editor.document().setModified(False)

    # ---- what is open ------------------------------------------------------------------------------
    @property
    def is_modified(self) -> bool:
        """True while the editor's text differs from what was opened or saved last."""
        return self.editor.document().isModified()

    def open_path(self, path: Path) -> bool:
        """Open the document at ``path`` (``DocumentFiles.open_path``: True if shown or loading)."""
        return self.documents.open_path(path)

    def preset_speakers(self) -> list[str]:
        """The speakers of the preset model in use (``VoicesAndModels.preset_speakers``)."""
        return self.voices.preset_speakers()

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

    # ---- closing -----------------------------------------------------------------------------------
    def closeEvent(self, event) -> None:
        if self.is_modified and not self.documents.confirm_discard("quitting"):
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
