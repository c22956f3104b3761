"""The status bar's parts: model preparation with its Cancel, the provider of the image
shown, and the engine's log lines.

Light to import (tests/test_gui_wiring.py checks it): what it shows comes from
:mod:`bgremover.gui.results`; the job runners are types here, never imports.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QStatusBar, QToolButton, QWidget

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
        # Long news ends in "…" (whole in its tooltip) instead of running under the
        # status bar's other parts.
        self.label = ElidedLabel()
        self.label.setMaximumWidth(self.label.fontMetrics().averageCharWidth() * 60)
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
        #: When the task shown began, and how far it was then: for the time left.
        self._since: tuple[float, int] = (0.0, 0)
        #: The job told to stop (Cancel, or nothing waits for it): its last progress,
        #: still arriving, no longer shows.
        self._stopping: int | None = None

    def show_progress(self, job_id: int, p: Preparing) -> None:
        if job_id == self._stopping:
            return
        if (job_id, p.task) != (self.job_id, self.task):
            self._since = (time.monotonic(), p.done)
        self.job_id, self.task = job_id, p.task
        name = p.config.model
        left = self._time_left(p)
        if p.task == "download":
            size = f"{p.done / 1e6:.1f}" + (f" / {p.total / 1e6:.1f} MB" if p.total else " MB")
            self.label.setText(f"Downloading the model {name}… {size}{left}")
        else:
            step = f": {p.done} of {p.total} steps" if p.total else "…"
            self.label.setText(f"Making the int8 version of {name} (once){step}{left}")
        if p.total:
            scale = 1024 if p.task == "download" else 1  # QProgressBar counts in int
            self.bar.setRange(0, max(p.total // scale, 1))
            self.bar.setValue(p.done // scale)
        else:
            self.bar.setRange(0, 0)  # busy, size unknown
        self.cancel_button.setEnabled(True)
        self.show()

    def _time_left(self, p: Preparing) -> str:
        """The time left, such as ", about 1:10 left", from the progress so far."""
        start, done_then = self._since
        elapsed, done = time.monotonic() - start, p.done - done_then
        if not p.total or done <= 0 or elapsed < 2:
            return ""
        seconds = int(elapsed / done * (p.total - p.done))
        return f", about {seconds // 60}:{seconds % 60:02d} left"

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
    """The window's status bar ``bar``: the model preparation of ``jobs`` (with its
    Cancel, which cancels that job on ``engine``), the provider of the image shown, the
    preparations stopped because nothing waits for them, and the engine's log lines.

    Cancelling is not a failure: the job and the work waiting for it end, no dialog.
    While a model is prepared, its bar has the room: it and the provider's label never
    show together. Call :meth:`close` when the window goes (the log handler goes too).
    """

    def __init__(self, bar: QStatusBar, jobs: QueueJobs, engine: JobRunner) -> None:
        super().__init__(bar)
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
        self.provider_label = QLabel("")
        bar.addPermanentWidget(self.provider_label)
        jobs.preparing.connect(lambda *_: self.provider_label.hide())
        engine.ended.connect(
            lambda _end: self.provider_label.setVisible(self.preparation.isHidden())
        )
        # The engine's warnings and notes (a model obtained from a mirror, a fallback).
        self._log_handler = LogToStatusBar()
        self._log_handler.relay.message.connect(lambda text: bar.showMessage(text, 8000))
        logging.getLogger("bgremover").addHandler(self._log_handler)

    def close(self) -> None:
        logging.getLogger("bgremover").removeHandler(self._log_handler)
