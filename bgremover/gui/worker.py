"""The engine's side of the app's jobs: what runs on the engine thread, and what it returns.

The GUI never calls ONNX Runtime. It submits these methods as jobs to a
:class:`~bgremover.gui.jobs.JobRunner`; they run one at a time on its thread,
which alone creates sessions, all from one :class:`~bgremover.network.session.SessionPool`
owned here. Results carry display-ready images made on that thread, so the GUI
thread only shows them; their types are in :mod:`bgremover.gui.results`, which
imports none of the engine.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path

import numpy as np
from PySide6.QtGui import QImage

from ..compare.comparison import Comparison, compare
from ..compare.report import DEFAULT_HEAT_SCALE, heatmap
from ..engine.batch import BatchFinished, ItemDone, ItemFailed, ItemSkipped, Tally, run_batch
from ..engine.clicking import ClickModel
from ..engine.pipeline import EngineConfig, Remover, Result, TaskProgress
from ..engine.plan import plan_batch
from ..export.compose import ComposeOptions, enlargement
from ..export.options import Length
from ..export.output import FORMATS, SourceRecord, encoded_preview, write_output
from ..files.imaging import LoadedImage
from ..network.guard import summary as guard_summary
from ..network.session import SessionInfo, SessionPool
from ..network.store import DownloadCancelled, ModelStore
from ..touchup.edit import Editor, Edits, Move, Operation
from .imageconv import thumbnail, to_display, to_qimage
from .jobs import JobContext
from .results import (
    BatchProgress,
    BatchRequest,
    ClickReady,
    Compared,
    Edited,
    ModelSegmenter,
    Preparing,
    Processed,
    Saved,
)

Source = Path | LoadedImage


def photo_framed(options: ComposeOptions) -> ComposeOptions:
    """``options`` at the photo's size and frame: no crop, canvas or size limit."""
    return replace(options, crop=False, canvas=None, aspect=None, max_size=None, margin=Length())


def output_pixels(result: Result, options: ComposeOptions, fmt: str) -> np.ndarray:
    """The output's pixels as Save writes them in ``fmt`` (what the Result view shows)."""
    composed = result.compose_array(options)
    writable = composed.ndim == 2 or composed.shape[2] != 4 or FORMATS[fmt].alpha
    # A format that cannot hold the output (JPEG and transparency) writes nothing: the
    # Export panel says so, and the view shows the output as composed.
    return encoded_preview(composed, fmt, options) if writable else composed


def output_images(
    result: Result, options: ComposeOptions, fmt: str
) -> tuple[QImage, QImage | None]:
    """The display image of the output as Save writes it in ``fmt``, and the one edit
    mode shows when the output is cropped or on a canvas: the output in the photo's
    frame (None when it is in that frame already). No copy of the pixels is kept beside
    the display image."""
    output = to_display(output_pixels(result, options, fmt))
    framed = photo_framed(options)
    if framed == options:  # the photo's frame already (a lossy format's pixels do too)
        return output, None
    return output, to_display(result.compose_array(framed))


def needs_model(op: Operation | None) -> bool:
    """Whether applying ``op`` runs the model, as its tool's record says (a box does;
    clicks need none)."""
    return op is not None and op.spec.needs_model


def start_editor(
    result: Result,
    refine: bool,
    edits: Edits | None,
    remover: Remover | None,
    clicks: ClickReady | None = None,
) -> tuple[Editor, ModelSegmenter]:
    """An Editor on ``result`` (made without edits) with ``edits`` replayed on it.

    ``remover`` runs the model for replayed box edits (engine thread only); ``clicks``
    is the click model bound to the photo, for clicks made with it.
    """
    segmenter = ModelSegmenter()
    # Without the input's own transparency, the unedited output alpha is the edits' base.
    image = result.image
    base = result.alpha if image.alpha is None else result.edit_base(refine)
    segmenter.remover = remover
    try:
        prompt = clicks.prompt if clicks is not None else None
        editor = Editor(image.rgb, base, edits or None, segmenter, prompt)
    finally:
        segmenter.remover = None
    return editor, segmenter


