"""The main window end to end with a fake engine (real worker thread, real player, fake sound device):
reading aloud with highlighting, jumps, voice marks, documents, autosave, errors, export, keep voice."""

import pytest
import soundfile
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QTextCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from engine import CheckpointError, Voice
from engine.core.chunks import SAMPLES_PER_FRAME
from qtapp.actions import SHORTCUTS
from qtapp.main_window import MainWindow
from qtapp.reading import IDLE, PAUSED, PLAYING
from qtapp.settings import Settings

TEXT = "The first sentence. The second one! A third?\n[voice: Bob] Bob speaks here. Bob again.\n\nThe end."


@pytest.fixture
def make_window(qtbot, fake_sd, fake_engine_class):
    """``make_window(engine_factory=None, settings=None)``: a shown window on the fake engine; without
    ``settings``, it reads one sentence at a time (the tests step, skip and highlight sentence by sentence)."""
    def make(engine_factory=None, settings=None):
        if settings is None:
            settings = Settings.load()
            settings.segment_chars = 0
        window = MainWindow(settings, engine_factory=engine_factory or fake_engine_class, sd_module=fake_sd)
        qtbot.addWidget(window)
        window.show()
        return window
    return make


def wait_ready(qtbot, window):
    qtbot.waitUntil(lambda: window.model_label.text().startswith("Model:"), timeout=5000)


def engine_of(window):
    return window.worker.engine_for(Voice.preset("ryan"))


def play_until(qtbot, window, fake_sd, predicate, timeout=5000):
    """Let the fake device play audio until ``predicate()`` holds."""
    def step():
        fake_sd.pump(0.05)
        return predicate()
    qtbot.waitUntil(step, timeout=timeout)


def highlighted(window):
    span = window.editor.highlighted_span
    return None if span is None else window.editor.toPlainText()[span[0]:span[1]]


def test_play_highlights_each_sentence_as_it_becomes_audible(qtbot, fake_sd, make_window):
    window = make_window()
    wait_ready(qtbot, window)
    window.editor.setPlainText(TEXT)
    window.read_aloud.play()
    assert window.reader.state == PLAYING
    heard = []

    def record():
        if highlighted(window) and (not heard or heard[-1] != highlighted(window)):
            heard.append(highlighted(window))
        return window.reader.state == IDLE

    play_until(qtbot, window, fake_sd, record)
    assert heard == ["The first sentence.", "The second one!", "A third?", "Bob speaks here.", "Bob again.",
                     "The end."]
    assert window.editor.highlighted_span is None
    texts = [text.strip() for text, _ in engine_of(window).spoken]
    assert texts == ["The first sentence. The second one! A third?", "Bob speaks here. Bob again.", "The end."]


def test_voice_marks_use_library_voices(qtbot, fake_sd, make_window):
    window = make_window()
    wait_ready(qtbot, window)
    window.library_panel.add_voice(Voice.preset("aiden"), "Narrator")  # first voice becomes the default
    window.library_panel.add_voice(Voice.preset("ryan", instruct="gruff"), "Bob")
    assert window.settings.default_voice == "Narrator"
    window.editor.setPlainText(TEXT)
    window.read_aloud.play()
    play_until(qtbot, window, fake_sd, lambda: window.reader.state == IDLE)
    speakers = [voice.speaker for _, voice in engine_of(window).spoken]
    assert speakers == ["aiden", "ryan", "aiden"]


def test_play_below_a_mark_reads_in_the_marked_voice_to_the_blank_line(qtbot, fake_sd, make_window):
    window = make_window()
    wait_ready(qtbot, window)
    window.library_panel.add_voice(Voice.preset("aiden"), "Narrator")
    window.library_panel.add_voice(Voice.preset("ryan"), "Bob")
    text = "[voice: Bob] Bob starts.\nHe goes on.\n\nThe narrator ends."
    window.editor.setPlainText(text)
    cursor = window.editor.textCursor()
    cursor.setPosition(text.index("goes"))  # a line below the mark, in its paragraph
    window.editor.setTextCursor(cursor)
    window.read_aloud.play()
    play_until(qtbot, window, fake_sd, lambda: window.reader.state == IDLE)
    assert [(said, voice.speaker) for said, voice in engine_of(window).spoken] == [("He goes on.", "ryan"),
                                                                                 ("The narrator ends.", "aiden")]


