"""The status bar's parts: model preparation with its Cancel, the provider of the image
shown, and the engine's log lines, and the one owner of what the bar's text says.

:class:`StatusText` decides what shows, by priority: a task with its progress (any
:class:`ProgressWithCancel` in the bar: preparing a model, saving many images) over a
message (``QStatusBar.showMessage``, from anywhere), over the persistent hint (edit
mode's keys), over the provider of the image shown ("This image: …"). One text shows at
a time, shortened at a word where it is too long (whole in its tooltip), so two never
run into each other.

Light to import (tests/test_gui_wiring.py checks it): what it shows comes from
:mod:`bgremover.gui.results`; the job runners are types here, never imports.
"""

from __future__ import annotations

import enum
import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QStatusBar, QToolButton, QWidget

from .results import Preparing
from .views import ElidedLabel

if TYPE_CHECKING:
    from .jobs import JobRunner
    from .queue_jobs import QueueJobs


class ProgressWithCancel(QWidget):
    """A line of text, a progress bar and a Cancel button, for the status bar; hidden
    until shown. Subclasses say what Cancel stops (its tooltip) and connect it."""

    def __init__(self, cancel_tip: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # Long news ends in "…" at a word (whole in its tooltip) where the bar is too
        # narrow; the status bar's text gives way to it while it shows (StatusText).
        self.label = ElidedLabel(at_word=True)
        self.label.setMaximumWidth(self.label.fontMetrics().averageCharWidth() * 100)
        self.bar = QProgressBar()
        self.bar.setMaximumWidth(180)
        self.bar.setTextVisible(False)
        self.cancel_button = QToolButton()
        self.cancel_button.setText("Cancel")
        self.cancel_button.setToolTip(cancel_tip)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel_button)
        self.hide()


