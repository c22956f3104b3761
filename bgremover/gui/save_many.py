"""Save Selected and Save All: many images of the queue into one folder, as one job.

The folder is asked for once. The names are planned as a batch plans them
(:func:`~bgremover.engine.plan.plan_names`: ``NAME.png`` made legal on every file system,
no two alike, never a photo's own name, never a file already in the folder). Each
image is then made from its photo with the current settings and the user's edits,
and written atomically with the record of its photo (what a batch over the same
folder recognises), one after another on the engine thread: the job reports each
file, Cancel stops it between files, and memory holds one image at a time however
many are saved. Images still queued are made here too; an image that could not be
processed is reported with its reason, as is every file that could not be written.

:class:`SaveMany` is the controller the window wires: the question for the folder,
the job, the progress and Cancel in the status bar, the images marked saved, and the
report at the end.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QWidget,
)

from ..engine.pipeline import EngineConfig, Remover
from ..engine.plan import plan_names
from ..errors import BgRemoverError, DiskFullError, ImageWriteError
from ..export.compose import ComposeOptions
from ..export.output import SourceRecord, write_output
from ..files.atomic import Claim
from ..files.imaging import LoadedImage
from ..touchup.edit import Edits
from .dialogs import show_error
from .entry import QueueEntry, Status
from .host import Host
from .jobs import Job, JobContext, JobEnd, JobState
from .status import ProgressWithCancel
from .wording import app_message
from .worker import Worker

log = logging.getLogger(__name__)

#: How many failures the report names in its text; all of them are behind Details.
REPORT_LINES = 8


@dataclass(frozen=True)
class SaveItem:
    """One image to save: its queue entry's id and name, its photo, where it goes, and
    the user's edits (None: none) replayed on its mask."""

    item_id: int
    name: str
    source: Path | LoadedImage
    output: Path
    edits: Edits | None = None


@dataclass(frozen=True)
class SaveRequest:
    """What one Save Selected / Save All writes, and with which settings."""

    items: tuple[SaveItem, ...]
    folder: Path
    config: EngineConfig
    options: ComposeOptions
    fmt: str


@dataclass(frozen=True)
class SaveEvent:
    """One image saved, or not (with the reason): light enough to cross threads."""

    kind: str  # "saved" | "failed"
    index: int
    total: int
    item: SaveItem
    reason: str = ""
    bytes: int = 0


def write_item(remover: Remover, item: SaveItem, request: SaveRequest) -> int:
    """Make ``item``'s output from its photo and write it atomically; its bytes.

    The output's name was free when planned; a file that appeared there since is kept
    and this image is not written (an :class:`ImageWriteError` says so).
    """
    result = remover.remove(item.source, edits=item.edits)
    record = None
    if isinstance(item.source, Path):
        # With the settings too: a batch with these settings takes it for done.
        made_with = remover.output_settings(request.options, request.fmt, item.edits)
        with contextlib.suppress(OSError):  # gone since it was read: saved without it
            record = SourceRecord.of(item.source, made_with)
    claim = Claim.try_acquire(item.output)
    if claim is None:
        raise ImageWriteError(
            f"{item.output.name}: another bgremover run is writing this file; nothing was "
            "written. Save this image again: it gets a free name."
        )
    try:
        if item.output.exists():
            raise ImageWriteError(
                f"{item.output.name} appeared in {request.folder} while saving; it was kept "
                "and this cutout was not written. Save this image again: it gets a free name."
            )
        return write_output(
            result.image.rgb,
            result.alpha,
            request.options,
            item.output,
            request.fmt,
            record,
            claim,
            result.image.metadata,
        )
    finally:
        claim.release()


def save_images(
    ctx: JobContext, worker: Worker, request: SaveRequest
) -> Generator[SaveEvent, None, str]:
    """The job body: each image of ``request`` made and written, one event each.

    A model that cannot be obtained or loaded fails the job before any file. A file
    that cannot be made or written is reported and the others go on; a full disk
    stops the job (its reason is the job's result). Cancelling stops between files.
    """
    remover = worker.remover(ctx, request.config)
    remover.load()
    total = len(request.items)
    for index, item in enumerate(request.items, 1):
        ctx.token.check()
        try:
            written = write_item(remover, item, request)
        except DiskFullError as exc:
            yield SaveEvent("failed", index, total, item, exc.message)
            return exc.message
        except BgRemoverError as exc:
            reason = exc.message
        except Exception as exc:  # unforeseen: said for this image; the others still saved
            log.error("Unexpected error saving %s", item.name, exc_info=exc)
            reason = f"unexpected error ({type(exc).__name__}: {exc}); please report it"
        else:
            yield SaveEvent("saved", index, total, item, bytes=written)
            continue
        yield SaveEvent("failed", index, total, item, reason)
    return ""