def test_presets_come_from_the_loaded_model(qtbot, fake_sd, make_window, fake_engine_class):
    class OtherSpeakers(fake_engine_class):
        speakers = ["zed", "ann"]

    window = make_window(OtherSpeakers)
    wait_ready(qtbot, window)
    assert window.preset_speakers() == ["zed", "ann"]
    window.editor.setPlainText("Nobody is the default voice.")
    window.read_aloud.play()  # no library voice is the default: the model's first speaker reads (it has no "vivian")
    play_until(qtbot, window, fake_sd, lambda: window.reader.state == IDLE)
    assert [voice.speaker for _, voice in engine_of(window).spoken] == ["zed"]


def test_a_lines_short_sentences_are_read_and_highlighted_together(qtbot, fake_sd, make_window):
    window = make_window(settings=Settings.load())  # the default: segments of up to 200 characters
    wait_ready(qtbot, window)
    window.editor.setPlainText(TEXT)
    window.read_aloud.play()
    heard = []

    def record():
        if highlighted(window) and (not heard or heard[-1] != highlighted(window)):
            heard.append(highlighted(window))
        return window.reader.state == IDLE

    play_until(qtbot, window, fake_sd, record)
    assert heard == ["The first sentence. The second one! A third?", "Bob speaks here. Bob again.", "The end."]


def test_play_from_cursor_and_selection(qtbot, fake_sd, make_window):
    window = make_window()
    wait_ready(qtbot, window)
    window.editor.setPlainText(TEXT)
    cursor = window.editor.textCursor()
    cursor.setPosition(TEXT.index("second"))
    window.editor.setTextCursor(cursor)
    window.read_aloud.play()
    assert highlighted(window) == "The second one!"
    play_until(qtbot, window, fake_sd, lambda: window.reader.state == IDLE)
    engine = engine_of(window)
    assert engine.spoken[0][0].strip() == "The second one! A third?"  # the worker starts at that segment
    engine.spoken.clear()
    cursor.setPosition(TEXT.index("A third"))
    cursor.setPosition(TEXT.index("Bob speaks") + len("Bob speaks here."), QTextCursor.MoveMode.KeepAnchor)
    window.editor.setTextCursor(cursor)
    window.read_aloud.play()
    play_until(qtbot, window, fake_sd, lambda: window.reader.state == IDLE)
    assert [t.strip() for t, _ in engine.spoken] == ["A third?", "Bob speaks here."]


def test_pause_resume_stop_and_skips(qtbot, fake_sd, make_window):
    window = make_window()
    wait_ready(qtbot, window)
    window.editor.setPlainText(TEXT)
    window.read_aloud.play()
    play_until(qtbot, window, fake_sd, lambda: highlighted(window) == "The first sentence.")
    window.window_actions.pause.trigger()
    assert window.reader.state == PAUSED and window.player.paused
    assert window.window_actions.play.text() == "Resume"
    window.read_aloud.play()  # Play resumes
    assert window.reader.state == PLAYING and not window.player.paused
    window.window_actions.next.trigger()
    assert highlighted(window) == "The second one!"
    play_until(qtbot, window, fake_sd, lambda: window.reader.current_sentence == 2)
    window.window_actions.previous.trigger()
    assert highlighted(window) == "The second one!"
    play_until(qtbot, window, fake_sd, lambda: highlighted(window) == "A third?")
    window.window_actions.stop.trigger()
    assert window.reader.state == IDLE and window.editor.highlighted_span is None
    assert not window.window_actions.stop.isEnabled()


def test_double_click_jumps_to_a_sentence(qtbot, fake_sd, make_window):
    window = make_window()
    wait_ready(qtbot, window)
    window.editor.setPlainText(TEXT)
    window.editor.position_activated.emit(TEXT.index("again"))
    assert highlighted(window) == "Bob again."
    play_until(qtbot, window, fake_sd, lambda: window.reader.state == IDLE)
    assert engine_of(window).spoken[0][0] == "Bob again."