def processed(
    result: Result,
    config: EngineConfig,
    options: ComposeOptions,
    earlier: Processed | None = None,
    editor: Editor | None = None,
    segmenter: ModelSegmenter | None = None,
    fmt: str = "png",
    ran: tuple[str, ...] | None = None,
) -> Processed:
    """Display images for ``result``; those of ``earlier`` (the same photo) that still hold
    are reused: the original always, the mask and thumbnail when the alpha is the same,
    and what ran (:func:`models_ran`) unless ``ran`` says it."""
    rgb, alpha = result.image.rgb, result.alpha
    kept = earlier if earlier is not None and earlier.result.alpha is alpha else None
    output, edit_output = output_images(result, options, fmt)
    return Processed(
        result,
        config,
        options,
        original=earlier.original if earlier is not None else to_display(rgb),
        output=output,
        mask=kept.mask if kept is not None else to_qimage(alpha),
        thumb=kept.thumb if kept is not None else thumbnail(rgb, alpha),
        fmt=fmt,
        edit_output=edit_output,
        editor=editor,
        segmenter=segmenter,
        enlarged=enlargement(alpha, options),
        ran=ran if ran is not None else earlier.ran if earlier is not None else (),
    )


def models_ran(remover: Remover, result: Result) -> tuple[str, ...]:
    """Each model that made ``result``'s mask, with the precision it ran in, for a
    combined model ("u2netp fp32", "isnet-imgly int8"): Best's own name says neither.
    () for a model of its own (the result says both)."""
    if not remover.members:
        return ()
    precisions = {m.spec.name: m.precision for m in remover.members}
    unsure = result.guard is not None and result.guard.ran_fp32
    ran = []
    for name in result.models:
        precision = precisions.get(name, result.precision)
        if precision == "int8" and unsure:
            precision = "fp32 (int8 was unsure of it)"
        ran.append(f"{name} {precision}")
    return tuple(ran)


def apply_edit(
    ctx: JobContext,
    earlier: Processed,
    move: Move,
    remover: Remover | None = None,
    clicks: ClickReady | None = None,
) -> Edited:
    """One move of the image's edit history on ``earlier``'s editor, which takes the
    history the move was counted on as its own (an editor remade since, as a result made
    again replays the edits without their history, makes it by replaying).

    Brushes, clicks, reset, load and undo run on the output thread; box edits, and a
    change that replays one, on the engine thread, with its ``remover``. The display
    images are made here, whole; the GUI thread redraws only ``box`` of what it shows.
    """
    editor, segmenter = earlier.editor, earlier.segmenter
    if editor is None or segmenter is None:
        editor, segmenter = start_editor(earlier.result, earlier.config.refine, None, None)
    if clicks is not None:
        editor.prompt = clicks.prompt
    segmenter.remover = remover
    try:
        box = editor.make(move)
    finally:
        segmenter.remover = None
    result = earlier.result.with_edited_alpha(editor.alpha)
    if box is None:
        return Edited(replace(earlier, result=result, editor=editor, segmenter=segmenter), None)
    rgb, alpha = result.image.rgb, result.alpha
    output, edit_output = output_images(result, earlier.options, earlier.fmt)
    done = replace(
        earlier,
        result=result,
        output=output,
        edit_output=edit_output,
        mask=to_qimage(alpha),
        thumb=thumbnail(rgb, alpha),
        editor=editor,
        segmenter=segmenter,
        enlarged=enlargement(alpha, earlier.options),
    )
    return Edited(done, box)


#: The model bytes the app's sessions may hold at once (see :class:`SessionPool`).
SESSION_BUDGET = 2_100_000_000


def compared(c: Comparison, pair: tuple[EngineConfig, EngineConfig]) -> Compared:
    """``c`` with the pictures the comparison view shows, made here, off the GUI thread."""
    return Compared(
        c,
        pair,
        a_mask=to_qimage(c.a.mask),
        b_mask=to_qimage(c.b.mask),
        a_cut=to_display(c.a.compose_array()),
        b_cut=to_display(c.b.compose_array()),
        a_raw=to_qimage(c.raw_a),
        b_raw=to_qimage(c.raw_b),
        heat=to_qimage(heatmap(c.diff, DEFAULT_HEAT_SCALE)),
    )