class SaveManyBar(ProgressWithCancel):
    """ "Saving 3 of 12 to out… [Cancel]" in the status bar while a save of many runs."""

    cancelRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(
            "Stop saving after the image being written; the files written stay", parent
        )
        self.cancel_button.clicked.connect(self._cancel)
        #: Cancel was pressed: the bar says so until the save ends.
        self.cancelling = False

    def start(self, total: int, folder: Path) -> None:
        """A new save of ``total`` images into ``folder`` begins."""
        self.cancelling = False
        self.cancel_button.setEnabled(True)
        self.show_progress(0, total, folder)
        self.show()

    def show_progress(self, done: int, total: int, folder: Path) -> None:
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(done)
        if not self.cancelling:
            self.label.setText(f"Saving {min(done + 1, total)} of {total} to {folder.name}…")

    def _cancel(self) -> None:
        self.cancelling = True
        self.cancel_button.setEnabled(False)
        self.label.setText("Stopping after the image being written…")
        self.cancelRequested.emit()


@dataclass
class _Tally:
    """What the running save has done so far, from its events."""

    request: SaveRequest
    #: (name, reason) of each image refused before the job (it could not be processed).
    refused: list[tuple[str, str]]
    saved: int = 0
    #: (name, reason) of each image the job could not save.
    failed: list[tuple[str, str]] = field(default_factory=list)