def click_at(window, position: int, double: bool = False) -> None:
    cursor = QTextCursor(window.editor.document())
    cursor.setPosition(position)
    click = QTest.mouseDClick if double else QTest.mouseClick
    click(window.editor.viewport(), Qt.MouseButton.LeftButton, pos=window.editor.cursorRect(cursor).center())


def test_after_a_double_click_jump_stop_then_play_reads_on_from_there(qtbot, fake_sd, make_window):
    window = make_window()
    wait_ready(qtbot, window)
    window.editor.setPlainText(TEXT)
    window.show()
    window.read_aloud.play()
    click_at(window, TEXT.index("again") + 2, double=True)
    qtbot.waitUntil(lambda: highlighted(window) == "Bob again.", timeout=5000)
    # The jump's job records itself once the worker starts it; clearing before then would count it below.
    qtbot.waitUntil(lambda: any(text == "Bob again." for text, _ in engine_of(window).spoken), timeout=5000)
    window.reader.stop()
    engine_of(window).spoken.clear()
    window.read_aloud.play()
    assert highlighted(window) == "Bob again."
    play_until(qtbot, window, fake_sd, lambda: window.reader.state == IDLE)
    assert [text for text, _ in engine_of(window).spoken] == ["Bob again.", "The end."]


def test_a_double_or_triple_click_starts_no_reading(qtbot, fake_sd, make_window):
    """Selecting a word or a line with the mouse is editing, not Play; while reading, a triple click (selecting a
    line) does not jump either, though a double-click does."""
    window = make_window()
    wait_ready(qtbot, window)
    window.editor.setPlainText(TEXT)
    interval = QApplication.doubleClickInterval()
    click_at(window, TEXT.index("second") + 2, double=True)
    qtbot.wait(2 * interval)  # the time a double-click's jump would take to come
    assert window.reader.state == IDLE and window.editor.textCursor().selectedText() == "second"
    click_at(window, TEXT.index("Bob speaks") + 2, double=True)
    click_at(window, TEXT.index("Bob speaks") + 2)
    qtbot.wait(2 * interval)
    assert window.reader.state == IDLE and not engine_of(window).spoken
    assert window.editor.textCursor().selectedText().startswith("[voice: Bob] Bob speaks here.")

    window.editor.setTextCursor(QTextCursor(window.editor.document()))
    window.read_aloud.play()
    click_at(window, TEXT.index("The end") + 2, double=True)
    click_at(window, TEXT.index("The end") + 2)
    qtbot.wait(2 * interval)
    assert highlighted(window) == "The first sentence."  # the triple click did not jump
    click_at(window, TEXT.index("The end") + 2, double=True)
    qtbot.waitUntil(lambda: highlighted(window) == "The end.", timeout=5000)


def test_a_speed_change_while_reading_is_heard_from_the_next_chunk(qtbot, fake_sd, make_window):
    window = make_window()
    wait_ready(qtbot, window)
    written = []
    write = window.player.write
    window.player.write = lambda samples, sentence: (written.append((len(samples), sentence)),
                                                      write(samples, sentence))
    window.editor.setPlainText(TEXT)
    window.read_aloud.play()
    play_until(qtbot, window, fake_sd, lambda: highlighted(window) == "The second one!")
    written.clear()
    window.window_actions.speed.setValue(2.0)  # the player held this sentence and more at speed 1
    assert window.reader.state == PLAYING and highlighted(window) == "The second one!"
    qtbot.waitUntil(lambda: sum(n for n, s in written if s == 2) > 0, timeout=5000)
    heard = sum(n for n, s in written if s == 1)  # the sentence restarts, made at the new speed
    assert heard == round(3 * SAMPLES_PER_FRAME / 2.0)
    assert window.settings.speed == 2.0 and window.worker.speed == 2.0


