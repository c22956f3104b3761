"""One image in the queue: what it is, and a record per part of what is known about it.

:class:`QueueEntry` groups its state into small records, each changed only through
its own methods, by the one part of the app that owns it: the result and the jobs
making it (:class:`CutoutState`), the comparison (:class:`ComparisonState`), the
user's edits (:class:`EditState`), the last save (:class:`SaveRecord`). The views
read the entry's properties; none of them writes a record's fields.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QImage

from ..files.imaging import LoadedImage
from ..network.models import BEST
from ..touchup.edit import Edits, Operation
from .results import ClickReady, Compared, Processed, made_by

if TYPE_CHECKING:  # annotations only: importing these loads the engine
    from ..engine.pipeline import EngineConfig
    from ..export.compose import ComposeOptions

#: The settings a restage works for: the model settings, the export options, the format.
RestageSettings = tuple["EngineConfig", "ComposeOptions", str]

#: What the queue's row and the detail pane add for an image the user has edited.
EDITED_MARK = "✎ edited"
#: What the queue's row adds for a result made with a model or precision changed since.
OUT_OF_DATE_MARK = "out of date"
#: What the queue's row adds for a cutout the evidence of its mask says may be wrong.
DOUBT_MARK = "check it"
#: What the queue's row says in place of "done" once the cutout was written with the
#: edits it has now (see :attr:`QueueEntry.unsaved`).
SAVED_WORD = "saved"


def doubt_sentence(doubts: tuple[str, ...], offer_best: bool = True) -> str:
    """What the app says of a cutout in doubt (``doubts``: why, from ``Result.doubts``),
    and what the user can do: check it, try Best (unless ``offer_best`` is False: it was
    made with Best), or touch it up. "" when there is no doubt."""
    if not doubts:
        return ""
    todo = "Check it, try Best, or touch it up." if offer_best else "Check it, or touch it up."
    return f"This cutout may be wrong: {'; '.join(doubts)}. {todo}"


@dataclass(frozen=True)
class EditRequest:
    """One of the user's edit actions waiting to be applied: "apply" ``op``, "remove"
    (operation ``index``, ``op``, taken out of the edits and the ones after it replayed),
    "undo" or "redo" (``op`` is the operation the change undone or redone appended, or,
    with ``index``, took out)."""

    action: str
    op: Operation | None = None
    #: Where the operation was taken out (None: the change appends ``op``).
    index: int | None = None
    #: Applying it runs the model (a box applied, or replayed after a removal): it is
    #: the engine thread's job.
    runs_model: bool = False


@dataclass(frozen=True)
class _Change:
    """One change of an image's edits, as Undo and Redo take it: ``op`` appended, or
    (``removed_at``) taken out at that index; ``after``: the edits it led to."""

    op: Operation
    removed_at: int | None
    after: Edits


class Status(enum.Enum):
    """Where an image is; the value is what the queue shows."""

    QUEUED = "queued"
    PROCESSING = "processing"
    DONE = "done"
    FAILED = "failed"
    #: Its job was cancelled (the model download, say): nothing ran, nothing failed.
    STOPPED = "not processed"


@dataclass(eq=False)
class CutoutState:
    """An image's result and the jobs making it.

    Owner: :class:`~bgremover.gui.queue_jobs.QueueJobs` (its process and restage jobs,
    and edits applied to the result), through these methods; the queue's memory policy
    only drops it (:meth:`unload`).
    """

    status: Status = Status.QUEUED
    #: Why it failed, or why it was not processed.
    error: str = ""
    processed: Processed | None = None
    #: The list icon, kept when the full-size result is dropped from memory.
    thumb: QImage | None = None
    #: The engine job making its result, while it runs.
    job: int | None = None
    #: The job bringing its result up to new settings (refine, look), and the settings
    #: (config, options, format) a restage failed for: not tried again until the settings
    #: change (the user was told once).
    restage_job: int | None = None
    restage_failed: RestageSettings | None = None
    #: The model settings (an EngineConfig without refinement) its result was made with,
    #: kept when the result is dropped from memory; None before a result.
    made_with: Any = None
    #: Done with other model settings than the current ones: made again when shown or
    #: saved, and the row says so until then.
    out_of_date: bool = False
    #: Why the result may be wrong (its ``Result.doubts``), kept when the result is
    #: dropped from memory, so that the row still says so; () when nothing points to it.
    doubts: tuple[str, ...] = ()

    def queued(self, job_id: int) -> None:
        """A job making the result was submitted."""
        self.job, self.status, self.error = job_id, Status.QUEUED, ""

    def started(self) -> None:
        self.status = Status.PROCESSING

    def done(self, processed: Processed, made_with: Any, out_of_date: bool) -> None:
        self.status, self.error = Status.DONE, ""
        self.replace(processed)
        self.made_with, self.out_of_date = made_with, out_of_date

    def failed(self, error: str) -> None:
        """Its own failure, or its model's (the queue then forgets the result shown)."""
        self.status, self.error = Status.FAILED, error

    def stopped(self, reason: str) -> None:
        self.status, self.error = Status.STOPPED, reason

    def replace(self, processed: Processed) -> None:
        """A new result for the same image (restaged, or edited)."""
        self.processed, self.thumb = processed, processed.thumb
        self.doubts = processed.result.doubts

    def restaged(self, processed: Processed) -> None:
        self.replace(processed)
        self.restage_failed = None

    def unload(self) -> None:
        """Drop the full-size result to bound memory (the thumbnail stays)."""
        self.processed = None

    def restage_started(self, job_id: int) -> None:
        self.restage_job = job_id

    def restage_failed_for(self, settings: RestageSettings) -> None:
        """The restage failed for ``settings`` (reported once): not tried again for them."""
        self.restage_failed = settings

    def end_job(self, job_id: int) -> bool:
        """The job making the result ended: True when it was still the one waited on,
        which is then forgotten."""
        if self.job != job_id:
            return False
        self.job = None
        return True

    def end_restage(self, job_id: int) -> bool:
        """As :meth:`end_job`, for the restage job."""
        if self.restage_job != job_id:
            return False
        self.restage_job = None
        return True

    def take_job(self) -> int | None:
        """Forget the job making the result (being cancelled); its id."""
        job, self.job = self.job, None
        return job

    def take_restage(self) -> int | None:
        """Forget the restage job (being cancelled); its id."""
        job, self.restage_job = self.restage_job, None
        return job

    def mark_out_of_date(self, stale: bool) -> bool:
        """Whether the result is out of date; True when that changed."""
        changed = stale != self.out_of_date
        self.out_of_date = stale
        return changed