def clock_text(seconds: float) -> str:
    """A duration as a clock shows it: "0:05", "12:40", "1:02:03"."""
    whole = max(round(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Pace:
    """The time left of a task counted in steps (or bytes), from the rate measured
    between its reports, so that the estimate follows the task's speed as it is now.

    The rate is smoothed: each interval's rate counts by the time it covers, the last
    ``span`` seconds counting most. The first interval (from the start to the first
    progress: imports, reading, setting up, often slower than the steps after it) is
    used only until another one is measured. ``clock`` is the time source (seconds).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, span: float = 20.0) -> None:
        self.clock, self.span = clock, span
        self.start(0)

    def start(self, done: int) -> None:
        """A task begins (or begins again) at ``done``."""
        self._began = self._last_t = self.clock()
        self._last_done = done
        #: Steps a second, smoothed; None before any progress.
        self.rate: float | None = None
        self._intervals = 0

    def update(self, done: int) -> None:
        """The task reached ``done``."""
        now = self.clock()
        if done < self._last_done:  # started over
            self.start(done)
            return
        dt, steps = now - self._last_t, done - self._last_done
        if steps <= 0 or dt <= 0:
            return  # no progress yet: the next interval covers the wait too
        rate = steps / dt
        self._intervals += 1
        if self.rate is None or self._intervals == 2:  # the first interval, then replaced
            self.rate = rate
        else:
            weight = 1.0 - math.exp(-dt / self.span)
            self.rate += weight * (rate - self.rate)
        self._last_t, self._last_done = now, done

    def seconds_left(self, done: int, total: int | None) -> float | None:
        """Seconds until ``total`` at the measured rate; None when not yet known (no
        total, no progress, or under two seconds of the task seen)."""
        if not total or not self.rate or self.clock() - self._began < 2:
            return None
        return max(total - done, 0) / self.rate


class PreparationBar(ProgressWithCancel):
    """ "Downloading u2netp… 1.2 / 4.6 MB [Cancel]" while a job prepares a model.

    Not a dialog: nothing modal, and nothing that emits a cancel when it is
    hidden. Cancel reports the job it belongs to, and only that job.
    """

    cancelRequested = Signal(int)  # the preparing job's id

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Stop preparing the model; nothing half-made is kept", parent)
        self.cancel_button.clicked.connect(self._cancel)
        #: The job whose preparation is shown, or None, and what it does.
        self.job_id: int | None = None
        self.task = ""
        #: The rate of the task shown, for its time left (its clock can be replaced).
        self.pace = Pace()
        #: The job told to stop (Cancel, or nothing waits for it): its last progress,
        #: still arriving, no longer shows.
        self._stopping: int | None = None

    def show_progress(self, job_id: int, p: Preparing) -> None:
        if job_id == self._stopping:
            return
        if (job_id, p.task) != (self.job_id, self.task):
            self.pace.start(p.done)
        else:
            self.pace.update(p.done)
        self.job_id, self.task = job_id, p.task
        # The model made ready: a combined model's member ("isnet-imgly"), not "best".
        name = p.model or p.config.model
        left = self._time_left(p)
        if p.task == "download":
            size = f"{p.done / 1e6:.1f}" + (f" / {p.total / 1e6:.1f} MB" if p.total else " MB")
            self.label.setText(f"Downloading the model {name}… {size}", left)
        else:
            step = f": {p.done} of {p.total} steps" if p.total else "…"
            self.label.setText(f"Making the int8 version of {name} (once){step}", left)
        if p.total:
            scale = 1024 if p.task == "download" else 1  # QProgressBar counts in int
            self.bar.setRange(0, max(p.total // scale, 1))
            self.bar.setValue(p.done // scale)
        else:
            self.bar.setRange(0, 0)  # busy, size unknown
        self.cancel_button.setEnabled(True)
        self.show()

    def _time_left(self, p: Preparing) -> str:
        """The time left, such as ", about 1:10 left", at the rate measured so far."""
        seconds = self.pace.seconds_left(p.done, p.total)
        return "" if seconds is None else f", about {clock_text(seconds)} left"

    def finish(self, job_id: int) -> None:
        """``job_id`` ended: stop showing its preparation."""
        if job_id == self.job_id:
            self.job_id = None
            self.hide()

    def stopping(self, job_ids: list[int]) -> None:
        """The preparation shown is among ``job_ids``, being stopped: say so until it ends."""
        if self.job_id is not None and self.job_id in job_ids:
            self._stopping = self.job_id
            self.cancel_button.setEnabled(False)
            self.label.setText("Stopping…")  # the status line beside it says why

    def _cancel(self) -> None:
        if self.job_id is not None:
            self._stopping = self.job_id
            self.cancel_button.setEnabled(False)
            self.label.setText("Cancelling…")
            self.cancelRequested.emit(self.job_id)


class Priority(enum.IntEnum):
    """What the status bar's text may show, the highest first to show."""

    PROVIDER = 0  # "This image: u2netp int8 on CPU"
    HINT = 1  # a mode's keys, for as long as the mode lasts
    MESSAGE = 2  # QStatusBar.showMessage, until its time is up or it is cleared
    TASK = 3  # a ProgressWithCancel shown: its own line, bar and Cancel


class _ProviderLabel(ElidedLabel):
    """The provider's text: setting it tells the owner, which decides whether it shows."""

    textSet = Signal()

    def setText(self, text: str, tail: str = "") -> None:
        super().setText(text, tail)
        self.textSet.emit()


class StatusText(QWidget):
    """The one owner of the status bar ``bar``'s text (see the module's docstring).

    It is the bar's first permanent widget and stretches over its room, so Qt draws none
    of its own message (it would draw it left of the first permanent widget, cut at its
    edge): ``bar.showMessage`` still works from anywhere, and its text shows here, by
    priority. Every :class:`ProgressWithCancel` added to the bar later is a task: while
    one is shown, this text is empty and the task has the room.
    """

    def __init__(self, bar: QStatusBar) -> None:
        super().__init__(bar)
        self._bar = bar
        self.message = ElidedLabel(at_word=True)
        self.provider_label = _ProviderLabel(at_word=True)
        self.provider_label.textSet.connect(self.refresh)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.message, 1)
        layout.addWidget(self.provider_label, 1)
        self._hint = ""
        self._tasks: list[QWidget] = []
        self.shown: Priority | None = None
        bar.addPermanentWidget(self, 1)
        for task in bar.findChildren(ProgressWithCancel):
            self._watch(task)
        bar.installEventFilter(self)
        bar.messageChanged.connect(self.refresh)
        self.refresh()

    def set_hint(self, text: str) -> None:
        """The persistent hint (a mode's keys), shown while nothing above it is; "" ends it."""
        self._hint = text
        self.refresh()

    def texts(self) -> dict[Priority, str]:
        """What each priority would show now ("" for the task: it shows itself)."""
        tasks = any(not t.isHidden() for t in self._tasks)
        found = {
            Priority.TASK: "" if tasks else None,
            Priority.MESSAGE: self._bar.currentMessage() or None,
            Priority.HINT: self._hint or None,
            Priority.PROVIDER: self.provider_label.text() or None,
        }
        return {k: v for k, v in found.items() if v is not None}

    def refresh(self) -> None:
        """Show the highest priority's text, and nothing else."""
        texts = self.texts()
        self.shown = max(texts, default=None)
        provider = self.shown is Priority.PROVIDER
        if not provider:
            self.message.setText(texts.get(self.shown, "") if self.shown is not None else "")
        self.message.setVisible(not provider)
        self.provider_label.setVisible(provider)

    def _watch(self, task: QWidget) -> None:
        if task not in self._tasks:
            self._tasks.append(task)
            task.installEventFilter(self)
            task.destroyed.connect(lambda: self._forget(task))

    def _forget(self, task: QWidget) -> None:
        if task in self._tasks:
            self._tasks.remove(task)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if watched is self._bar and kind == QEvent.Type.ChildAdded:
            child = event.child()  # type: ignore[attr-defined]
            if isinstance(child, ProgressWithCancel):
                self._watch(child)
        elif kind in (QEvent.Type.Show, QEvent.Type.Hide) and watched in self._tasks:
            self.refresh()
        return False


class _Relay(QObject):
    message = Signal(str)


class LogToStatusBar(logging.Handler):
    """A logging handler that shows the engine's messages in the status bar.

    Records arrive on any thread; the relay's signal carries them to the GUI thread.
    Connect ``relay.message`` to what shows them.
    """

    def __init__(self, level: int = logging.INFO) -> None:
        super().__init__(level)
        self.relay = _Relay()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage().strip().splitlines()[0]
        except Exception:  # a malformed record must never break the engine's work
            return
        self.relay.message.emit(text)


class StatusLine(QObject):
    """The window's status bar ``bar``: its text's owner (:class:`StatusText`), the
    model preparation of ``jobs`` (with its Cancel, which cancels that job on
    ``engine``), the provider of the image shown, the preparations stopped because
    nothing waits for them, and the engine's log lines.

    Cancelling is not a failure: the job and the work waiting for it end, no dialog.
    While a model is prepared, its bar has the room: it and the provider's label never
    show together. Call :meth:`close` when the window goes (the log handler goes too).
    """

    def __init__(self, bar: QStatusBar, jobs: QueueJobs, engine: JobRunner) -> None:
        super().__init__(bar)
        # First, so that every other part of the bar is right of it (see StatusText).
        self.text = StatusText(bar)
        self.provider_label = self.text.provider_label
        self.preparation = PreparationBar()
        self.preparation.cancelRequested.connect(engine.cancel)
        jobs.preparing.connect(self.preparation.show_progress)
        # Whichever way a job ends, its model preparation is no longer shown.
        engine.ended.connect(lambda end: self.preparation.finish(end.job_id))
        # A preparation nothing waits for any more is stopped: the bar and the status
        # line say what and why.
        jobs.released.connect(lambda _text, ids: self.preparation.stopping(ids))
        jobs.released.connect(lambda text, _ids: bar.showMessage(text, 15000))
        bar.addPermanentWidget(self.preparation)
        # The text follows the bar even before the window is shown (no Show events yet).
        jobs.preparing.connect(lambda *_: self.text.refresh())
        engine.ended.connect(lambda _end: self.text.refresh())
        # The engine's warnings and notes (a model obtained from a mirror, a fallback).
        self._log_handler = LogToStatusBar()
        self._log_handler.relay.message.connect(lambda text: bar.showMessage(text, 8000))
        logging.getLogger("bgremover").addHandler(self._log_handler)

    def set_hint(self, text: str) -> None:
        """The persistent hint (edit mode's keys); "" when the mode ends."""
        self.text.set_hint(text)

    def hint_while(self, mode: QAction, hint: Callable[[], str]) -> None:
        """While the checkable ``mode`` is checked, ``hint()`` is the persistent hint."""
        mode.toggled.connect(lambda on: self.set_hint(hint() if on else ""))

    def close(self) -> None:
        logging.getLogger("bgremover").removeHandler(self._log_handler)