def test_reopening_a_document_resumes_where_reading_stopped(qtbot, fake_sd, make_window, tmp_path):
    book, other = tmp_path / "book.txt", tmp_path / "other.txt"
    book.write_text("First part.\nSecond part.\nThird part.")  # three lines: three segments
    other.write_text("Something else.")
    settings = Settings.load()
    window = make_window(settings=settings)
    wait_ready(qtbot, window)
    with qtbot.waitSignal(window.editor.loading_finished, timeout=5000):
        window.open_path(book)
    window.read_aloud.play()
    play_until(qtbot, window, fake_sd, lambda: highlighted(window) == "Second part.")
    window.window_actions.stop.trigger()
    for path in (other, book):
        with qtbot.waitSignal(window.editor.loading_finished, timeout=5000):
            window.open_path(path)
    assert window.editor.textCursor().position() == book.read_text().index("Second")
    window.read_aloud.play()
    assert highlighted(window) == "Second part."
    window.reader.stop()
    later = make_window(settings=Settings.load())  # remembered across sessions too
    with qtbot.waitSignal(later.editor.loading_finished, timeout=5000):
        later.open_path(book)
    assert later.editor.textCursor().position() == book.read_text().index("Second")


def test_an_imported_document_is_read_by_its_blocks_kinds_until_it_is_edited(qtbot, fake_sd, make_window, tmp_path):
    """A paragraph the HTML marks as prose is read even where it looks like a command, its <pre> is announced, its
    note is said after its paragraph; once the text is edited the blocks may have moved, and lines are guessed."""
    page = tmp_path / "page.html"
    page.write_text("<html><body><p># apt install is what we do next.</p><pre>make\nmake install</pre>"
                    "<p>Done<a epub:type='noteref' href='#n'>1</a>.</p><aside epub:type='footnote' id='n'>"
                    "<p>Or later.</p></aside></body></html>", encoding="utf-8")
    window = make_window()
    wait_ready(qtbot, window)
    with qtbot.waitSignal(window.editor.loading_finished, timeout=5000):
        assert window.open_path(page)

    def planned() -> list[str]:
        window.editor.moveCursor(QTextCursor.MoveOperation.Start)
        window.read_aloud.play()
        plan = window.reader.plan
        said = [plan.get(i).segment.speech for i in range(4)]
        window.reader.stop()
        return said

    assert planned() == ["# apt install is what we do next.", "Code example.", "Done.", "Footnote: Or later."]
    window.editor.moveCursor(QTextCursor.MoveOperation.End)
    window.editor.insertPlainText(" Really.")
    assert planned()[:2] == ["Code example.", "make\nmake install"]  # guessed by lines now


def test_shortcuts_exist_and_f5_plays(qtbot, fake_sd, make_window):
    window = make_window()
    wait_ready(qtbot, window)
    actions = window.window_actions
    for name, act in (("play", actions.play), ("pause", actions.pause), ("stop", actions.stop),
                      ("previous", actions.previous), ("next", actions.next)):
        assert act.shortcut().toString() == SHORTCUTS[name]
    window.editor.setPlainText("Just one sentence.")
    window.editor.setFocus()
    QTest.keyClick(window.editor, Qt.Key.Key_F5)
    assert window.reader.state == PLAYING
    QTest.keyClick(window.editor, Qt.Key.Key_F8)
    assert window.reader.state == IDLE


def test_editing_while_reading_stops(qtbot, fake_sd, make_window):
    window = make_window()
    wait_ready(qtbot, window)
    window.editor.setPlainText(TEXT)
    window.read_aloud.play()
    window.editor.insertPlainText("x")
    assert window.reader.state == IDLE


def test_worker_error_shows_a_banner_and_the_app_keeps_working(qtbot, fake_sd, make_window):
    def broken():
        raise CheckpointError("no model at /nowhere")

    window = make_window(engine_factory=broken)
    qtbot.waitUntil(window.banner.isVisible, timeout=5000)
    assert "Model not found" in window.banner.label.text()
    window.editor.setPlainText("Still works.")
    window.read_aloud.play()
    qtbot.waitUntil(lambda: window.reader.state == IDLE, timeout=5000)  # "no model is loaded yet"
    assert "no model" in window.banner.label.text()


