"""Batches: a plan of jobs (plan.py) -> a pipelined run -> a stream of events.

:func:`run_batch` runs the engine's stages as a pipeline on several threads and
is a generator: each yielded event is a point where the consumer (CLI progress
display, GUI worker) may stop by simply not asking for the next one. Outputs
are written atomically, so stopping, cancelling or being killed never leaves a
half-written file, and a rerun skips finished outputs: those that record being
made from the same photo with the same settings (see
:func:`~bgremover.export.output.existing_output`); one made with other settings is made again
and reported so (:attr:`ItemDone.redone`).

Runs that share an output folder coordinate through a claim per output file
(:class:`~bgremover.files.atomic.Claim`), taken before an image is read and held until
it is written: an image another run is working on is skipped, never written twice,
and only temporary files whose run has ended are deleted as left over.

Each photo ends in one :data:`Outcome` (:class:`ItemDone`, :class:`ItemSkipped`,
:class:`ItemFailed`), counted by one :class:`Tally`. The steps of one photo that do not
run the model (:func:`source_record`, :func:`decide`, :func:`claim_output`,
:func:`mask_item`, :func:`finish_item`) are those of ``remove --ray``
(:mod:`~bgremover.distributed`) too, so both write the same files and say the same.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..errors import BgRemoverError, DiskFullError, ModelError
from ..export.compose import ComposeOptions, Enlarged, enlargement
from ..export.output import OutputSettings, SourceRecord, write_output
from ..files.atomic import Claim, windows_long_path
from ..files.imaging import LoadedImage, probe, read_image
from ..network.guard import GuardCheck
from ..touchup.edit import Segmenter
from .batch_report import (
    ALREADY_DONE,
    BEING_WRITTEN,
    FAIL,
    MAKE,
    SETTINGS_CHANGED,
    SETTINGS_UNKNOWN,
    counts_words,
    failure_reason,
    remove_stale_temp_files,
    resume_decision,
)
from .budget import DEFAULT_PIXELS_IN_FLIGHT, PixelBudget
from .pipeline import Masked, Remover, output_alpha
from .plan import Job

__all__ = [
    # The values of ItemSkipped.reason and ItemDone.redone that consumers compare with,
    # and the summary's counts, as the app and the command line say them.
    "ALREADY_DONE",
    "BEING_WRITTEN",
    "DEFAULT_PIXELS_IN_FLIGHT",
    "SETTINGS_CHANGED",
    "SETTINGS_UNKNOWN",
    "BatchEvent",
    "BatchFinished",
    "BatchSettings",
    "BatchStarted",
    "Item",
    "ItemDone",
    "ItemFailed",
    "ItemSkipped",
    "Outcome",
    "Tally",
    "claim_output",
    "counts_words",
    "decide",
    "default_finishers",
    "finish_item",
    "mask_item",
    "run_batch",
    "source_record",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchStarted:
    total: int


@dataclass(frozen=True)
class ItemDone:
    #: What the app's progress calls this outcome (:class:`~bgremover.gui.results.BatchProgress`).
    kind: ClassVar[str] = "done"
    index: int
    total: int
    job: Job
    #: Seconds per stage: read, preprocess, infer, postprocess, refine, write.
    timings: Mapping[str, float]
    bytes_written: int
    #: From the start of reading to the file written (stages overlap other images).
    seconds: float
    #: For int8: what the int8 guard found (ran_fp32: the image was made in fp32).
    guard: GuardCheck | None = None
    #: Set when the canvas enlarged the subject so much that it will look soft.
    enlarged: Enlarged | None = None
    #: Set when the file replaced this photo's output made with other settings
    #: (SETTINGS_CHANGED) or with settings it does not record (SETTINGS_UNKNOWN).
    redone: str = ""
    #: Why the cutout may be wrong (``Result.doubts``); () when nothing points to it.
    doubts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ItemSkipped:
    kind: ClassVar[str] = "skipped"
    index: int
    total: int
    job: Job
    reason: str


@dataclass(frozen=True)
class ItemFailed:
    kind: ClassVar[str] = "failed"
    index: int
    total: int
    job: Job
    reason: str
    #: The batch stops after it: the disk is full, so no later photo could be written.
    stops: bool = False

    @classmethod
    def of(cls, index: int, total: int, job: Job, exc: BaseException) -> ItemFailed:
        """The failure ``exc`` of ``job``, in words (a bug's traceback is logged)."""
        reason = failure_reason(exc, job.source, log)
        return cls(index, total, job, reason, stops=isinstance(exc, DiskFullError))


@dataclass(frozen=True)
class BatchFinished:
    done: int
    skipped: int
    failed: int
    seconds: float
    #: Set when the batch stopped early (disk full): what happened and what to do.
    stopped: str | None = None
    failures: tuple[tuple[Path, str], ...] = field(default=())
    #: Of ``done``: the outputs made again because of their settings, by reason.
    redone: Mapping[str, int] = field(default_factory=dict)
    #: What the int8 guard found on each photo done (None where it did not look).
    guarded: tuple[GuardCheck | None, ...] = ()
    #: Of ``done``: the cutouts in doubt (:attr:`ItemDone.doubts`).
    doubtful: int = 0


#: How one photo of a batch ended: the one outcome type of every batch and front end.
Outcome = ItemDone | ItemSkipped | ItemFailed
BatchEvent = BatchStarted | Outcome | BatchFinished


@dataclass
class Tally:
    """A batch's counts so far, from its outcomes: the one tally of the plain batch,
    ``remove --ray``, the command line and the app."""

    done: int = 0
    skipped: int = 0
    failures: list[tuple[Path, str]] = field(default_factory=list)
    redone: dict[str, int] = field(default_factory=dict)
    guarded: list[GuardCheck | None] = field(default_factory=list)
    doubtful: int = 0
    #: Why the batch stopped early (the first :attr:`ItemFailed.stops`), if it did.
    stopped: str | None = None

    @property
    def failed(self) -> int:
        return len(self.failures)

    def add(self, outcome: Outcome) -> None:
        if isinstance(outcome, ItemDone):
            self.done += 1
            if outcome.redone:
                self.redone[outcome.redone] = self.redone.get(outcome.redone, 0) + 1
            self.guarded.append(outcome.guard)
            self.doubtful += bool(outcome.doubts)
        elif isinstance(outcome, ItemSkipped):
            self.skipped += 1
        else:
            self.failures.append((outcome.job.source, outcome.reason))
            if outcome.stops and self.stopped is None:
                self.stopped = outcome.reason

    def finished(self, seconds: float) -> BatchFinished:
        return BatchFinished(
            self.done, self.skipped, self.failed, seconds, self.stopped, tuple(self.failures),
            dict(self.redone), tuple(self.guarded), self.doubtful,
        )  # fmt: skip


def default_finishers() -> int:
    """Finishing threads (refine, compose, encode, write): one per core, at most 4.

    On two cores two finishers were as fast as three and a little faster than one
    (README, "Performance"); the pixel budget, not their number, bounds memory.
    """
    return max(1, min(4, (os.cpu_count() or 2)))


def _pixels(path: Path) -> int:
    """The image's pixel count from its header (no decoding); 0 if it cannot be read
    (reading it then fails with the reason). The header is read through the same
    allow-list as the pixels, so a refused format is never handed to Pillow here either."""
    try:
        _, width, height = probe(path)
    except Exception:
        return 0
    return width * height


@dataclass
class Item:
    """One image on its way through the stages."""

    index: int
    job: Job
    started: float
    pixels: int = 0
    loaded: LoadedImage | None = None
    batch: np.ndarray | None = None
    raw: np.ndarray | None = None
    guard: GuardCheck | None = None
    timings: dict[str, float] = field(default_factory=dict)
    #: This run's claim on the output, held from before reading until written or dropped.
    claim: Claim | None = None
    record: SourceRecord | None = None
    #: Why the output is made again (ItemDone.redone), when it is.
    redone: str = ""


def source_record(
    job: Job, remover: Remover, options: ComposeOptions, fmt: str, made_with: OutputSettings
) -> SourceRecord | None:
    """What ``job``'s output records of its photo and settings (``made_with``: those of a
    job without edits); None when the photo cannot be read (reading it then says why)."""
    if job.edits:
        made_with = remover.output_settings(options, fmt, job.edits)
    with contextlib.suppress(OSError):
        return SourceRecord.of(job.source, made_with)
    return None


def decide(item: Item, total: int, overwrite: bool) -> ItemSkipped | ItemFailed | None:
    """None when ``item``'s output is to be made (``item.redone`` says why it is made
    again, if it is), else the outcome that says why not (:func:`resume_decision`)."""
    decision = resume_decision(item.job.output, item.record, overwrite)
    if decision.action == MAKE:
        item.redone = decision.reason
        if decision.detail:
            log.info(decision.detail)
        return None
    event = ItemFailed if decision.action == FAIL else ItemSkipped
    return event(item.index, total, item.job, decision.reason)


def claim_output(item: Item, total: int, overwrite: bool) -> ItemSkipped | ItemFailed | None:
    """Claim ``item``'s output for this run (``item.claim``) and decide again under the
    claim, as another run may have finished it meanwhile: None to make it, else the
    outcome (another run's, done, kept or failed)."""
    job = item.job
    try:
        item.claim = Claim.try_acquire(Path(windows_long_path(job.output)))
    except OSError as exc:
        error = BgRemoverError(f"{job.output}: cannot be written ({exc}).")
        return ItemFailed.of(item.index, total, job, error)
    if item.claim is None:
        log.info("%s: skipped, %s", job.output, BEING_WRITTEN)
        return ItemSkipped(item.index, total, job, BEING_WRITTEN)
    return decide(item, total, overwrite)


def mask_item(remover: Remover, item: Item, raw: np.ndarray, guard: GuardCheck | None) -> Masked:
    """The mask of ``item``'s photo from the model's ``raw`` output (a combined model runs
    its second model here), timed into ``item.timings``."""
    assert item.loaded is not None
    t0 = time.perf_counter()
    made = remover.masked(item.loaded.rgb, raw, guard)
    item.timings["postprocess"] = time.perf_counter() - t0 - made.second_seconds
    if made.second_seconds:
        item.timings["second_model"] = made.second_seconds
    return made


def finish_item(
    item: Item,
    made: Masked,
    total: int,
    settings: BatchSettings,
    refine: bool,
    segment: Segmenter | None,
) -> ItemDone:
    """Refine the edges, replay the edits (``segment`` runs the model for box edits),
    compose, encode and write ``item``'s output under its claim; the photo's outcome. The
    one finishing step of the plain batch and ``remove --ray``."""
    loaded = item.loaded
    assert loaded is not None
    t0 = time.perf_counter()
    alpha = output_alpha(loaded, made.mask, refine, item.job.edits, segment)
    guard, doubts = made.guard, made.evidence.doubts()
    del made  # the unrefined mask, unless the caller holds it
    t1 = time.perf_counter()
    enlarged = enlargement(alpha, settings.options)
    written = write_output(
        loaded.rgb, alpha, settings.options, item.job.output, settings.fmt, item.record,
        item.claim, loaded.metadata,
    )  # fmt: skip
    timings = {**item.timings, "refine": t1 - t0, "write": time.perf_counter() - t1}
    seconds = time.perf_counter() - item.started
    return ItemDone(
        item.index, total, item.job, timings, written, seconds, guard, enlarged, item.redone,
        doubts,
    )  # fmt: skip


_DONE = object()  # end of a stage's input


@dataclass(frozen=True)
class BatchSettings:
    """What a batch writes and how much it holds at once (see :func:`run_batch`)."""

    options: ComposeOptions = field(default_factory=ComposeOptions)
    fmt: str = "png"
    overwrite: bool = False
    finishers: int | None = None
    depth: int = 1
    pixels_in_flight: int = DEFAULT_PIXELS_IN_FLIGHT
    max_megapixels: float | None = None


class _Pipeline:
    """The threads of one batch: a reader, one inference thread, several finishers.

    Stages hand items on through bounded queues. Each stage ends by passing an end
    marker on; the consumer (:meth:`events`) reads events until every finisher has
    ended. ``stop`` tells every stage to drop what it holds and end.
    """

    def __init__(self, jobs: Sequence[Job], remover: Remover, settings: BatchSettings) -> None:
        self.jobs = jobs
        self.total = len(jobs)
        self.remover = remover
        self.settings = settings
        self.finishers = max(1, settings.finishers or default_finishers())
        depth = max(1, settings.depth)
        self.stop = threading.Event()
        self.to_infer: queue.Queue = queue.Queue(maxsize=depth)
        self.to_finish: queue.Queue = queue.Queue(maxsize=depth)
        # Bounded too: when the consumer is slow (or has stopped), finishers wait instead
        # of writing ahead, so a cancel leaves at most a few more files than were reported.
        self.events_out: queue.Queue = queue.Queue(maxsize=depth)
        self.fatal: list[BaseException] = []
        self.budget = PixelBudget(settings.pixels_in_flight)
        #: What outputs record of their settings (a job with edits records its own).
        self.made_with = remover.output_settings(settings.options, settings.fmt)
        self.threads = [
            threading.Thread(target=self._guard, args=(self.read, self.to_infer, 1),
                             name="bgremover-read", daemon=True),
            threading.Thread(target=self._guard, args=(self.infer, self.to_finish,
                             self.finishers), name="bgremover-infer", daemon=True),
            *(threading.Thread(target=self._guard, args=(self.finish, self.events_out, 1),
                               name=f"bgremover-finish-{i}", daemon=True)
              for i in range(self.finishers)),
        ]  # fmt: skip

    # -- plumbing ----------------------------------------------------------------
    def put(self, q: queue.Queue, item: object) -> bool:
        """Hand ``item`` on, unless the batch stops while waiting for room.

        End markers are always delivered: each stage drains its input until it
        sees one, and the consumer drains the events until all stages are joined.
        """
        while True:
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                if self.stop.is_set() and item is not _DONE:
                    return False

    def _guard(self, stage, out: queue.Queue, ends: int) -> None:
        """Run a stage; whatever happens, pass ``ends`` end markers on."""
        try:
            stage()
        except BaseException as exc:  # a bug in a stage: stop the batch, re-raise it there
            self.fatal.append(exc)
            self.stop.set()
        finally:
            for _ in range(ends):
                self.put(out, _DONE)

    def drop(self, item: Item) -> None:
        """Forget an item the batch will not finish (stopping): return its pixels."""
        self.budget.release(item.pixels)
        item.pixels = 0
        if item.claim is not None:
            item.claim.release()

    def fail(self, item: Item, exc: BaseException) -> None:
        """Report ``item`` as failed and go on (a full disk stops the batch)."""
        self.end(item, ItemFailed.of(item.index, self.total, item.job, exc))  # a bug too

    def end(self, item: Item, outcome: ItemSkipped | ItemFailed) -> None:
        """Report ``item`` ended without its output; :attr:`ItemFailed.stops` stops the batch."""
        self.drop(item)
        self.put(self.events_out, outcome)
        if isinstance(outcome, ItemFailed) and outcome.stops:
            self.stop.set()

    # -- the stages --------------------------------------------------------------
    def claim(self, index: int, job: Job) -> Item | None:
        """Claim ``job``'s output for this run, unless it is done, another run's or kept.

        Returns the item to make, or None when an event said why not."""
        item = Item(index, job, time.perf_counter())
        options, fmt = self.settings.options, self.settings.fmt
        item.record = source_record(job, self.remover, options, fmt, self.made_with)
        outcome = claim_output(item, self.total, self.settings.overwrite)
        if outcome is None:
            return item
        self.end(item, outcome)
        return None

    def read(self) -> None:
        """Skip finished outputs, decode the next image and make the model input."""
        for index, job in enumerate(self.jobs, 1):
            if self.stop.is_set():
                return
            item = self.claim(index, job)
            if item is None:
                continue
            item.pixels = _pixels(job.source)
            if not self.budget.acquire(item.pixels, self.stop):
                item.pixels = 0
                self.drop(item)
                return
            try:
                t0 = time.perf_counter()
                item.loaded = read_image(job.source, self.settings.max_megapixels)
                item.timings["read"] = time.perf_counter() - t0
                item.batch, item.timings["preprocess"] = self.remover.prepare(item.loaded)
            except Exception as exc:
                self.fail(item, exc)
                continue
            if not self.put(self.to_infer, item):
                self.drop(item)
                return

    def infer(self) -> None:
        """Run the model on each prepared image; a model failure stops the batch."""
        while (item := self.to_infer.get()) is not _DONE:
            if self.stop.is_set():
                self.drop(item)
                continue  # drain: the batch is stopping
            try:
                t0 = time.perf_counter()
                item.raw, item.guard = self.remover.infer_checked(item.batch)
                item.timings["infer"] = time.perf_counter() - t0
                item.batch = None
            except ModelError as exc:
                self.drop(item)
                self.fatal.append(exc)
                self.stop.set()
                continue
            except Exception as exc:
                self.fail(item, exc)
                continue
            if not self.put(self.to_finish, item):
                self.drop(item)

    def finish(self) -> None:
        """Mask, refine, compose and write each image; report it done."""
        while (item := self.to_finish.get()) is not _DONE:
            if self.stop.is_set():
                self.drop(item)
                continue
            try:
                raw, item.raw = item.raw, None
                done = finish_item(
                    item, mask_item(self.remover, item, raw, item.guard), self.total,
                    self.settings, self.remover.refine, self.remover.segment,
                )  # fmt: skip
                item.loaded = None
            except Exception as exc:
                self.fail(item, exc)
                continue
            self.drop(item)
            self.put(self.events_out, done)

    # -- the consumer's side -----------------------------------------------------
    def events(self) -> Iterator[ItemDone | ItemSkipped | ItemFailed]:
        """Start the stages and yield item events as they complete; join them at the end."""
        for thread in self.threads:
            thread.start()
        running = self.finishers
        try:
            while running:
                try:  # with a timeout, so that Ctrl+C reaches the main thread on Windows too
                    event = self.events_out.get(timeout=0.2)
                except queue.Empty:
                    continue
                if event is _DONE:
                    running -= 1
                    continue
                yield event
        finally:
            self.stop.set()  # the consumer stopped early, or the batch is over
            for thread in self.threads:
                while thread.is_alive():
                    with contextlib.suppress(queue.Empty):
                        self.events_out.get(timeout=0.05)  # unblock stages waiting to report
                thread.join()
            # The int8 guard's fp32 session is not kept past the batch that needed it.
            self.remover.release_guard_sessions()


def run_batch(
    jobs: Sequence[Job],
    remover: Remover,
    options: ComposeOptions | None = None,
    fmt: str = "png",
    overwrite: bool = False,
    *,
    finishers: int | None = None,
    depth: int = 1,
    pixels_in_flight: int = DEFAULT_PIXELS_IN_FLIGHT,
    max_megapixels: float | None = None,
) -> Iterator[BatchEvent]:
    """Process ``jobs`` through a pipeline, yielding an event per item as it completes.

    Three stages run at once on their own threads, joined by queues that hold at
    most ``depth`` images each, so memory stays bounded whatever the batch size:

    - a reader decodes the next image and makes the model input;
    - one inference thread runs ONNX Runtime (which releases the GIL);
    - ``finishers`` threads upscale the mask, refine the edges, compose and
      encode the output and write it atomically.

    The reader also waits while the images in flight hold ``pixels_in_flight``
    pixels, so a folder of 50-megapixel scans runs one or two at a time while
    small photos keep every stage busy. Images over ``max_megapixels`` are refused
    (see :func:`~bgremover.files.imaging.read_image`).

    Items complete out of order: each event carries its job's ``index`` (1-based,
    in ``jobs`` order). Every stage calls the same :class:`Remover` methods as
    :meth:`Remover.remove`, so results are those of the one-image engine.

    A failed item is reported and the batch goes on. A model that cannot be
    obtained or loaded raises before the first item; a full disk ends the batch
    with ``BatchFinished.stopped`` set. Closing the generator (not asking for the
    next event) stops the batch: images being written are finished, the rest are
    not started, and a rerun resumes.
    """
    settings = BatchSettings(
        options or ComposeOptions(), fmt, overwrite, finishers, depth, pixels_in_flight,
        max_megapixels,
    )  # fmt: skip
    start = time.perf_counter()
    remove_stale_temp_files(jobs, log)
    remover.load()  # a model that cannot load fails here, with its own error
    yield BatchStarted(len(jobs))
    if not jobs:
        yield BatchFinished(0, 0, 0, time.perf_counter() - start)
        return
    pipeline = _Pipeline(jobs, remover, settings)
    tally = Tally()
    for event in pipeline.events():
        tally.add(event)
        yield event
    if pipeline.fatal:
        raise pipeline.fatal[0]
    yield tally.finished(time.perf_counter() - start)