@dataclass(eq=False)
class ComparisonState:
    """An image's comparison of side A and side B, and the job making it.

    Owner: :class:`~bgremover.gui.queue_jobs.QueueJobs`, through these methods; the
    queue's memory policy only drops it (:meth:`unload`).
    """

    compared: Compared | None = None
    job: int | None = None
    error: str = ""
    cancelled: bool = False

    def started(self, job_id: int) -> None:
        self.job, self.error, self.cancelled = job_id, "", False

    def done(self, compared: Compared) -> None:
        self.compared = compared

    def failed(self, error: str) -> None:
        self.error = error

    def was_cancelled(self) -> None:
        self.cancelled = True

    def drop(self) -> int | None:
        """Forget the comparison, its job and how the last one ended; the job to cancel."""
        job = self.outdated()
        self.error, self.cancelled = "", False
        return job

    def outdated(self) -> int | None:
        """The model changed: the comparison made, and the job making one, are forgotten
        (how the last one ended stays); the job to cancel."""
        job = self.take_job()
        self.compared = None
        return job

    def take_job(self) -> int | None:
        """Forget the job making the comparison (being cancelled); its id."""
        job, self.job = self.job, None
        return job

    def retry(self) -> None:
        """A failed or cancelled comparison may be asked for again."""
        self.error, self.cancelled = "", False

    def unload(self) -> None:
        self.compared = None

    def end_job(self, job_id: int) -> bool:
        """The comparison's job ended: True when it was still the one waited on."""
        if self.job != job_id:
            return False
        self.job = None
        return True


