"""The engine work behind the queue: which jobs each image needs, and what their ends mean.

:class:`QueueJobs` submits an image's cut-out and comparison to the engine
runner, each waiting for the one job that obtains and loads the model it needs,
and turns every job's end into the image's state in the :class:`QueueModel`.
When the settings change, :meth:`QueueJobs.update` brings a result up to them by
running again only the stages they affect: inference on the engine runner for
another model, precision, provider or thread count; refinement and composing
(background, mask only, decontamination) on the output runner, in milliseconds
to a second, never queued behind other images' inference.
The user's edits of an image run here too (:meth:`QueueJobs.edit`): strictly one
after another per image, brushes, clicks and the rest on the output runner, box edits (which
run the model) on the engine runner; a settings change waits for them, and they
wait for it.
It holds no widgets: the window listens to its signals and redraws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from ..engine.pipeline import EngineConfig
from ..errors import ModelError
from ..network.session import SessionInfo
from ..touchup.edit import Command, Move
from .entry import QueueEntry, Status
from .jobs import Job, JobEnd, JobRunner, JobState
from .model_choice import DEFAULT_SIDES, Side
from .queue import QueueModel
from .results import Compared, Edited, Preparing, Processed
from .settings import Settings
from .wording import app_words
from .worker import Worker, apply_edit, needs_model, restage


def model_key(config: EngineConfig) -> EngineConfig:
    """What decides which model session ``config`` needs (refinement does not)."""
    return replace(config, refine=EngineConfig.refine)


def side_config(config: EngineConfig, side: Side) -> EngineConfig:
    """The engine config of one side of a comparison, from the settings' ``config``:
    another model than the settings' gets its own family (none given) and classes."""
    model, precision = side
    if model is not None and model != config.model:
        config = replace(config, model=model, family=None, classes=())
    return model_key(replace(config, precision=precision))


def side_name(config: EngineConfig) -> str:
    """A model and precision as the user reads them: "u2netp int8"."""
    return f"{Path(config.model).name} {config.precision}"


def compare_pair(
    config: EngineConfig, sides: tuple[Side, Side]
) -> tuple[EngineConfig, EngineConfig]:
    """The configs of sides A and B: what a comparison made for ``sides`` is keyed by."""
    return side_config(config, sides[0]), side_config(config, sides[1])


