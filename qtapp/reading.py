"""Read-aloud control: turns Play / Pause / Stop / next / previous / jump into worker jobs and
player writes, and reports which sentence is audible.

One reading session follows a ``ReadingPlan`` (``qtapp.reading_plan``), planned from the cursor's line
as far as reading gets. Starting at sentence k queues worker jobs of at most ``JOB_SENTENCES``
consecutive sentences of one voice each, given to the engine as the plan cut them, and keeps
``JOBS_AHEAD`` of them queued so the worker never waits for the next. Chunks go to the player
tagged with the plan's sentence number (the job's first sentence plus the chunk's segment), and
the player's ``position_changed`` tells which sentence to highlight. Jumping cancels the worker,
drops the player's queue and queues again; chunks of cancelled jobs are recognised by job id and
dropped. A job that fails ends the reading once what was already spoken has played.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from engine.core.chunks import FRAME_RATE
from qtapp.player import preroll_for
from qtapp.reading_plan import JUMP_REACH, ReadingPlan, TextSource, voice_at

IDLE, PLAYING, PAUSED = "idle", "playing", "paused"
JOB_SENTENCES = 16  # sentences per engine call: a job's planning stays well under a millisecond
JOBS_AHEAD = 2  # jobs queued at once, so the next is waiting when one ends
PREVIEW = -1  # the first-sentence mark of a voice preview's job, which belongs to no plan


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
        self.segment_chars: int | None = None  # the plans' segment target (engine.core.text.segments); None: default
        self.reading_policy = None  # the plans' engine.core.text.reading_policy.ReadingPolicy; None: the default
        # () -> the kind of the block at an offset (engine.documents.Document.kind_at), or None where the text is
        # not the document as imported (an edit moved its blocks): the policy then guesses by lines
        self.block_kinds = lambda: None
        self.cast = None  # the plans' engine.production.casting.Cast (quotations in their voices); None: none
        self.state = IDLE
        self.current_sentence = -1
        self._next_job_id = 0
        self._jobs: dict[int, int] = {}  # job id -> plan index of its first sentence (PREVIEW: a preview)
        self._next_sentence = 0  # first plan sentence not yet given to a job
        self._voices: dict[str | None, object] = {}  # voice of each mark name, resolved once per plan
        self._failed = False  # a job of this reading failed: queue no more
        self._wrote_audio = False
        worker.chunk_ready.connect(self._on_chunk_ready)
        worker.job_failed.connect(self._on_job_failed)
        worker.job_finished.connect(self._on_job_finished)
        worker.stats.connect(self._on_stats)
        if player is not None:
            player.position_changed.connect(self._on_position_changed)
            player.finished.connect(self._on_player_finished)

    # ---- commands ----------------------------------------------------------------------------------
    def read(self, source: TextSource, start: int = 0, end: int | None = None,
             from_position: int | None = None) -> None:
        """Read ``source``'s text [start, end), beginning at the sentence holding ``from_position``."""
        plan = ReadingPlan(source.pieces(start, end), voice_at(source, start), self.segment_chars,
                           self.reading_policy, self.block_kinds(), self.cast)
        index = plan.index_at(start if from_position is None else from_position)
        if index is None:
            self.message.emit("There is nothing to read here.")
            return
        self.plan = plan
        self._voices = {}
        self._start_at(index)

    def jump_to(self, source: TextSource, position: int) -> None:
        """Read from the sentence at ``position`` (a double-click): in the current plan when it reaches
        there, else in a new plan from ``position``'s line."""
        plan = self.plan
        index = None
        if plan is not None and plan.sentences and plan.sentences[0].start <= position:
            index = plan.index_at(position, reach=JUMP_REACH)
            if index is not None and plan.sentences[index].end <= position:
                index = None  # past the plan's last sentence (a selection's end): read from there instead
        if index is None:
            self.read(source, source.line_start(position), None, from_position=position)
        else:
            self._start_at(index)

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

    def restart_sentence(self) -> None:
        """Read the audible sentence again from its start, with what the worker does now (a new speed):
        the audio queued for the player was made the old way."""
        if self.state != IDLE and self.plan is not None and self.current_sentence >= 0:
            self._start_at(self.current_sentence)

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
        self._request(text, voice, PREVIEW)
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
        if target >= 0 and self.plan.get(target) is not None:
            self._start_at(target)
        elif step > 0:
            self.stop()

    def _halt(self) -> None:
        self._jobs.clear()
        self._wrote_audio = False
        self._failed = False
        self.worker.cancel()
        if self.player is not None:
            self.player.stop()

    def _start_at(self, index: int) -> None:
        if not self._can_play():
            return
        self._halt()
        self._next_sentence = index
        for _ in range(JOBS_AHEAD):
            self._queue_next()
        self.current_sentence = index
        first = self.plan.sentences[index]
        self.sentence_changed.emit(first.start, first.end)
        if self.state == PAUSED:
            self.player.pause()
        else:
            self._set_state(PLAYING)

    def _queue_next(self) -> bool:
        """Give the next sentences of the plan to the worker; False when there are none left."""
        if self._failed or self.plan is None:
            return False
        run = self.plan.run(self._next_sentence, JOB_SENTENCES)
        if not run:
            return False
        name = run[0].voice
        if name not in self._voices:
            self._voices[name] = self.resolve_voice(name)
        voice = self._voices[name]
        self.ensure_model(voice)
        self._request([s.segment for s in run], voice, self._next_sentence)
        self._next_sentence += len(run)
        return True

    def _request(self, text, voice, first_sentence: int) -> None:
        job_id = self._next_job_id
        self._next_job_id += 1
        self._jobs[job_id] = first_sentence
        self.worker.request_speak(job_id, text, voice)

    def _on_stats(self, rtf: float, first_audio_s: float) -> None:
        """Speech made barely faster than it plays waits for a chunk's worth before it starts (``preroll_for``),
        measured on the reading so far, so the player does not run dry after its first chunk."""
        if self.player is not None:
            self.player.preroll_s = preroll_for(rtf, self.worker.chunk_frames / FRAME_RATE)

    def _on_chunk_ready(self, job_id: int, chunk) -> None:
        first = self._jobs.get(job_id)
        if first is None or self.player is None:
            return
        self.player.write(chunk.samples, -1 if first == PREVIEW else first + chunk.segment)
        self._wrote_audio = True

    def _on_job_failed(self, job_id: int) -> None:
        if job_id in self._jobs:
            self._failed = True

    def _on_job_finished(self, job_id: int) -> None:
        if self._jobs.pop(job_id, None) is None:
            return
        if self._queue_next() or self._jobs:
            return
        if self._wrote_audio:
            self.player.end_of_stream()
        else:  # nothing was spoken (an error was reported): do not wait for the player
            self.stop()

    def _on_position_changed(self, sentence: int) -> None:
        if self.plan is not None and 0 <= sentence < len(self.plan.sentences):
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
