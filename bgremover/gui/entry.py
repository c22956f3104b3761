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
from ..touchup.edit import Command, Edits, History, Move
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
    """The user's edits of an image and the moves still being applied.

    ``history`` is the image's one history of edits (the engine's :class:`History`): the
    corrections in effect, in the photo's full-size pixels, and the changes Undo and Redo
    take, with every command the user gave counted at once, including those still being
    applied. Small, and never dropped by the memory policy: a remade result gets the edits
    back, and a change of model or refinement replays them on the new mask. The editor
    applying the moves takes each one's history as its own, so the two never differ.

    Owner: :class:`~bgremover.gui.queue_jobs.QueueJobs` (QueueJobs.edit and its jobs),
    through these methods.
    """

    history: History | None = None
    #: The moves not yet applied, oldest first, and the job applying one (an image's
    #: edits run strictly one after another).
    pending: deque[Move] = field(default_factory=deque)
    job: int | None = None
    #: The click model bound to this photo (its embedding, a few MB), once made; and
    #: the job making it. Kept with the edits: the photo does not change.
    clicks: ClickReady | None = None
    click_job: int | None = None

    @property
    def edits(self) -> Edits | None:
        """The corrections in effect (what the user asked for); None before any."""
        return self.history.edits if self.history is not None else None

    @property
    def busy(self) -> bool:
        """Edits are still being applied."""
        return self.job is not None or bool(self.pending)

    def request(self, command: Command, size: tuple[int, int]) -> bool:
        """Count the user's ``command`` at once (on a photo of ``size``), and queue its
        move to be applied; False when there is nothing to undo or redo, or no such
        operation."""
        move = (self.history or History(Edits(size))).after(command)
        if move is None:
            return False
        self.history = move.after
        self.pending.append(move)
        return True

    def next_request(self, job_id: Callable[[Move], int]) -> None:
        """Start the oldest move waiting: ``job_id`` submits it and gives its job."""
        self.job = job_id(self.pending.popleft())

    def end_job(self, job_id: int) -> bool:
        if self.job != job_id:
            return False
        self.job = None
        return True

    def withdraw(self) -> None:
        """The moves waiting are not applied to this result (they are in ``history``:
        the next result made replays its edits)."""
        self.pending.clear()

    def took_effect(self, history: History | None) -> None:
        """An edit failed: ``history`` (the editor's) is what took effect; the moves
        after it are withdrawn (they may have built on it)."""
        self.history = history
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
