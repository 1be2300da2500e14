"""The main window's side of reading aloud: ``ReadAloud``.

``ReadingController`` (``qtapp.reading``) plans and speaks; this starts it from the editor (Play reads the
selection, else from the start of the cursor's line so its voice mark applies), shows what it does (the sentence
highlighted, the reading actions enabled, the gauges) and keeps where reading of the open document stopped, so
reopening it resumes there. Reading stops when the text is edited under it.

It is a QObject parented to the window, so the worker's signals reach it on the GUI thread.
"""

from __future__ import annotations

from PySide6.QtCore import QObject

from qtapp.reading import IDLE, PAUSED, PLAYING


class ReadAloud(QObject):
    """Reading aloud in ``window`` (a ``MainWindow``: its editor, reader, worker, gauges, actions and chapters)."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.heard_at: int | None = None  # start of the last sentence heard in this document
        self.gauge_state = IDLE  # the reader's state as the gauges last saw it

    def connect_signals(self) -> None:
        window = self.window
        editor, reader = window.editor, window.reader
        reader.sentence_changed.connect(self.on_sentence_changed)
        reader.state_changed.connect(self.on_state_changed)
        reader.message.connect(window.show_status)
        window.worker.stats.connect(self.on_stats)
        editor.position_activated.connect(lambda pos: reader.jump_to(editor.text_source, pos))
        editor.document().contentsChange.connect(self.on_contents_change)

    def play(self) -> None:
        """Resume, else read the selection, else read on from the cursor."""
        editor, reader = self.window.editor, self.window.reader
        if reader.state == PAUSED:
            reader.resume()
            return
        cursor = editor.textCursor()
        source = editor.text_source
        if cursor.hasSelection():
            reader.read(source, cursor.selectionStart(), cursor.selectionEnd())
        else:  # from the start of the cursor's line, so the line's voice mark applies
            position = cursor.position()
            reader.read(source, source.line_start(position), None, from_position=position)

    def on_sentence_changed(self, start: int, end: int) -> None:
        if start < 0:
            self.window.editor.clear_highlight()
        else:
            self.heard_at = start
            self.window.editor.highlight_span(start, end)
            self.window.chapters.show_current()

    def remember_position(self) -> None:
        """Keep where reading of the open document stopped, so reopening it resumes there."""
        window = self.window
        if window.document_path is not None and self.heard_at is not None:
            window.settings.remember_position(window.document_path, self.heard_at)
            window.settings.save()
            self.heard_at = None

    def on_state_changed(self, state: str) -> None:
        window = self.window
        actions = window.window_actions
        actions.play.setEnabled(state != PLAYING)
        actions.pause.setEnabled(state == PLAYING)
        actions.stop.setEnabled(state != IDLE)
        actions.previous.setEnabled(state != IDLE)
        actions.next.setEnabled(state != IDLE)
        actions.play.setText("Resume" if state == PAUSED else "Play")
        window.editor.jump_on_double_click = state != IDLE  # idle, a double-click selects a word and starts nothing
        if state == PLAYING and self.gauge_state == IDLE:  # a resume keeps the counts since Play
            window.gauges.reset()
        self.gauge_state = state
        window.gauges.set_reading(state == PLAYING)
        if state == IDLE:
            self.remember_position()

    def on_stats(self, rtf: float, first_audio_s: float) -> None:
        self.window.gauges.set_rtf(rtf)
        self.window.gauges.set_first_audio(first_audio_s)

    def on_contents_change(self, position: int, removed: int, added: int) -> None:
        window = self.window
        if (removed or added) and window.reader.state != IDLE and not window.editor.is_loading:
            window.reader.stop()
            window.show_status("Reading stopped because the text changed.")