@dataclass(eq=False)
class EditState:
    """The user's edits of an image and the requests still being applied.

    ``edits`` are the corrections in effect (undone ones left out), in the photo's
    full-size pixels: what the user asked for, including requests still being applied.
    Small, and never dropped by the memory policy: a remade result gets them back, and a
    change of model or refinement replays them on the new mask.

    Owner: :class:`~bgremover.gui.queue_jobs.QueueJobs` (QueueJobs.edit and its jobs),
    through these methods.
    """

    edits: Edits | None = None
    #: The changes made, the last made last: what Undo takes back (only the last one
    #: while it is the one that led to ``edits``; otherwise Undo drops the last operation).
    done: list[_Change] = field(default_factory=list)
    #: Changes undone, the last undone last: what Redo makes again.
    redo: list[_Change] = field(default_factory=list)
    #: Edit requests not yet applied, oldest first, and the job applying one (an
    #: image's edits run strictly one after another).
    pending: deque[EditRequest] = field(default_factory=deque)
    job: int | None = None
    #: The click model bound to this photo (its embedding, a few MB), once made; and
    #: the job making it. Kept with the edits: the photo does not change.
    clicks: ClickReady | None = None
    click_job: int | None = None

    @property
    def busy(self) -> bool:
        """Edits are still being applied."""
        return self.job is not None or bool(self.pending)

    def request(
        self, action: str, op: Operation | None, size: tuple[int, int], index: int | None = None
    ) -> bool:
        """Count the user's ``action`` ("apply" ``op``, "remove" operation ``index``,
        "undo", "redo") at once, and queue it to be applied; False when there is nothing
        to undo or redo, or no operation ``index``."""
        edits = self.edits or Edits(size)
        ops = edits.operations
        if action == "apply":
            assert op is not None
            change = _Change(op, None, edits.then(op))
            self.redo.clear()
        elif action == "remove":
            if index is None or not 0 <= index < len(ops):
                return False
            change = _Change(ops[index], index, Edits(edits.size, ops[:index] + ops[index + 1 :]))
            self.redo.clear()
        elif action == "undo":
            last = self.done.pop() if self.done and self.done[-1].after == self.edits else None
            if last is None:
                self.done.clear()  # made before the edits were replaced: not theirs
                if not ops:
                    return False
                last = _Change(ops[-1], None, edits)
            at = last.removed_at
            if at is None:
                before = Edits(edits.size, ops[:-1])
            else:
                before = Edits(edits.size, (*ops[:at], last.op, *ops[at:]))
            self.redo.append(last)
            self.edits = before
            self.pending.append(self._request("undo", last, before))
            return True
        elif action == "redo":
            if not self.redo:
                return False
            undone = self.redo.pop()
            at = undone.removed_at
            if at is None:
                after = edits.then(undone.op)
            elif at < len(ops):
                after = Edits(edits.size, ops[:at] + ops[at + 1 :])
            else:
                self.redo.clear()  # not the edits it was undone from
                return False
            change = _Change(undone.op, at, after)
        else:
            raise ValueError(f"unknown edit action {action!r}")
        self.edits = change.after
        self.done.append(change)
        self.pending.append(self._request(action, change, change.after))
        return True

    def forget_redo(self, op: Operation) -> None:
        """``op``, just undone because it changed nothing, is not offered back by Redo."""
        if self.redo and self.redo[-1].op is op:
            self.redo.pop()

    @staticmethod
    def _request(action: str, change: _Change, now: Edits) -> EditRequest:
        """The request for ``action`` (``change`` made or undone, leading to ``now``)."""
        at = change.removed_at
        if at is None:  # appended (or, undone, dropped by its exact patch)
            runs = action != "undo" and change.op.spec.needs_model
        else:  # the operations from ``at`` on are replayed
            runs = any(o.spec.needs_model for o in now.operations[at:])
        return EditRequest(action, change.op, at, runs)

    def next_request(self, job_id: Callable[[EditRequest], int]) -> None:
        """Start the oldest request waiting: ``job_id`` submits it and gives its job."""
        self.job = job_id(self.pending.popleft())

    def end_job(self, job_id: int) -> bool:
        if self.job != job_id:
            return False
        self.job = None
        return True

    def withdraw(self) -> None:
        """The requests waiting are not applied to this result (they are in ``edits``:
        the next result made replays them)."""
        self.pending.clear()

    def took_effect(self, edits: Edits | None) -> None:
        """An edit failed: ``edits`` (the editor's) are what took effect; the requests
        after it are withdrawn (they may have built on it)."""
        self.edits = edits or None
        self.done.clear()
        self.redo.clear()
        self.pending.clear()


@dataclass(eq=False)
class SaveRecord:
    """Where an image was last saved, and the settings (EngineConfig, ComposeOptions) and
    edits of the result saved then: a result remade alike (after its memory was freed)
    stays saved.

    Owner: the saves (Save, Save Selected / All), through :meth:`saved`.
    """

    path: Path | None = None
    made_with: tuple[Any, Any, Edits | None] | None = None

    def saved(self, path: Path, made_with: tuple[Any, Any, Edits | None] | None) -> None:
        """Saved to ``path``, from a result made with ``made_with`` (config, options,
        edits; None: not known, so it counts as unsaved)."""
        self.path, self.made_with = path, made_with


