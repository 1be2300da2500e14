"""The Export queue panel: the jobs with their format, the file (or folder) each writes, state, progress and time
left, the whole queue's progress, and buttons to pause, resume, cancel, move, remove a job and open its folder.
A view over ``qtapp.export_queue.ExportQueueController``; never modal, so reading and editing go on beside it."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.production.export_jobs import CANCELLED, DONE, FAILED, PAUSED, QUEUED, RUNNING, Job
from engine.production.time_left import format_time_left

COLUMNS = ("Export", "Format", "File", "State", "Progress")
TITLE, FORMAT, FILE, STATE, PROGRESS = range(len(COLUMNS))
STATE_WORDS = {QUEUED: "Queued", RUNNING: "Exporting", PAUSED: "Paused", DONE: "Done", FAILED: "Failed",
               CANCELLED: "Cancelled"}


def written_to(job: Job) -> str:
    """The file a job writes, or its folder (with a slash) when it writes one file per chapter."""
    path = Path(job.output)
    return f"{path.name}/" if job.per_chapter else path.name


def job_tooltip(job: Job) -> str:
    """The whole of a job's row: its title, format and full output path."""
    where = f"one {job.format.upper()} file per chapter in {job.output}" if job.per_chapter else job.output
    return f"{job.title}\n{job.format.upper()} · {where}" + (f"\n{job.levels}" if job.levels else "")


def describe_progress(job: Job, time_left: float | None) -> str:
    """One line for a job's progress column."""
    if job.state == FAILED:
        return job.error or "failed"
    if job.state == DONE:  # with the loudness its files reached
        done = f"{job.audio_s / 60:.1f} min of audio" if job.audio_s else "finished"
        return f"{done} · {job.levels}" if job.levels else done
    if not job.total_segments:
        return "waiting" if job.state == QUEUED else ("starting…" if job.state == RUNNING else "")
    percent = 100 * job.done_segments // job.total_segments
    line = f"{percent} % · sentence {job.done_segments} of {job.total_segments}"
    if job.state == RUNNING:
        line += f" · {format_time_left(time_left)}"
    return line


