"""The worker: one thread that owns the engine's sessions and reports through signals.

The GUI never calls ONNX Runtime. It sends requests (queued signal -> slot, so
they run one after another on the worker thread) and receives results as
signals. Cancel sets a flag that is checked between images and between
download chunks.
"""

from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtGui import QImage

from ..batch import BatchFinished, ItemDone, ItemFailed, ItemSkipped, run_batch
from ..compose import ComposeOptions
from ..errors import BgRemoverError
from ..imaging import LoadedImage
from ..metrics import fidelity
from ..models import DownloadCancelled
from ..pipeline import EngineConfig, Remover, Result
from ..plan import plan_batch
from ..report import DEFAULT_HEAT_SCALE, heatmap, mask_difference
from ..session import SessionPool
from .imageconv import thumbnail, to_qimage


@dataclass(frozen=True)
class ProcessRequest:
    item_id: int
    source: Path | LoadedImage
    config: EngineConfig


@dataclass(frozen=True)
class CompareRequest:
    item_id: int
    source: Path | LoadedImage
    config: EngineConfig


@dataclass(frozen=True)
class BatchRequest:
    inputs: tuple[Path, ...]
    output: Path
    config: EngineConfig
    options: ComposeOptions
    fmt: str
    overwrite: bool = False


@dataclass(frozen=True)
class Processed:
    """A finished image, with display-ready images made on the worker thread."""

    item_id: int
    result: Result
    original: QImage
    cutout: QImage
    mask: QImage
    thumb: QImage


@dataclass(frozen=True)
class Compared:
    item_id: int
    fp32: Result
    int8: Result
    metrics: dict[str, Any]
    size: tuple[int, int]
    fp32_mask: QImage
    int8_mask: QImage
    fp32_raw: QImage
    int8_raw: QImage
    #: |Δα| and |Δraw| as uint8 (255 = 1.0), for heatmaps at any scale.
    diff: np.ndarray
    raw_diff: np.ndarray
    #: The heatmap at the view's default scale, made here to spare the GUI thread.
    heat: QImage


@dataclass(frozen=True)
class BatchProgress:
    """One step of a batch, light enough to cross threads (no image arrays)."""

    kind: str  # started | done | skipped | failed | finished | cancelled
    index: int = 0
    total: int = 0
    source: Path | None = None
    output: Path | None = None
    reason: str = ""
    done: int = 0
    skipped: int = 0
    failed: int = 0
    elapsed: float = 0.0
    problems: tuple[tuple[Path, str], ...] = field(default=())


