"""Read-aloud control: turns Play / Pause / Stop / next / previous / jump into worker jobs and
player writes, and reports which sentence is audible.

One reading session follows a ``ReadingPlan``. Starting at sentence k queues one worker job per
passage from k's passage on (each passage has one voice; its first job starts at k's segment).
Chunks of those jobs go to the player tagged with the plan's global sentence number, and the
player's ``position_changed`` tells which sentence to highlight. Jumping cancels the worker, drops
the player's queue and queues again; chunks of cancelled jobs are recognised by job id and dropped.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from qtapp.highlight import ReadingPlan

IDLE, PLAYING, PAUSED = "idle", "playing", "paused"


class ReadingController(QObject):
    state_changed = Signal(str)  # IDLE | PLAYING | PAUSED
    sentence_changed = Signal(int, int)  # document span [start, end) now audible; (-1, -1) clears
    message = Signal(str)  # something the user should read in the status bar

    def __init__(self, worker, player, resolve_voice: Callable[[str | None], object],
                 ensure_model: Callable[[object], None], parent: QObject | None = None):
        """``resolve_voice(name or None)`` returns the Voice for a passage mark (None: the default
        voice); ``ensure_model(voice)`` makes sure the worker has a model for that voice kind."""
        super().__init__(parent)
        self.worker = worker
        self.player = player
        self.resolve_voice = resolve_voice
        self.ensure_model = ensure_model
        self.plan: ReadingPlan | None = None
        self.state = IDLE
        self.current_sentence = -1
        self._next_job_id = 0
        self._jobs: dict[int, int | None] = {}  # job id -> passage index (None: a voice preview)
        self._last_job = -1
        self._wrote_audio = False
        worker.chunk_ready.connect(self._on_chunk_ready)
        worker.job_finished.connect(self._on_job_finished)
        if player is not None:
            player.position_changed.connect(self._on_position_changed)
            player.finished.connect(self._on_player_finished)

    # ---- commands ----------------------------------------------------------------------------------
    def read(self, document: str, start: int = 0, end: int | None = None, from_position: int | None = None) -> None:
        """Read ``document[start:end]``, beginning at the sentence holding ``from_position``."""
        plan = ReadingPlan(document, start, end)
        if not len(plan):
            self.message.emit("There is nothing to read here.")
            return
        self.plan = plan
        self._start_at(plan.sentence_at(start if from_position is None else from_position))

    def jump_to(self, document: str, position: int) -> None:
        """Read from the sentence at ``position`` (a double-click), keeping the plan if it covers it."""
        plan = self.plan
        if plan is None or not plan.passages or not plan.passages[0].start <= position < plan.passages[-1].end:
            self.read(document, 0, None, from_position=position)
        else:
            self._start_at(plan.sentence_at(position))

    def pause(self) -> None:
        if self.state == PLAYING:
            self.player.pause()
            self._set_state(PAUSED)

    def resume(self) -> None:
        if self.state == PAUSED:
            self.player.resume()
            self._set_state(PLAYING)

    def toggle_pause(self) -> None:
        self.resume() if self.state == PAUSED else self.pause()

    def stop(self) -> None:
        self._halt()
        self.plan = None
        self.current_sentence = -1
        self.sentence_changed.emit(-1, -1)
        self._set_state(IDLE)

    def next_sentence(self) -> None:
        self._skip(+1)

    def previous_sentence(self) -> None:
        self._skip(-1)

    def preview(self, voice, text: str) -> None:
        """Speak ``text`` with ``voice`` outside any reading plan."""
        if not self._can_play():
            return
        self.stop()
        self.ensure_model(voice)
        self._queue(text, voice, 0, None)
        self._set_state(PLAYING)

    # ---- internals ---------------------------------------------------------------------------------
    def _can_play(self) -> bool:
        if self.player is None:
            self.message.emit("No audio output device is available; use File ▸ Export audio… instead.")
            return False
        return True

    def _skip(self, step: int) -> None:
        if self.plan is None or self.current_sentence < 0:
            return
        target = self.current_sentence + step
        if 0 <= target < len(self.plan):
            self._start_at(target)
        elif step > 0:
            self.stop()

    def _halt(self) -> None:
        self._jobs.clear()
        self._wrote_audio = False
        self.worker.cancel()
        if self.player is not None:
            self.player.stop()

    def _start_at(self, sentence_index: int) -> None:
        if not self._can_play():
            return
        self._halt()
        plan = self.plan
        first = plan.sentences[sentence_index]
        for passage_index in range(first.passage, len(plan.passages)):
            passage = plan.passages[passage_index]
            voice = self.resolve_voice(passage.voice)
            self.ensure_model(voice)
            segment = first.segment if passage_index == first.passage else 0
            self._queue(passage.text, voice, segment, passage_index)
        self.current_sentence = sentence_index
        self.sentence_changed.emit(first.start, first.end)
        if self.state == PAUSED:
            self.player.pause()
        else:
            self._set_state(PLAYING)

    def _queue(self, text: str, voice, first_segment: int, passage_index: int | None) -> None:
        job_id = self._next_job_id
        self._next_job_id += 1
        self._jobs[job_id] = passage_index
        self._last_job = job_id
        self.worker.request_speak(job_id, text, voice, first_segment)

    def _on_chunk_ready(self, job_id: int, chunk) -> None:
        if job_id not in self._jobs or self.player is None:
            return
        passage_index = self._jobs[job_id]
        sentence = -1 if passage_index is None else self.plan.global_index(passage_index, chunk.segment)
        self.player.write(chunk.samples, sentence)
        self._wrote_audio = True

    def _on_job_finished(self, job_id: int) -> None:
        if job_id not in self._jobs:
            return
        del self._jobs[job_id]
        if job_id == self._last_job:
            if self._wrote_audio:
                self.player.end_of_stream()
            else:  # nothing was spoken (an error was reported): do not wait for the player
                self.stop()

    def _on_position_changed(self, sentence: int) -> None:
        if self.plan is not None and 0 <= sentence < len(self.plan):
            self.current_sentence = sentence
            span = self.plan.sentences[sentence]
            self.sentence_changed.emit(span.start, span.end)

    def _on_player_finished(self) -> None:
        if not self._jobs:
            self.stop()

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.state_changed.emit(state)