class ExportPanel(QWidget):
    def __init__(self, controller, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        self.setAccessibleName("Export queue")
        self.list = QTreeWidget()
        self.list.setHeaderLabels(list(COLUMNS))
        self.list.setRootIsDecorated(False)
        header = self.list.header()  # every column as wide as its text, so no title or file name is cut short
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.list.setAccessibleName("Export jobs")
        self.list.setAccessibleDescription("The exports in the order they run; the buttons below act on the "
                                           "selected one.")
        self.list.currentItemChanged.connect(lambda *_: self._update_buttons())
        self.overall_bar = QProgressBar(textVisible=True)
        self.overall_bar.setAccessibleName("Progress of the whole export queue")
        self.overall_label = QLabel("No exports queued.")
        self.overall_label.setAccessibleName("Time left for the whole export queue")
        self.pause_button = self._button("&Pause", "Pause the selected export after its current sentence",
                                         self._pause_or_resume)
        self.cancel_button = self._button("&Cancel", "Cancel the selected export and remove its files",
                                          lambda: self._act(controller.cancel))
        self.up_button = self._button("Move &up", "Export the selected job earlier",
                                      lambda: self._act(lambda i: controller.move(i, -1)))
        self.down_button = self._button("Move &down", "Export the selected job later",
                                        lambda: self._act(lambda i: controller.move(i, +1)))
        self.remove_button = self._button("&Remove", "Remove the selected job from the list (finished files stay)",
                                          lambda: self._act(controller.remove))
        self.folder_button = self._button("Open &folder", "Open the folder the selected export writes to",
                                          lambda: self._act(controller.open_folder))
        buttons = QHBoxLayout()
        for button in (self.pause_button, self.cancel_button, self.up_button, self.down_button, self.remove_button,
                       self.folder_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.overall_bar)
        layout.addWidget(self.overall_label)
        layout.addLayout(buttons)
        for keys, act in ((QKeySequence.StandardKey.Delete, lambda: self._act(controller.remove)),
                          ("Ctrl+Up", lambda: self._act(lambda i: controller.move(i, -1))),
                          ("Ctrl+Down", lambda: self._act(lambda i: controller.move(i, +1)))):
            QShortcut(QKeySequence(keys), self.list, act, context=Qt.ShortcutContext.WidgetShortcut)
        controller.changed.connect(self.refresh)
        self.refresh()

    def _button(self, text: str, tip: str, slot) -> QPushButton:
        button = QPushButton(text)
        button.setToolTip(tip)
        button.setAccessibleName(text.replace("&", ""))
        button.setAccessibleDescription(tip)
        button.clicked.connect(slot)
        return button

    # ---- acting on the selected job ---------------------------------------------------------------------
    def selected_id(self) -> str | None:
        item = self.list.currentItem()
        return item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None

    def select(self, job_id: str) -> None:
        for row in range(self.list.topLevelItemCount()):
            item = self.list.topLevelItem(row)
            if item.data(0, Qt.ItemDataRole.UserRole) == job_id:
                self.list.setCurrentItem(item)
                return

    def _act(self, action) -> None:
        job_id = self.selected_id()
        if job_id is not None:
            action(job_id)
            self.select(job_id)

    def _pause_or_resume(self) -> None:
        job = self.controller.queue.get(self.selected_id() or "")
        if job is None:
            return
        if job.state in (QUEUED, RUNNING):
            self.controller.pause(job.id)
        else:
            self.controller.resume(job.id)
        self.select(job.id)

    # ---- showing the queue ------------------------------------------------------------------------------
    def refresh(self) -> None:
        selected = self.selected_id()
        jobs = self.controller.jobs
        if [self.list.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole)
                for i in range(self.list.topLevelItemCount())] != [j.id for j in jobs]:
            self.list.clear()
            for job in jobs:
                item = QTreeWidgetItem()
                item.setData(0, Qt.ItemDataRole.UserRole, job.id)
                self.list.addTopLevelItem(item)
        for row, job in enumerate(jobs):
            item = self.list.topLevelItem(row)
            item.setText(TITLE, job.title)
            item.setText(FORMAT, job.format.upper())
            item.setText(FILE, written_to(job))
            item.setText(STATE, STATE_WORDS[job.state])
            item.setText(PROGRESS, describe_progress(job, self.controller.time_left(job.id)))
            tip = job_tooltip(job)
            for column in range(len(COLUMNS)):
                item.setToolTip(column, tip)
        if selected is not None:
            self.select(selected)
        elif jobs and self.list.currentItem() is None:
            self.list.setCurrentItem(self.list.topLevelItem(0))
        fraction, eta = self.controller.overall()
        active = any(j.state in (QUEUED, RUNNING) for j in jobs)
        self.overall_bar.setValue(int(round(100 * fraction)) if active else (100 if jobs else 0))
        if not jobs:
            self.overall_label.setText("No exports queued.")
        elif active:
            waiting = sum(j.state in (QUEUED, RUNNING) for j in jobs)
            self.overall_label.setText(f"{waiting} export{'s' if waiting > 1 else ''} to go · "
                                       f"{format_time_left(eta)}")
        else:
            self.overall_label.setText("Nothing is exporting.")
        self._update_buttons()

    def _update_buttons(self) -> None:
        job = self.controller.queue.get(self.selected_id() or "")
        state = job.state if job is not None else None
        resumable = state in (PAUSED, FAILED, CANCELLED)
        self.pause_button.setText("Res&ume" if resumable else "&Pause")
        self.pause_button.setAccessibleName("Resume" if resumable else "Pause")
        self.pause_button.setEnabled(state in (QUEUED, RUNNING) or resumable)
        self.cancel_button.setEnabled(state in (QUEUED, RUNNING, PAUSED, FAILED))
        index = next((i for i, j in enumerate(self.controller.jobs) if job is not None and j.id == job.id), -1)
        self.up_button.setEnabled(index > 0)
        self.down_button.setEnabled(0 <= index < len(self.controller.jobs) - 1)
        self.remove_button.setEnabled(job is not None and state != RUNNING)
        self.folder_button.setEnabled(job is not None)