def test_open_documents_recent_files_and_bad_files(qtbot, fake_sd, make_window, tmp_path):
    window = make_window()
    good = tmp_path / "story.md"
    good.write_text("# Title\n\nOnce upon a time.")
    assert window.open_path(good)
    qtbot.waitUntil(lambda: window.editor.toPlainText() == "Title\n\nOnce upon a time.", timeout=2000)
    assert window.windowTitle().startswith("story")
    assert [a.text() for a in window.window_actions.recent_menu.actions()] == ["story.md"]
    bad = tmp_path / "broken.epub"
    bad.write_bytes(b"not an epub")
    assert not window.open_path(bad)
    assert window.banner.isVisible() and "not a valid EPUB" in window.banner.label.text()
    assert window.editor.toPlainText() == "Title\n\nOnce upon a time."  # the open text is kept
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert not window.open_path(empty)
    assert "empty" in window.banner.label.text()
    dropped = tmp_path / "dropped.txt"
    dropped.write_text("Dropped text.")
    window.editor.files_dropped.emit([str(dropped)])
    qtbot.waitUntil(lambda: window.editor.toPlainText() == "Dropped text.", timeout=2000)


def test_twenty_megabyte_file_opens_without_freezing(qtbot, fake_sd, make_window, tmp_path):
    window = make_window()
    big = tmp_path / "big.txt"
    big.write_text("A line of a very long book that someone wants to hear.\n" * 370_000)
    assert big.stat().st_size > 20_000_000
    ticks = []
    timer = QTimer(interval=5)
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start()
    with qtbot.waitSignal(window.editor.loading_finished, timeout=120_000):
        assert window.open_path(big)
    timer.stop()
    assert len(ticks) > 20
    assert window.editor.document().characterCount() > 20_000_000


def test_unsaved_text_survives_a_restart(qtbot, fake_sd, make_window):
    settings = Settings.load()
    window = make_window(settings=settings)
    QTest.keyClicks(window.editor, "Words I typed.")
    qtbot.waitUntil(lambda: settings.autosave_path.exists(), timeout=5000)
    assert settings.autosave_path.read_text() == "Words I typed."
    second = make_window()  # as after a crash: the first window never closed, the new one restores
    qtbot.waitUntil(lambda: second.editor.toPlainText() == "Words I typed.", timeout=2000)


def test_export_writes_audio_and_subtitles_with_the_marked_voices(qtbot, fake_sd, make_window, tmp_path):
    from engine.production.export_jobs import DONE, Job, Snapshot

    window = make_window()
    wait_ready(qtbot, window)
    window.library_panel.add_voice(Voice.preset("aiden"), "Bob")
    text = "One. Two.\n[voice: Bob] Three."
    out = tmp_path / "book.flac"
    job = window.exports.add(Job(title="Book", output=str(out), format="flac", voice="ryan", subtitles="srt",
                                 source=None, snapshot="0" * 32), Snapshot(text, "Book"))
    qtbot.waitUntil(lambda: window.exports.queue.get(job.id).state == DONE, timeout=10_000)
    audio, rate = soundfile.read(out)
    assert rate == 24000 and len(audio) > 0
    assert "Three." in out.with_suffix(".srt").read_text()
    assert "Exported" in window.statusBar().currentMessage()
    assert [(text, voice.speaker) for text, voice in engine_of(window).spoken] == [("One.", "ryan"), ("Two.", "ryan"),
                                                                                    ("Three.", "aiden")]


def test_keep_this_voice_adds_a_clone(qtbot, fake_sd, make_window, fake_engine_class):
    class DesignEngine(fake_engine_class):
        model_type = "voice_design"
        frames_per_sentence = 15  # a clone needs at least a second of reference audio (its sample: one segment)

    window = make_window(engine_factory=DesignEngine)
    wait_ready(qtbot, window)
    window.library_panel.add_voice(Voice.design("a cheerful robot"), "Robot")
    window.library_panel.select("Robot")
    window.library_panel.keep_button.click()
    qtbot.waitUntil(lambda: "Robot (kept)" in window.library.names() or window.banner.isVisible(), timeout=5000)
    assert not window.banner.isVisible(), window.banner.label.text()
    kept = window.library.load("Robot (kept)")
    assert kept.kind == "clone" and kept.ref_text