class Worker:
    """The job bodies of the engine thread, and the session pool they share."""

    def __init__(self, store: ModelStore | None = None, sessions: int = 3) -> None:
        #: Every session the app makes: bounded in number and in model bytes (two 1 GB
        #: models side by side fit; a third, or a switch, releases the oldest).
        self.pool = SessionPool(capacity=sessions, budget=SESSION_BUDGET)
        self.store = store
        #: The click model, loaded on the first photo touched up with it.
        self._click_model: ClickModel | None = None

    def remover(self, ctx: JobContext, config: EngineConfig) -> Remover:
        """A Remover for ``config`` whose model preparation reports to, and stops with, ``ctx``."""
        return Remover.from_config(
            config, pool=self.pool, store=self.store, progress=_preparing(ctx, config)
        )

    def check_model(self, ctx: JobContext, config: EngineConfig) -> SessionInfo:
        """Obtain and load the model of ``config``: a file the user picked is tried here."""
        return self.remover(ctx, config).load()

    def process(
        self,
        ctx: JobContext,
        source: Source,
        config: EngineConfig,
        options: ComposeOptions,
        edits: Edits | None = None,
        fmt: str = "png",
        clicks: ClickReady | None = None,
    ) -> Processed:
        """The result of ``source``, with the user's ``edits`` (if any) replayed on it,
        previewed as a ``fmt`` file. Edits holding clicks made with the click model replay
        with ``clicks`` (the model bound to this photo), or bind it here."""
        remover = self.remover(ctx, config)
        remover.load()
        ctx.token.check()  # withdrawn while the model was prepared
        result = remover.remove(source)
        ctx.token.check()
        ran = models_ran(remover, result)
        if not edits:
            return processed(result, config, options, fmt=fmt, ran=ran)
        if edits.click_models and clicks is None:
            clicks = self.bind_clicks(ctx, result.image.rgb)
        editor, segmenter = start_editor(result, config.refine, edits, remover, clicks)
        ctx.token.check()
        result = result.with_edited_alpha(editor.alpha)
        return processed(result, config, options, None, editor, segmenter, fmt, ran)

    def bind_clicks(self, ctx: JobContext, rgb: np.ndarray) -> ClickReady:
        """The click model bound to the photo ``rgb``: obtained (reporting ``("download",
        done, total)``) and loaded on first use, then the photo encoded (``("encode", 0,
        None)``); a cancel stops the download, or drops the embedding once made."""
        if self._click_model is None:
            last = [0.0]

            def progress(done: int, total: int | None) -> None:
                if ctx.token.cancelled:
                    raise DownloadCancelled()  # the store leaves nothing behind
                now = time.monotonic()
                if now - last[0] > 0.05:
                    last[0] = now
                    ctx.report(("download", done, total))

            self._click_model = ClickModel(store=self.store, progress=progress)
        ctx.token.check()
        ctx.report(("encode", 0, None))
        embedding = self._click_model.encode(rgb)
        ctx.token.check()
        model = self._click_model
        return ClickReady(model.name, model.prompter(embedding), embedding.nbytes)

    def compare(
        self, ctx: JobContext, source: Source, a: EngineConfig, b: EngineConfig
    ) -> Compared:
        """``source`` through side A and side B; models not yet had are obtained here,
        reporting their progress (and stopping with the job)."""
        side_a = self.remover(ctx, a)
        side_b = self.remover(ctx, b)
        side_a.load()
        ctx.token.check()
        side_b.load()
        ctx.token.check()
        return compared(compare(side_a, side_b, source), (a, b))

    def batch(
        self, ctx: JobContext, request: BatchRequest
    ) -> Generator[BatchProgress, None, BatchProgress]:
        """The batch as progress events; its result is the final "finished" event.

        Cancelling the job closes this generator between events, which closes the
        engine's batch: images being written are finished, nothing else starts.
        """
        plan = plan_batch(list(request.inputs), request.output, request.fmt)
        if request.edits:
            edited = dict(request.edits)
            jobs = tuple(
                replace(j, edits=edited.get(j.source.resolve(), j.edits)) for j in plan.jobs
            )
            plan = replace(plan, jobs=jobs)
        total = len(plan.jobs)
        yield BatchProgress("started", total=total, problems=plan.problems)
        if not plan.jobs:
            return BatchProgress("finished", failed=len(plan.problems))
        remover = self.remover(ctx, request.config)
        stream = run_batch(plan.jobs, remover, request.options, request.fmt, request.overwrite)
        tally = Tally()  # the counts so far; the batch's own are in BatchFinished
        start = time.monotonic()
        try:
            for event in stream:
                if isinstance(event, ItemDone | ItemSkipped | ItemFailed):
                    tally.add(event)
                    yield BatchProgress(
                        event.kind,
                        event.index,
                        total,
                        event.job.source,
                        event.job.output,
                        getattr(event, "reason", ""),
                        tally.done,
                        tally.skipped,
                        tally.failed,
                        time.monotonic() - start,
                        redone=dict(tally.redone),
                    )
                elif isinstance(event, BatchFinished):
                    return BatchProgress(
                        "finished",
                        total,
                        total,
                        reason=event.stopped or "",
                        done=event.done,
                        skipped=event.skipped,
                        failed=event.failed + len(plan.problems),
                        elapsed=event.seconds,
                        note=guard_summary(event.guarded),
                        redone=dict(event.redone),
                    )
        finally:
            # Cancelled between events: closing the engine's batch (a generator) stops
            # the pipeline's threads.
            if isinstance(stream, Generator):
                stream.close()
        raise AssertionError("run_batch ended without BatchFinished")