@dataclass(eq=False)
class QueueEntry:
    """One image in the queue: what it is, and a record per part of its state, each
    changed only through its own methods by the one part of the app that owns it."""

    item_id: int
    #: A file, or a pasted or dropped image.
    source: Path | LoadedImage
    name: str
    cutout: CutoutState = field(default_factory=CutoutState)
    comparison: ComparisonState = field(default_factory=ComparisonState)
    editing: EditState = field(default_factory=EditState)
    last_save: SaveRecord = field(default_factory=SaveRecord)

    # -- what the views read most, read-only ----------------------------------------
    @property
    def status(self) -> Status:
        return self.cutout.status

    @property
    def error(self) -> str:
        return self.cutout.error

    @property
    def processed(self) -> Processed | None:
        return self.cutout.processed

    @property
    def thumb(self) -> QImage | None:
        return self.cutout.thumb

    @property
    def compared(self) -> Compared | None:
        return self.comparison.compared

    @property
    def compare_error(self) -> str:
        return self.comparison.error

    @property
    def edits(self) -> Edits | None:
        return self.editing.edits

    @property
    def edited(self) -> bool:
        """The user has edits in effect on this image (a Reset since undoes them)."""
        return self.edit_count > 0

    @property
    def edit_count(self) -> int:
        """The edits in effect: those since the last Reset (which is not one)."""
        return len(self.edits.effective().operations) if self.edits else 0

    @property
    def unsaved(self) -> bool:
        """Quitting would lose work: a result never written, or edits not written as they
        are now. A cutout written with other settings (a model or a look chosen since) is
        saved: the settings make the other result again, the file is the user's; the
        title's mark (:attr:`shown_unsaved`) still says the file is not what is shown."""
        if self.status is not Status.DONE and not self.edits:
            return False
        saved = self.last_save.made_with
        if self.last_save.path is None or saved is None:
            return True
        return (self.edits or None) != saved[2]

    @property
    def shown_unsaved(self) -> bool:
        """The result shown is not the file written last: :attr:`unsaved`, or it was made
        with other settings than the file (the window title's mark, as in any editor)."""
        if self.unsaved:
            return True
        saved, p = self.last_save.made_with, self.processed
        return saved is not None and p is not None and (p.config, p.options) != saved[:2]

    @property
    def saved(self) -> bool:
        """Done, and written with the edits it has now: its row says so."""
        return self.status is Status.DONE and self.last_save.path is not None and not self.unsaved

    @property
    def unloaded(self) -> bool:
        """Done, but its full-size result was dropped to bound memory: made again on display."""
        return self.status is Status.DONE and self.processed is None

    @property
    def summary(self) -> str:
        """One line about the result: size, model, precision, inference time."""
        if self.processed is None:
            return ""
        r = self.processed.result
        h, w = r.mask.shape
        text = (
            f"{self.name}: {w}×{h}, {made_by(r, self.processed.ran)}, "
            f"inference {1000 * r.timings['infer']:.0f} ms"
        )
        if self.edited:
            count = self.edit_count
            text += f", {EDITED_MARK} ({count} edit{'s' if count != 1 else ''})"
        if r.guard is not None and r.guard.in_doubt:
            text += f"\n{r.guard.words()}"
        if self.doubts:
            text += f"\n{self.doubt_note}"
        return text

    @property
    def doubts(self) -> tuple[str, ...]:
        """Why the cutout may be wrong; () when nothing points to it, and once the user
        has edits in effect on it (they looked at it and touched it up)."""
        return () if self.edited or self.status is not Status.DONE else self.cutout.doubts

    @property
    def made_with_best(self) -> bool:
        """Its result was made with the combined model Best (trying Best changes nothing)."""
        return getattr(self.cutout.made_with, "model", None) == BEST.name

    @property
    def doubt_note(self) -> str:
        """:func:`doubt_sentence` for this cutout ("" when not in doubt); Best is not
        offered for a cutout Best made."""
        return doubt_sentence(self.doubts, offer_best=not self.made_with_best)

    @property
    def stale(self) -> bool:
        """Done, with a model or precision that is no longer the setting."""
        return self.cutout.out_of_date and self.status is Status.DONE

    @property
    def status_text(self) -> str:
        """The status as the queue's row shows it ("saved" in place of "done" once
        written), with the out-of-date, doubt and edited marks."""
        parts = [SAVED_WORD if self.saved else self.status.value]
        if self.stale:
            parts.append(OUT_OF_DATE_MARK)
        if self.doubts:
            parts.append(DOUBT_MARK)
        if self.edited:
            parts.append(EDITED_MARK)
        return " · ".join(parts)

    @property
    def stale_note(self) -> str:
        """For a result out of date: what it was made with, and when it is made again."""
        made = self.cutout.made_with
        if not self.stale or made is None:
            return ""
        return (
            f"Made with {Path(made.model).name} {made.precision}, which is no longer the "
            "setting: it is made again when you show or save it."
        )

    def pixels(self) -> int:
        """Pixels of full-size data held (a comparison holds two results)."""
        if self.processed is None:
            return 0
        h, w = self.processed.result.mask.shape
        return int(h * w) * (3 if self.compared is not None else 1)
