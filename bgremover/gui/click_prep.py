"""The click model in touch-up: the photo shown is encoded once, as a job, while the user
touches it up.

When edit mode is on and the image shown has a result, :meth:`ClickPrep.follow` starts a
job on the engine thread that obtains the click model (the first time: a download
through the model store, its progress in the status bar) and encodes the photo; a
switch to another image, or leaving edit mode, cancels it. The embedding is kept with
the image's edits (:attr:`EditState.clicks`), so the photo is encoded once however
often the user comes back to it. Until it is ready, and wherever the click model cannot
be had (offline, no npm), Add / Remove clicks are the classical ones by colour: the
status bar says so once. The GUI thread never waits for any of it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6.QtCore import QObject

from ..touchup.tools import Kind, Operation
from .entry import QueueEntry
from .host import Host
from .jobs import Job, JobEnd, JobState
from .results import ClickReady

__all__ = ["ClickPrep"]

#: What the status bar says while the photo is encoded (when it has nothing else to say).
PREPARING = "Preparing this photo for the click model…"


class ClickPrep(QObject):
    """Binds the click model to the image being touched up."""

    def __init__(self, host: Host) -> None:
        super().__init__(host.window())
        self.host = host
        #: The image whose embedding is being made, and the job making it.
        self._for: QueueEntry | None = None
        self._job: Job[ClickReady] | None = None
        #: Why the click model cannot be had ("" while it can): said once.
        self.unavailable = ""

    def follow(self, entry: QueueEntry | None) -> None:
        """The image being touched up is ``entry`` (None: none): its embedding is made
        if it has none, and the job for another image is cancelled."""
        if self._job is not None and self._for is not entry:
            self.host.jobs.engine.cancel(self._job.id)
            self._job = self._for = None
        if entry is None or self.unavailable or entry.processed is None:
            return
        if entry.editing.clicks is not None or self._job is not None:
            return
        rgb = entry.processed.result.image.rgb
        worker = self.host.jobs.worker
        self._for = entry
        self._job = self.host.jobs.engine.submit(
            "clicks",
            lambda ctx: worker.bind_clicks(ctx, rgb),
            tag=("clicks", entry.item_id),
            on_end=self._on_end,
            on_progress=self._on_progress,
        )

    def operation(self, entry: QueueEntry, op: Operation) -> Operation:
        """``op`` as the image's clicks and boxes are made now: with the click model once
        it is bound to the photo, without it until then."""
        clicks = entry.editing.clicks
        if op.spec.kind in (Kind.CLICK, Kind.BOX) and clicks is not None and not op.model:
            return replace(op, model=clicks.model)
        return op

    def _on_progress(self, job_id: int, payload: Any) -> None:
        if self._job is None or job_id != self._job.id:
            return
        task, done, total = payload
        if task == "download":
            size = f" {done / 1e6:.0f} of {total / 1e6:.0f} MB" if total else ""
            self._say(f"Downloading the click model…{size} (clicks work by colour meanwhile)")
        else:
            self._say(PREPARING, 10000)

    def _say(self, text: str, ms: int = 0) -> None:
        """Show ``text`` in the status bar, never over what an edit or another action said
        (only over nothing, or over this job's own words)."""
        bar = self.host.statusBar()
        if not bar.currentMessage() or "click model" in bar.currentMessage():
            bar.showMessage(text, ms)

    def _on_end(self, end: JobEnd[ClickReady]) -> None:
        if self._job is None or end.job_id != self._job.id:
            return
        entry, self._job, self._for = self._for, None, None
        bar = self.host.statusBar()
        if end.state is JobState.DONE and entry is not None:
            ready = end.result
            entry.editing.clicks = ready
            self._say(
                f"Add / Remove clicks select the object under them (click model {ready.model}).",
                6000,
            )
        elif end.state is JobState.FAILED:
            self.unavailable = end.message or "the click model could not be loaded"
            bar.showMessage(
                f"The click model is not available ({self.unavailable.splitlines()[0]}). "
                "Add / Remove clicks work by colour, as before.",
                15000,
            )