def restage(
    ctx: JobContext,
    earlier: Processed,
    config: EngineConfig,
    options: ComposeOptions,
    edits: Edits | None = None,
    remover: Remover | None = None,
    fmt: str = "png",
) -> Processed:
    """``earlier`` brought up to new settings that need no inference: the alpha refined
    again when refinement changed (the user's ``edits`` replayed on the new mask, with
    ``remover`` for box edits: then it runs on the engine thread), then
    composed again (the output thread's job)."""
    ctx.token.check()
    result, editor, segmenter = earlier.result, earlier.editor, earlier.segmenter
    if config.refine != earlier.config.refine:
        result = result.with_refinement(config.refine)  # the new base, unedited
        editor = segmenter = None
        if edits:
            editor, segmenter = start_editor(result, config.refine, edits, remover)
            result = result.with_edited_alpha(editor.alpha)
        ctx.token.check()
    return processed(result, config, options, earlier, editor, segmenter, fmt)


def save(
    ctx: JobContext,
    result: Result,
    options: ComposeOptions,
    path: Path,
    fmt: str,
    config: EngineConfig | None = None,
    edits: Edits | None = None,
) -> Saved:
    """Compose and write a result atomically (the output thread's job). The file records
    the photo it was made from and, given the ``config`` and ``edits`` that made the
    result, its settings, as the command line's outputs do: a batch over the same folder
    with these settings then knows it is this photo's cutout, and `bgremover remove PHOTO
    --edits` with the exported edits writes the same bytes."""
    ctx.token.check()
    record = None
    source = Path(result.image.source)
    if source.is_file():
        made_with = None
        if config is not None:
            made_with = Remover.from_config(config).output_settings(options, fmt, edits)
        try:
            record = SourceRecord.of(source, made_with)
        except OSError:
            record = None  # the photo went away since it was read: save without the record
    written = write_output(
        result.image.rgb,
        result.alpha,
        options,
        path,
        fmt,
        record,
        metadata=result.image.metadata,
    )
    return Saved(path, written)


def composed_image(ctx: JobContext, result: Result, options: ComposeOptions) -> QImage:
    """The composed output as a QImage that owns its pixels, for the clipboard (the output
    thread's job): the clipboard keeps the image after every Python object is gone."""
    ctx.token.check()
    return to_qimage(result.compose_array(options)).copy()


class _Preparing:
    """A model-preparation callback (a :data:`TaskProgress`): reports about every 50 ms,
    stops when cancelled. A combined model's members report through :meth:`for_model`,
    so that the status bar names the model being made ready ("isnet-imgly", not "best")."""

    def __init__(self, ctx: JobContext, config: EngineConfig, model: str = "") -> None:
        self.ctx, self.config, self.model = ctx, config, model
        self._last = 0.0

    def __call__(self, task: str, done: int, total: int | None) -> None:
        if self.ctx.token.cancelled:
            raise DownloadCancelled()  # the store and quantizer leave nothing behind
        now = time.monotonic()
        if now - self._last > 0.05 or (total and done >= total):
            self._last = now
            self.ctx.report(Preparing(self.config, task, done, total, self.model))

    def for_model(self, name: str) -> _Preparing:
        return _Preparing(self.ctx, self.config, name)


def _preparing(ctx: JobContext, config: EngineConfig) -> TaskProgress:
    """A model-preparation callback for ``config`` (see :class:`_Preparing`)."""
    return _Preparing(ctx, config)