class SaveMany(QObject):
    """Save Selected / Save All for the window: one such save at a time."""

    #: The running state changed, or an image was marked saved: enabled states and the
    #: window's title follow.
    changed = Signal()

    def __init__(self, host: Host) -> None:
        super().__init__(host.window())
        self.host = host
        self.bar = SaveManyBar()
        self.bar.cancelRequested.connect(self.cancel)
        host.statusBar().addPermanentWidget(self.bar)
        #: The job saving, and what it did so far.
        self.job_id: int | None = None
        self._tally: _Tally | None = None

    @property
    def running(self) -> bool:
        return self.job_id is not None

    def _status(self, text: str, ms: int = 8000) -> None:
        self.host.statusBar().showMessage(text, ms)

    def choose_folder_and_save(self, entries: Sequence[QueueEntry]) -> Job[str] | None:
        """Ask for a folder once, then save ``entries`` there (see :meth:`save_to`)."""
        if not entries:
            self._status("Nothing to save: select images in the queue first.", 6000)
            return None
        settings = self.host.settings
        start = settings.last_output_folder or settings.last_folder or str(Path.home())
        count = len(entries)
        folder = QFileDialog.getExistingDirectory(
            self.host.window(), f"Save {count} cutout{'s' if count != 1 else ''} to a folder", start
        )
        return self.save_to(entries, Path(folder)) if folder else None

    def save_to(self, entries: Sequence[QueueEntry], folder: Path) -> Job[str] | None:
        """Save ``entries``' outputs with the current settings into ``folder`` as one job
        on the engine thread; None, with the reason said, when nothing is started."""
        if self.running:
            self._status("A save of many images is running: wait for it, or Cancel it.")
            return None
        settings = self.host.settings
        problem = settings.export_problem()
        if problem is not None:
            words = f"{problem.message} {problem.fix}".strip()
            show_error(self.host.window(), "Not saved", f"Nothing was saved. {words}")
            return None
        refused = [
            (e.name, f"it could not be processed ({e.error})")
            for e in entries
            if e.status is Status.FAILED
        ]
        chosen = [e for e in entries if e.status is not Status.FAILED]
        if not chosen:
            self._report(0, len(entries), folder, refused)
            return None
        sources = [(e.source if isinstance(e.source, Path) else None, e.name) for e in chosen]
        try:
            outputs = plan_names(sources, folder, settings.output_format)
        except BgRemoverError as exc:
            show_error(self.host.window(), "Not saved", f"Nothing was saved. {app_message(exc)}")
            return None
        items = tuple(
            SaveItem(e.item_id, e.name, e.source, out, e.edits or None)
            for e, out in zip(chosen, outputs, strict=True)
        )
        config = settings.engine()
        request = SaveRequest(items, folder, config, settings.compose(), settings.output_format)
        self._tally = _Tally(request, refused)
        job = self.host.engine.submit(
            "save-many",
            lambda ctx: save_images(ctx, self.host.worker, request),
            tag=("save-many", None, config),
            on_end=self._on_end,
            on_progress=self._on_progress,
            after=self.host.jobs.prepare(config),
        )
        self.job_id = job.id
        self.host.apply_settings(last_output_folder=str(folder))
        self.bar.start(len(items), folder)
        self.changed.emit()
        return job

    def cancel(self) -> None:
        """Stop the save after the image being written (the files written stay)."""
        if self.job_id is not None:
            self.host.engine.cancel(self.job_id)

    def quit_words(self) -> str:
        """What quitting now would stop, in words; "" when no save of many runs."""
        tally = self._tally
        if self.job_id is None or tally is None:
            return ""
        total = len(tally.request.items)
        return (
            f"Saving to {tally.request.folder} is running ({tally.saved} of {total} written): "
            "quitting stops it after the image being written."
        )

    def _on_progress(self, job_id: int, payload: object) -> None:
        tally = self._tally
        if not isinstance(payload, SaveEvent) or tally is None or job_id != self.job_id:
            return
        request = tally.request
        if payload.kind == "saved":
            tally.saved += 1
            entry = self.host.queue.get(payload.item.item_id)
            if entry is not None:
                # Saved as the settings and the edits were when the save began: edits
                # changed since make it unsaved again (QueueEntry.unsaved), settings
                # changed since mark the title (QueueEntry.shown_unsaved).
                made_with = (request.config, request.options, payload.item.edits)
                entry.last_save.saved(payload.item.output, made_with)
                self.host.queue.changed(entry)  # its row says "saved"...
                self.host.jobs.mark_out_of_date()  # ...and no longer "out of date"
        else:
            tally.failed.append((payload.item.name, payload.reason))
        self.bar.show_progress(payload.index, payload.total, request.folder)
        self.changed.emit()

    def _on_end(self, end: JobEnd[str]) -> None:
        tally, self._tally = self._tally, None
        self.job_id = None
        self.bar.hide()
        self.changed.emit()
        if tally is None:
            return
        request = tally.request
        total = len(request.items) + len(tally.refused)
        if end.state is JobState.FAILED:
            technical = getattr(end.error, "technical", "")
            before = "Nothing was saved. "
            if tally.saved:
                before = f"{tally.saved} of {total} cutouts were saved to {request.folder}, "
                before += "the others not. "
            show_error(
                self.host.window(), "Not saved", before + end.message, end.details, technical
            )
            return
        if end.blocked_by is not None:
            if end.cause.state is JobState.FAILED:  # the model's own failure is reported
                self._status("Nothing was saved: the model could not be prepared.", 10000)
            else:
                self._status("Nothing was saved: preparing the model was cancelled.", 10000)
            return
        cancelled = end.state is JobState.CANCELLED
        stopped = "" if cancelled else end.result
        failed = tally.refused + tally.failed
        self._report(tally.saved, total, request.folder, failed, stopped, cancelled)

    def _report(
        self,
        saved: int,
        total: int,
        folder: Path,
        failed: list[tuple[str, str]],
        stopped: str = "",
        cancelled: bool = False,
    ) -> None:
        """The end in the status bar, and every image not saved in a box with its reason
        (and, when a full disk stopped the save, why)."""
        words = f"Saved {saved} of {total} cutout{'s' if total != 1 else ''} to {folder}"
        if cancelled:
            words += "; stopped as you asked, the others were not written."
        elif stopped:
            words += f"; stopped: {stopped}"
        else:
            words += "."
        self._status(words, 10000)
        if not failed and not stopped:
            return  # all saved, or cancelled with no failure: the status bar says it
        lines = [f"{name}: {reason}" for name, reason in failed]
        shown = lines[:REPORT_LINES]
        if len(lines) > REPORT_LINES:
            shown.append(f"… and {len(lines) - REPORT_LINES} more (Show Details).")
        if stopped:
            shown.append(f"Saving stopped: {stopped}")
        not_saved = total - saved
        show_error(
            self.host.window(),
            "Some cutouts were not saved",
            f"{not_saved} of {total} cutouts were not saved to {folder}:\n" + "\n".join(shown),
            technical="\n".join(lines),
        )