def test_settings_change_reloads_the_model(qtbot, fake_sd, make_window, monkeypatch):
    window = make_window()
    wait_ready(qtbot, window)
    requests = []
    monkeypatch.setattr(window.worker, "request_load_model", requests.append)
    window.settings.chunk_frames = 8
    window.voices.reload_models()
    assert requests and window.worker.chunk_frames == 8


def test_screenshot_tool_renders_the_window(tmp_path, qapp):
    import importlib.util
    from pathlib import Path

    from PySide6.QtGui import QImage

    tool = Path(__file__).resolve().parents[2] / "tools" / "screenshots.py"
    spec = importlib.util.spec_from_file_location("screenshots", tool)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shots = module.main(tmp_path)
    image = QImage(str(shots[0]))
    assert (image.width(), image.height()) == (1280, 800)
    assert all(QImage(str(p)).width() > 300 for p in shots[1:])


def test_gauges_count_underruns_since_play_and_rest_while_idle(qtbot, fake_sd, make_window):
    window = make_window()
    wait_ready(qtbot, window)
    gauges = window.gauges
    window.player.underrun.emit(5)  # the player's lifetime total from earlier readings
    assert not gauges.reading
    window.editor.setPlainText(TEXT)
    window.read_aloud.play()
    assert gauges.reading and gauges.underrun_card.value_text == "0"
    window.player.underrun.emit(6)
    window.reader.pause()
    assert not gauges.reading
    window.reader.resume()  # a resume goes on counting from Play
    assert gauges.underrun_card.value_text == "1"
    window.reader.stop()
    assert not gauges.reading


def test_tab_leads_from_the_editor_to_the_voice_list(qtbot, fake_sd, make_window):
    window = make_window()
    window.activateWindow()
    window.editor.setFocus()
    qtbot.waitUntil(lambda: window.editor.hasFocus(), timeout=2000)
    QTest.keyClick(window.editor, Qt.Key.Key_Tab)
    assert window.editor.toPlainText() == "" and not window.editor.hasFocus()  # no tab typed, focus moved on
    for _ in range(10):
        if window.library_panel.view.hasFocus():
            break
        QTest.keyClick(window.focusWidget(), Qt.Key.Key_Tab)
    assert window.library_panel.view.hasFocus()


def test_help_lists_the_shortcuts_and_the_voice_mark_syntax(qtbot, fake_sd, make_window, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    shown = []
    monkeypatch.setattr(QMessageBox, "information", lambda parent, title, text, *a: shown.append(text))
    window = make_window()
    help_action = next(a for a in window.actions() if "voice marks" in a.text())
    help_action.trigger()
    assert len(shown) == 1
    text = shown[0]
    assert "[voice: NAME]" in text and "[voice: Mara]" in text
    for keys in (SHORTCUTS["play"], "Ctrl+Shift+Down", "Ctrl+S", "Ctrl+N", "Ctrl+Shift+S"):
        assert f"<b>{keys}</b>" in text
    assert "<td>Play</td>" in text and "<td>Next chapter</td>" in text and "&Open" not in text
    assert "spoken together" in text and "the status bar says so" in text  # how text is read


def test_a_segment_the_engine_cut_is_told_in_the_status_bar(qtbot, fake_sd, make_window):
    window = make_window()
    window.worker.segment_cut.emit(1, 3, "cut at its frame budget (40 frames, 3.2 s) before the model ended it")
    qtbot.waitUntil(lambda: window.statusBar().currentMessage() == (
        "Speech was cut at its frame budget (40 frames, 3.2 s) before the model ended it."), timeout=2000)


def test_reading_speed_and_generation_speed_are_named_apart(qtbot, fake_sd, make_window):
    from PySide6.QtWidgets import QLabel

    window = make_window()
    speed = window.window_actions.speed
    label = next(w for w in window.findChildren(QLabel) if w.buddy() is speed)
    assert label.text().strip() == "Reading speed" and speed.accessibleName() == "Reading speed"
    assert window.gauges.rtf_card.caption == "generation"