class QueueJobs(QObject):
    """Each image's jobs on the engine thread, and their ends applied to the queue."""

    #: An image's status, result or comparison changed.
    changed = Signal(object)  # QueueEntry
    #: Every queued image (and every comparison asked for) has finished.
    settled = Signal()
    #: A job failed in a way the user must hear of beyond the queue: a model that cannot
    #: be obtained or loaded (once, not once per image), or a bug (with its traceback).
    failed = Signal(object)  # JobEnd
    #: A job is obtaining a model (download) or making its int8 version.
    preparing = Signal(int, object)  # job id, Preparing
    #: A model was prepared: it may just have been downloaded.
    prepared = Signal(object)  # EngineConfig
    #: Model preparations nothing waits for any more were cancelled (see
    #: :meth:`release_unneeded`): what and why in words, and their job ids.
    released = Signal(str, object)  # message, list[int]
    #: An edit's move ended: the entry, the box of the photo it changed (None: nothing
    #: changed, or its result was superseded) and the move.
    edited = Signal(object, object, object)  # QueueEntry, Box | None, Move

    def __init__(
        self,
        queue: QueueModel,
        worker: Worker,
        engine: JobRunner,
        output: JobRunner,
        settings: Callable[[], Settings],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.queue = queue
        self.worker = worker
        self.engine = engine
        self.output = output
        self._settings = settings
        #: Per model (and precision, providers, threads): the job that obtains and loads
        #: it, which the work that needs the model waits for (see :meth:`prepare`).
        self._prepare_jobs: dict[EngineConfig, Job[SessionInfo]] = {}
        #: Per running edit job: the result it was applied to.
        self._edit_on: dict[int, Processed] = {}
        #: Preparation jobs cancelled because nothing waited for them: a later request for
        #: their model gets a new job rather than waiting for one that is stopping.
        self._released: set[int] = set()
        engine.started.connect(self._on_started)

    # -- submitting ----------------------------------------------------------------
    def process(self, entry: QueueEntry) -> Job[Processed]:
        """(Re)make ``entry``'s result with the current settings; its queued job is replaced."""
        if entry.cutout.job is not None:
            self.engine.cancel(entry.cutout.job)
        self._cancel_restage(entry)
        settings = self._settings()
        config, options, source = settings.engine(), settings.compose(), entry.source
        fmt = settings.output_format
        # The edits asked for so far are replayed on the new result: the requests still
        # waiting are in them; those asked for from now on wait for it.
        edits = entry.edits or None
        entry.editing.withdraw()
        clicks = entry.editing.clicks
        job = self.engine.submit(
            "process",
            lambda ctx: self.worker.process(ctx, source, config, options, edits, fmt, clicks),
            tag=("process", entry.item_id, config),
            on_end=self._on_process_end,
            on_progress=self.report_progress,
            after=self.prepare(config),
        )
        entry.cutout.queued(job.id)
        self.queue.changed(entry)
        self.changed.emit(entry)
        return job

    def compare(self, entry: QueueEntry, sides: tuple[Side, Side] = DEFAULT_SIDES) -> Job[Compared]:
        """Compare side A and side B (default: fp32 and int8 of the model) for ``entry``.

        It waits for the models' preparation jobs (a download runs once, with its size
        and Cancel in the status bar); cancelling the job stops it, download included.
        """
        a, b = compare_pair(self._settings().engine(), sides)
        source = entry.source
        # Each int8 model is made from its fp32 one: preparing it prepares both. The
        # engine runs jobs in order, so A's preparation runs before B's. The comparison
        # waits for both: while it does, they are its work (see release_unneeded).
        job = self.engine.submit(
            "compare",
            lambda ctx: self.worker.compare(ctx, source, a, b),
            tag=("compare", entry.item_id, (a, b)),
            on_end=self._on_compare_end,
            on_progress=self.report_progress,
            after=(self.prepare(a), self.prepare(b)),
        )
        entry.comparison.started(job.id)
        return job

    def compare_pending(self, entry: QueueEntry) -> tuple[EngineConfig, EngineConfig] | None:
        """The pair (A, B configs) of ``entry``'s comparison being made; None when none is."""
        job_id = entry.comparison.job
        job = self.engine.job(job_id) if job_id is not None else None
        return job.tag[-1] if job is not None else None

    def drop_comparison(self, entry: QueueEntry) -> None:
        """Forget ``entry``'s comparison, cancelling the one being made (other sides)."""
        job_id = entry.comparison.drop()
        if job_id is not None:
            self.engine.cancel(job_id)

    def update(self, entry: QueueEntry) -> Job[Processed] | None:
        """Bring ``entry``'s result up to the current settings, running again only the
        stages they affect; the job doing it (None when the result is up to date).

        Another model, precision, provider or thread count runs the model again (an
        engine job). Refinement and the look of the output (background, mask only,
        decontamination) are redone from the model's mask on the output thread.
        """
        settings = self._settings()
        config, options = settings.engine(), settings.compose()
        fmt = settings.output_format
        if entry.cutout.job is not None:
            running = self.engine.job(entry.cutout.job)
            if running is None or running.tag[-1] == config:
                # Ending now, or making it with these settings: its end brings the rest
                # up to date (the window asks again).
                return running
            return self.process(entry)
        p = entry.processed
        if p is None:
            return None
        stage = p.stage_for(config, options, fmt)
        if stage is None:
            return None
        if stage == "infer":
            return self.process(entry)
        if entry.cutout.restage_failed == (config, options, fmt):
            return None  # it failed for these settings, and was reported: no retry loop
        if entry.cutout.restage_job is not None:
            pending = self._restage_job(entry)
            if pending is not None and pending.tag[2:] == (config, options, fmt):
                return pending
            self._cancel_restage(entry)
        if entry.editing.busy:
            return None  # the edits being applied first: the last one's end asks again
        edits = entry.edits or None
        if stage == "refine" and edits and any(needs_model(op) for op in edits.operations):
            # Box edits are replayed on the new mask with the model.
            job = self.engine.submit(
                "restage",
                lambda ctx: restage(
                    ctx, p, config, options, edits, self.worker.remover(ctx, config), fmt
                ),
                tag=("restage", entry.item_id, config, options, fmt),
                on_end=self._on_restage_end,
            )
        else:
            job = self.output.submit(
                "restage",
                lambda ctx: restage(ctx, p, config, options, edits, fmt=fmt),
                tag=("restage", entry.item_id, config, options, fmt),
                on_end=self._on_restage_end,
            )
        entry.cutout.restage_started(job.id)
        return job

    def _restage_job(self, entry: QueueEntry) -> Job[Processed] | None:
        job_id = entry.cutout.restage_job
        if job_id is None:
            return None
        return self.output.job(job_id) or self.engine.job(job_id)

    def _cancel_restage(self, entry: QueueEntry) -> None:
        job_id = entry.cutout.restage_job
        if job_id is not None:
            # Job ids are unique across runners: only the one holding it cancels it.
            self.output.cancel(job_id)
            self.engine.cancel(job_id)
            entry.cutout.take_restage()

    # -- the user's edits ------------------------------------------------------------
    def edit(self, entry: QueueEntry, command: Command) -> bool:
        """The user's ``command`` on ``entry``'s edits (apply an operation, remove one,
        undo, redo). False when there is nothing to do (no result yet, nothing to undo or
        redo, no such operation).

        The command counts at once on the image's history (``entry.editing`` says what
        the user asked for, whatever is still being applied), then its move is applied
        after the image's earlier ones, each as a job: :attr:`edited` tells when.
        """
        p = entry.processed
        if p is None or entry.status in (Status.FAILED, Status.STOPPED):
            return False  # nothing shown to edit, or not what the edits would build on
        height, width = p.result.mask.shape
        if not entry.editing.request(command, (width, height)):
            return False
        self.queue.changed(entry)
        self._pump(entry)
        return True

    def edits_busy(self, entry: QueueEntry) -> bool:
        """Edits of ``entry`` are still being applied."""
        return entry.editing.busy

    def _pump(self, entry: QueueEntry) -> None:
        """Start ``entry``'s next edit request, unless one runs or its result is being made
        again (the requests then wait for the new result)."""
        editing, cutout = entry.editing, entry.cutout
        if editing.job is not None or cutout.job is not None or cutout.restage_job is not None:
            return
        p = entry.processed
        if p is None:
            editing.withdraw()  # in the edits: replayed when the result is remade
            return
        if editing.pending:
            editing.next_request(lambda move: self._submit_edit(entry, p, move))

    def _submit_edit(self, entry: QueueEntry, p: Processed, move: Move) -> int:
        """Apply ``move`` to ``p`` (``entry``'s result) as a job; its id."""
        config = p.config
        clicks = entry.editing.clicks
        tag = ("edit", entry.item_id, move)
        if move.runs_model:
            job = self.engine.submit(
                "edit",
                lambda ctx: apply_edit(ctx, p, move, self.worker.remover(ctx, config), clicks),
                tag=tag,
                on_end=self._on_edit_end,
            )
        else:
            job = self.output.submit(
                "edit",
                lambda ctx: apply_edit(ctx, p, move, None, clicks),
                tag=tag,
                on_end=self._on_edit_end,
            )
        self._edit_on[job.id] = p
        return job.id

    def prepare(self, config: EngineConfig) -> Job[SessionInfo] | None:
        """The job that obtains and loads ``config``'s model, for work to wait on.

        None when it is known to be ready. One such job per model at a time: every image
        queued meanwhile waits for it, so a download runs once, its Cancel stops the work
        waiting for it, and a model that cannot be had is tried once, not once per image.
        The int8 model waits for its fp32 one (made from it).
        """
        key = model_key(config)
        job = self._prepare_jobs.get(key)
        if job is not None and job.id in self._released:
            job = None  # stopping because nothing needed it: a new request starts anew
        # A failure counts from the moment the engine thread knows it: work asked for
        # before its end reaches this thread (and forgets the model) waits on it and is
        # blocked by it, instead of trying the model a second time.
        if job is not None and job.state in (JobState.PENDING, JobState.RUNNING, JobState.FAILED):
            return job
        if job is not None and job.state is JobState.DONE:
            return None
        fp32 = self.prepare(replace(key, precision="fp32")) if key.precision == "int8" else None
        job = self.engine.submit(
            "prepare",
            lambda ctx: self.worker.check_model(ctx, key),
            tag=("prepare", None, key),
            on_end=self._on_prepare_end,
            on_progress=self.report_progress,
            after=fp32,
        )
        self._prepare_jobs[key] = job
        return job

    def release_unneeded(self, why: str) -> list[int]:
        """Cancel the model preparations (downloads, int8 builds) that no job waits for
        any more, and say so with ``why`` (what the user changed); their job ids.

        A preparation belongs to the work that waits for it: the images of one model, a
        comparison, a batch. When that work was withdrawn (other sides chosen for the
        comparison, another model or precision set, the images removed), the preparation
        stops at its next check, leaving nothing half-made, and the work asked for
        instead runs next. One still waited for by other work (a batch, other images)
        goes on. Called once the new work is submitted, so that it keeps what it shares
        with the old.
        """
        released: list[Job[SessionInfo]] = []
        changed = True
        while changed:  # an int8 build released leaves its fp32 download unneeded too
            changed = False
            for job in list(self._prepare_jobs.values()):
                if (
                    job.id in self._released
                    or job.state not in (JobState.PENDING, JobState.RUNNING)
                    or job.token.cancelled
                    or self.engine.waiting_for(job)
                ):
                    continue
                if self.engine.cancel(job.id):
                    self._released.add(job.id)
                    released.append(job)
                    changed = True
        if not released:
            return []
        # The one the status bar shows (it ran) is the one to name; others waited for it.
        shown = next((j for j in released if j.state is JobState.RUNNING), released[0])
        config = shown.tag[-1]
        if config.precision == "int8":
            what = f"Stopped making the int8 version of {config.model}"
        else:
            what = f"Stopped obtaining the model {config.model}"
        message = f"{what}: nothing waits for it any more ({why}); nothing half-made was kept."
        ids = [j.id for j in released]
        self.released.emit(message, ids)
        return ids

    def release_for_settings(self) -> list[int]:
        """:meth:`release_unneeded` after the model settings changed."""
        return self.release_unneeded(f"the setting is now {side_name(self._settings().engine())}")

    def release_for_sides(self, sides: tuple[Side, Side]) -> list[int]:
        """:meth:`release_unneeded` after the comparison's sides changed."""
        a, b = compare_pair(self._settings().engine(), sides)
        return self.release_unneeded(f"the comparison is now {side_name(a)} | {side_name(b)}")

    def forget_model(self, config: EngineConfig) -> None:
        """The model of ``config`` failed: the next work that needs it prepares it again."""
        self._prepare_jobs.pop(model_key(config), None)

    def requeue_waiting(self) -> None:
        """Images still waiting run with the settings as they are now (they just changed).

        Comparisons depend on the model: those running or done are dropped, to be made
        again when shown. Finished images made with other model settings say they are
        out of date (:meth:`mark_out_of_date`).
        """
        self.mark_out_of_date()
        for entry in self.queue.entries():
            job_id = entry.cutout.job
            job = self.engine.job(job_id) if job_id is not None else None
            if job is not None and job.state is JobState.PENDING:
                self.process(entry)
            dropped = entry.comparison.outdated()
            if dropped is not None:
                self.engine.cancel(dropped)

    def mark_out_of_date(self) -> None:
        """Each finished image whose result was made with other model settings (model,
        precision, providers, threads) than the current ones is marked out of date in
        the queue, and one made with them again is not: it is made again when shown or
        saved, and its row says so until then. One whose file was written with them
        (Save All after the change) is not either: what is on disk is up to date."""
        key = model_key(self._settings().engine())
        for entry in self.queue.entries():
            written = entry.last_save.made_with
            stale = (
                entry.status is Status.DONE
                and entry.cutout.made_with not in (None, key)
                and not (entry.saved and written is not None and model_key(written[0]) == key)
            )
            if entry.cutout.mark_out_of_date(stale):
                self.queue.changed(entry)

    def reprocess(self) -> None:
        """Every image again with the current settings; comparisons made again when shown."""
        for entry in self.queue.entries():
            self.drop_comparison(entry)
            self.process(entry)

    def stop(self, entry: QueueEntry) -> None:
        """Cancel the work for ``entry`` (queued jobs are withdrawn, a running one stops),
        and the model preparations that only it waited for."""
        for job_id in (entry.cutout.take_job(), entry.comparison.take_job()):
            if job_id is not None:
                self.engine.cancel(job_id)
        self._cancel_restage(entry)
        entry.editing.withdraw()
        self.release_unneeded("the images that needed it were removed from the queue")

    def check_settled(self) -> None:
        busy = any(
            e.status in (Status.QUEUED, Status.PROCESSING)
            or e.comparison.job is not None
            or e.cutout.restage_job is not None
            or e.editing.busy
            for e in self.queue.entries()
        )
        if not busy:
            self.settled.emit()

    # -- ends ------------------------------------------------------------------------
    def report_progress(self, job_id: int, payload: Any) -> None:
        if isinstance(payload, Preparing):
            self.preparing.emit(job_id, payload)

    def _on_started(self, job: Job[Any]) -> None:
        if job.kind != "process":
            return
        entry = self.queue.get(job.tag[1])
        if entry is not None and entry.cutout.job == job.id:
            entry.cutout.started()
            self.queue.changed(entry)
            self.changed.emit(entry)

    def _on_prepare_end(self, end: JobEnd[SessionInfo]) -> None:
        released = end.job_id in self._released
        self._released.discard(end.job_id)
        if end.ok:
            self.prepared.emit(end.tag[-1])
        elif end.state is JobState.FAILED:
            key = model_key(end.tag[-1])
            current = self._prepare_jobs.get(key)
            if current is not None and current.id == end.job_id:
                self.forget_model(key)  # not a newer job asked for since
            if not released:  # a failure of work nobody waits for is nobody's news
                self.failed.emit(end)

    def _entry_for(
        self, end: JobEnd[Any], ended: Callable[[QueueEntry], bool]
    ) -> QueueEntry | None:
        """The entry a job's end is for, if that job is still the one it waits on
        (``ended`` asks the record holding the job, which then forgets it)."""
        entry = self.queue.get(end.tag[1])
        if entry is None or not ended(entry):
            return None  # removed from the queue, or superseded by newer work
        return entry

    def _tell_user(self, end: JobEnd[Any]) -> None:
        """A job's own failure beyond the queue's row: its model's (once), or a bug's. A bad
        image stays in the queue; a job blocked by its model's failure was reported there."""
        if end.blocked_by is None and (end.details or isinstance(end.error, ModelError)):
            self.failed.emit(end)

    def _ended(self, entry: QueueEntry) -> None:
        """One of ``entry``'s jobs ended: its row, the window, and whether all is done."""
        self.queue.changed(entry)
        self.changed.emit(entry)
        self.check_settled()

    def _on_process_end(self, end: JobEnd[Processed]) -> None:
        entry = self._entry_for(end, lambda e: e.cutout.end_job(end.job_id))
        if entry is None:
            return
        cause = end.cause
        if end.ok:
            p = end.result
            made_with = model_key(p.config)
            out_of_date = made_with != model_key(self._settings().engine())
            entry.cutout.done(p, made_with, out_of_date)
            self.queue.keep_loaded(entry)
            self._pump(entry)  # edits asked for while it was being made
        elif cause.state is JobState.FAILED:
            # Its own failure, or its model's (reported once, by the model's job).
            entry.cutout.failed(cause.message)
            self.queue.forget_result(entry)  # never an old cutout under a new failure
            self._tell_user(end)
        else:
            entry.cutout.stopped(_stopped_reason(cause, end))
        if not end.ok:
            # The edits asked for meanwhile are in entry.edits: the next result made
            # replays them (the one shown, if any, is not theirs to build on).
            entry.editing.withdraw()
        self._ended(entry)

    def _on_restage_end(self, end: JobEnd[Processed]) -> None:
        entry = self._entry_for(end, lambda e: e.cutout.end_restage(end.job_id))
        if entry is None:
            return
        if end.ok:
            entry.cutout.restaged(end.result)
            self.queue.keep_loaded(entry)
        elif end.state is JobState.FAILED:
            entry.cutout.restage_failed_for(end.tag[2:])
            self.failed.emit(end)  # composing never fails on good data: a bug, or no memory
        self._pump(entry)
        self._ended(entry)

    def _on_edit_end(self, end: JobEnd[Edited]) -> None:
        applied_to = self._edit_on.pop(end.job_id, None)
        entry = self._entry_for(end, lambda e: e.editing.end_job(end.job_id))
        if entry is None:
            return
        move: Move = end.tag[2]
        box = None
        if end.ok and entry.processed is applied_to:
            entry.cutout.replace(end.result.processed)
            box = end.result.box
            self.queue.keep_loaded(entry)
        elif not end.ok and applied_to is not None:
            # What the editor holds is what took effect; the requests after it are
            # withdrawn (they may have built on it).
            editor = applied_to.editor
            entry.editing.took_effect(editor.history if editor is not None else None)
            if end.state is JobState.FAILED:
                self.failed.emit(end)
        self._pump(entry)
        if not self.edits_busy(entry):
            self.update(entry)  # settings changed while the edits were applied
        self.queue.changed(entry)
        self.edited.emit(entry, box, move)
        self.check_settled()

    def _on_compare_end(self, end: JobEnd[Compared]) -> None:
        entry = self._entry_for(end, lambda e: e.comparison.end_job(end.job_id))
        if entry is None:
            return
        cause = end.cause
        if end.ok:
            entry.comparison.done(end.result)
            if entry.processed is not None:
                self.queue.keep_loaded(entry)
        elif cause.state is JobState.FAILED:
            entry.comparison.failed(cause.message)
            self._tell_user(end)
        else:
            entry.comparison.was_cancelled()
        self.changed.emit(entry)
        self.check_settled()


def _stopped_reason(cause: JobEnd[Any], end: JobEnd[Any]) -> str:
    """Why an image did not run: the model preparation it waited for was cancelled."""
    if cause is end:
        return "Stopped before it ran."
    config = cause.tag[-1]
    again = app_words(" {reprocess} tries again.")
    return f"Not processed: you cancelled preparing the model {config.model}.{again}"