class Worker(QObject):
    started = Signal(int)
    processed = Signal(object)  # Processed
    failed = Signal(int, str, str)  # item id, message, details (traceback or "")
    compared = Signal(object)  # Compared
    batchProgress = Signal(object)  # BatchProgress
    preparing = Signal(str, str, int, int)  # model, task, done, total (-1: unknown)
    sessionInfo = Signal(str, object)  # "fp32"/"int8", SessionInfo
    busy = Signal(bool)

    def __init__(self) -> None:
        super().__init__()
        self.pool = SessionPool()
        self._cancel = threading.Event()
        self._last_emit = 0.0

    # Called from the GUI thread, directly (not queued: the worker's event loop is
    # busy while it runs a batch). A plain flag, read between images and chunks.
    def cancel(self) -> None:
        self._cancel.set()

    def _remover(self, config: EngineConfig) -> Remover:
        remover = Remover.from_config(
            config,
            pool=self.pool,
            progress=lambda task, done, total: self._progress(config, task, done, total),
        )
        self.sessionInfo.emit(config.precision, remover.load())
        return remover

    def _progress(self, config: EngineConfig, task: str, done: int, total: int | None) -> None:
        if self._cancel.is_set():
            raise DownloadCancelled()
        now = time.monotonic()
        if now - self._last_emit > 0.05 or (total and done >= total):
            self._last_emit = now
            self.preparing.emit(config.model, task, done, -1 if total is None else total)

    @Slot(object)
    def handle(self, request: object) -> None:
        self._cancel.clear()
        self.busy.emit(True)
        try:
            if isinstance(request, ProcessRequest):
                self._guarded(request.item_id, lambda: self._process(request))
            elif isinstance(request, CompareRequest):
                self._guarded(request.item_id, lambda: self._compare(request))
            elif isinstance(request, BatchRequest):
                self._guarded(-1, lambda: self._batch(request))
        finally:
            self.preparing.emit("", "", 0, 0)
            self.busy.emit(False)

    def _guarded(self, item_id: int, work) -> None:
        try:
            work()
        except BgRemoverError as exc:
            self.failed.emit(item_id, str(exc), "")
        except Exception as exc:  # a bug: show it with its traceback, keep running
            self.failed.emit(
                item_id, f"Unexpected error: {type(exc).__name__}: {exc}", traceback.format_exc()
            )

    def _process(self, request: ProcessRequest) -> None:
        self.started.emit(request.item_id)
        remover = self._remover(request.config)
        result = remover.remove(request.source)
        rgb, alpha = result.image.rgb, result.alpha
        cut = result.cutout()
        self.processed.emit(
            Processed(
                request.item_id,
                result,
                original=to_qimage(rgb),
                cutout=to_qimage(np.asarray(cut)),
                mask=to_qimage(alpha),
                thumb=thumbnail(rgb, alpha),
            )
        )

    def _compare(self, request: CompareRequest) -> None:
        self.started.emit(request.item_id)
        base = request.config
        fp32 = self._remover(replace(base, precision="fp32"))
        int8 = self._remover(replace(base, precision="int8"))
        a = fp32.remove(request.source)
        b = int8.remove(a.image)  # the same decoded pixels
        metrics = fidelity(a.mask, b.mask, a.raw, b.raw)
        metrics["infer_fp32_s"] = a.timings["infer"]
        metrics["infer_int8_s"] = b.timings["infer"]
        h, w = a.mask.shape
        diff = mask_difference(a.mask, b.mask)
        raw_a = np.clip(a.raw, 0, 1)
        raw_b = np.clip(b.raw, 0, 1)
        raw_diff = (np.abs(raw_a - raw_b) * 255 + 0.5).astype(np.uint8)
        self.compared.emit(
            Compared(
                request.item_id,
                a,
                b,
                metrics,
                (w, h),
                fp32_mask=to_qimage(a.mask),
                int8_mask=to_qimage(b.mask),
                fp32_raw=to_qimage((raw_a * 255 + 0.5).astype(np.uint8)),
                int8_raw=to_qimage((raw_b * 255 + 0.5).astype(np.uint8)),
                diff=diff,
                raw_diff=raw_diff,
                heat=to_qimage(heatmap(diff, DEFAULT_HEAT_SCALE)),
            )
        )

    def _batch(self, request: BatchRequest) -> None:
        plan = plan_batch(list(request.inputs), request.output, request.fmt)
        total = len(plan.jobs)
        self.batchProgress.emit(BatchProgress("started", total=total, problems=plan.problems))
        if not plan.jobs:
            self.batchProgress.emit(BatchProgress("finished", failed=len(plan.problems)))
            return
        remover = self._remover(request.config)
        stream = run_batch(plan.jobs, remover, request.options, request.fmt, request.overwrite)
        counts = {"done": 0, "skipped": 0, "failed": 0}
        start = time.monotonic()
        for event in stream:
            if isinstance(event, (ItemDone, ItemSkipped, ItemFailed)):
                kind = {ItemDone: "done", ItemSkipped: "skipped", ItemFailed: "failed"}[type(event)]
                counts[kind] += 1
                self.batchProgress.emit(
                    BatchProgress(
                        kind,
                        event.index,
                        total,
                        event.job.source,
                        event.job.output,
                        getattr(event, "reason", ""),
                        elapsed=time.monotonic() - start,
                        **counts,
                    )
                )
            elif isinstance(event, BatchFinished):
                self.batchProgress.emit(
                    BatchProgress(
                        "finished",
                        total,
                        total,
                        reason=event.stopped or "",
                        done=counts["done"],
                        skipped=counts["skipped"],
                        failed=counts["failed"] + len(plan.problems),
                        elapsed=event.seconds,
                    )
                )
            if self._cancel.is_set():
                stream.close()  # between images: the file being written is complete
                self.batchProgress.emit(
                    BatchProgress(
                        "cancelled", total=total, elapsed=time.monotonic() - start, **counts
                    )
                )
                return
