"""Batches: inputs (files and folders) -> a plan of jobs -> a stream of events.

:func:`run_batch` runs the engine's stages as a pipeline on several threads and
is a generator: each yielded event is a point where the consumer (CLI progress
display, GUI worker) may stop by simply not asking for the next one. Outputs
are written atomically, so stopping, cancelling or being killed never leaves a
half-written file, and a rerun skips finished outputs.
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

import numpy as np
from PIL import Image

from .compose import ComposeOptions, compose_array, compose_strips
from .errors import BgRemoverError, DiskFullError, ModelError, UsageError
from .imaging import (
    IMAGE_EXTENSIONS,
    OUTPUT_FORMATS,
    TEMP_SUFFIX,
    LoadedImage,
    is_complete_image,
    read_image,
    write_image,
    write_png_strips,
)
from .pipeline import Remover

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    """One input file and the output file it becomes."""

    source: Path
    output: Path


@dataclass(frozen=True)
class Plan:
    jobs: tuple[Job, ...]
    #: Inputs that cannot be processed, each with the reason.
    problems: tuple[tuple[Path, str], ...] = ()


def is_image_name(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_EXTENSIONS and not path.name.startswith(".")


def walk_images(folder: Path, exclude: Path | None = None) -> list[Path]:
    """Image files under ``folder``, sorted, skipping hidden entries and ``exclude``.

    Symlinked folders are not followed (no loops); symlinked files are read.
    """
    found: list[Path] = []
    excluded = exclude.resolve() if exclude is not None else None
    for root, dirs, files in os.walk(folder):
        root_path = Path(root)
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and (root_path / d).resolve() != excluded
        )
        found.extend(root_path / f for f in sorted(files) if is_image_name(Path(f)))
    return found


def plan_batch(inputs: Sequence[Path], output: Path, fmt: str) -> Plan:
    """Map inputs to output paths.

    - A single input file with ``output`` ending in ``.png``/``.webp`` writes that file.
    - Files go to ``output/<stem>.<fmt>``.
    - One folder is mirrored into ``output``; several folders each get
      ``output/<folder name>/``.
    - Names that would collide (``a.jpg`` and ``a.png``) get the source
      extension added (``a_png.png``); an output never replaces an input.
    """
    if fmt not in OUTPUT_FORMATS:
        raise UsageError(f"Unknown format {fmt!r}; use one of: {', '.join(OUTPUT_FORMATS)}.")
    problems: list[tuple[Path, str]] = []
    pairs: list[tuple[Path, Path]] = []  # (source, wanted output)
    out_resolved = output.resolve()
    folders = [p for p in inputs if p.is_dir()]
    single_file_target = (
        len(inputs) == 1
        and inputs[0].is_file()
        and output.suffix.lower().lstrip(".") in OUTPUT_FORMATS
        and not output.is_dir()
    )
    for item in inputs:
        if item.is_dir():
            if item.resolve() == out_resolved:
                raise UsageError(
                    f"The output folder is the input folder ({item}). Outputs would mix with "
                    "the photos they came from; choose another output folder with -o."
                )
            base = output if len(folders) == 1 else output / item.resolve().name
            for src in walk_images(item, exclude=output):
                rel = src.relative_to(item)
                pairs.append((src, base / rel.parent / f"{src.stem}.{fmt}"))
        elif item.is_file():
            target = output if single_file_target else output / f"{item.stem}.{fmt}"
            pairs.append((item, target))
        elif item.exists():
            problems.append((item, "not a regular file or folder"))
        else:
            problems.append((item, "no such file or folder"))

    input_set = {src.resolve() for src, _ in pairs}
    output_is_folder = not single_file_target
    taken: set[Path] = set()
    jobs: list[Job] = []
    for src, wanted in pairs:
        target = wanted
        if target.resolve() in taken or target.resolve() in input_set:
            ext = src.suffix.lower().lstrip(".") or "noext"
            target = wanted.with_name(f"{src.stem}_{ext}{wanted.suffix}")
        if target.resolve() in taken or target.resolve() in input_set:
            problems.append((src, f"its output {target} would overwrite another file of this run"))
            continue
        if not target.resolve().is_relative_to(
            out_resolved if output_is_folder else out_resolved.parent
        ):
            problems.append(
                (
                    src,
                    f"its output {target} would be written outside {output} "
                    "(through a symbolic link); nothing written",
                )
            )
            continue
        taken.add(target.resolve())
        jobs.append(Job(src, target))
    return Plan(tuple(jobs), tuple(problems))


@dataclass(frozen=True)
class BatchStarted:
    total: int


@dataclass(frozen=True)
class ItemDone:
    index: int
    total: int
    job: Job
    #: Seconds per stage: read, preprocess, infer, postprocess, refine, write.
    timings: Mapping[str, float]
    bytes_written: int
    #: From the start of reading to the file written (stages overlap other images).
    seconds: float


@dataclass(frozen=True)
class ItemSkipped:
    index: int
    total: int
    job: Job
    reason: str


@dataclass(frozen=True)
class ItemFailed:
    index: int
    total: int
    job: Job
    reason: str


@dataclass(frozen=True)
class BatchFinished:
    done: int
    skipped: int
    failed: int
    seconds: float
    #: Set when the batch stopped early (disk full): what happened and what to do.
    stopped: str | None = None
    failures: tuple[tuple[Path, str], ...] = field(default=())


BatchEvent = BatchStarted | ItemDone | ItemSkipped | ItemFailed | BatchFinished


def remove_stale_temp_files(jobs: Sequence[Job]) -> int:
    """Delete unfinished atomic-write files left in the output folders by a killed run."""
    removed = 0
    for folder in {job.output.parent for job in jobs}:
        if not folder.is_dir():
            continue
        for leftover in folder.glob(f".*{TEMP_SUFFIX}"):
            with contextlib.suppress(OSError):
                leftover.unlink()
                removed += 1
    return removed


def write_output(
    rgb: np.ndarray, alpha: np.ndarray, options: ComposeOptions, path: Path, fmt: str
) -> int:
    """Compose the output for ``options`` and write it atomically; returns its bytes.

    PNG is composed and compressed a strip of rows at a time, so the finished
    image is never whole in memory; WebP is composed whole and written by Pillow.
    """
    if fmt == "png":
        height, width = alpha.shape
        channels, strips = compose_strips(rgb, alpha, options)
        return write_png_strips(path, width, height, channels, strips)
    return write_image(compose_array(rgb, alpha, options), path, fmt)


def default_finishers() -> int:
    """Finishing threads (refine, compose, encode, write): one per core, at most 4.

    On two cores two finishers were as fast as three and a little faster than one
    (README, "Performance"); the pixel budget, not their number, bounds memory.
    """
    return max(1, min(4, (os.cpu_count() or 2)))


#: Pixels of the images in flight at once (read, in the model, or being written),
#: unless run_batch is told otherwise: about two 12-megapixel photos. An image in flight
#: holds about 6 bytes per pixel (its colours, mask and alpha; outputs are written in
#: strips): two 12 MP photos peaked at 136 MB of arrays. However large the photos, this
#: bounds that memory; small photos still fill every stage.
DEFAULT_PIXELS_IN_FLIGHT = 25_000_000


class _Budget:
    """Admits images while the pixels in flight stay under a limit (always one at least)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.cond = threading.Condition()

    def acquire(self, pixels: int, stop: threading.Event) -> bool:
        with self.cond:
            while self.used and self.used + pixels > self.limit:
                if stop.is_set():
                    return False
                self.cond.wait(0.05)
            self.used += pixels
            return True

    def release(self, pixels: int) -> None:
        with self.cond:
            self.used -= pixels
            self.cond.notify_all()


def _pixels(path: Path) -> int:
    """The image's pixel count from its header (no decoding); 0 if it cannot be read."""
    try:
        with Image.open(path) as img:
            return img.width * img.height
    except Exception:
        return 0


@dataclass
class _Item:
    index: int
    job: Job
    started: float
    pixels: int = 0
    loaded: LoadedImage | None = None
    batch: np.ndarray | None = None
    raw: np.ndarray | None = None
    timings: dict[str, float] = field(default_factory=dict)


_DONE = object()  # end of a stage's input


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
    small photos keep every stage busy.

    Items complete out of order: each event carries its job's ``index`` (1-based,
    in ``jobs`` order). Every stage calls the same :class:`Remover` methods as
    :meth:`Remover.remove`, so results are those of the one-image engine.

    A failed item is reported and the batch goes on. A model that cannot be
    obtained or loaded raises before the first item; a full disk ends the batch
    with ``BatchFinished.stopped`` set. Closing the generator (not asking for the
    next event) stops the batch: images being written are finished, the rest are
    not started, and a rerun resumes.
    """
    options = options or ComposeOptions()
    total = len(jobs)
    start = time.perf_counter()
    stale = remove_stale_temp_files(jobs)
    if stale:
        log.info("Removed %d unfinished file(s) left by an interrupted run.", stale)
    remover.load()  # a model that cannot load fails here, with its own error
    yield BatchStarted(total)
    if not jobs:
        yield BatchFinished(0, 0, 0, time.perf_counter() - start)
        return

    n_finish = max(1, finishers or default_finishers())
    stop = threading.Event()
    to_infer: queue.Queue = queue.Queue(maxsize=max(1, depth))
    to_finish: queue.Queue = queue.Queue(maxsize=max(1, depth))
    # Bounded too: when the consumer is slow (or has stopped), finishers wait instead
    # of writing ahead, so a cancel leaves at most a few more files than were reported.
    events: queue.Queue = queue.Queue(maxsize=max(1, depth))
    fatal: list[BaseException] = []
    disk_full: list[str] = []
    budget = _Budget(pixels_in_flight)

    def put(q: queue.Queue, item: object) -> bool:
        """Hand ``item`` on, unless the batch stops while waiting for room.

        End markers are always delivered: each stage drains its input until it
        sees one, and the consumer drains ``events`` until all stages are joined.
        """
        while True:
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                if stop.is_set() and item is not _DONE:
                    return False

    def fail(item: _Item, exc: BaseException) -> None:
        budget.release(item.pixels)
        if isinstance(exc, BgRemoverError):
            reason = str(exc)
        else:  # a bug or an unforeseen input: report it, keep going
            log.error("Unexpected error on %s", item.job.source, exc_info=exc)
            reason = f"unexpected error ({type(exc).__name__}: {exc}); please report it"
        put(events, ItemFailed(item.index, total, item.job, reason))
        if isinstance(exc, DiskFullError):
            disk_full.append(reason)
            stop.set()

    def read() -> None:
        try:
            for index, job in enumerate(jobs, 1):
                if stop.is_set():
                    break
                if not overwrite and is_complete_image(job.output):
                    put(events, ItemSkipped(index, total, job, "output already exists"))
                    continue
                item = _Item(index, job, time.perf_counter(), _pixels(job.source))
                if not budget.acquire(item.pixels, stop):
                    break
                try:
                    t0 = time.perf_counter()
                    item.loaded = read_image(job.source)
                    item.timings["read"] = time.perf_counter() - t0
                    item.batch, item.timings["preprocess"] = remover.prepare(item.loaded)
                except Exception as exc:
                    fail(item, exc)
                    continue
                if not put(to_infer, item):
                    budget.release(item.pixels)
                    break
        except BaseException as exc:
            fatal.append(exc)
            stop.set()
        finally:
            put(to_infer, _DONE)

    def infer() -> None:
        try:
            while (item := to_infer.get()) is not _DONE:
                if stop.is_set():
                    budget.release(item.pixels)
                    continue  # drain: the batch is stopping
                try:
                    t0 = time.perf_counter()
                    item.raw = remover.infer(item.batch)
                    item.timings["infer"] = time.perf_counter() - t0
                    item.batch = None
                except ModelError as exc:
                    budget.release(item.pixels)
                    fatal.append(exc)
                    stop.set()
                    continue
                except Exception as exc:
                    fail(item, exc)
                    continue
                if not put(to_finish, item):
                    budget.release(item.pixels)
        except BaseException as exc:
            fatal.append(exc)
            stop.set()
        finally:
            for _ in range(n_finish):
                put(to_finish, _DONE)

    def finish() -> None:
        try:
            while (item := to_finish.get()) is not _DONE:
                if stop.is_set():
                    budget.release(item.pixels)
                    continue
                try:
                    result = remover.finish(item.loaded, item.raw, item.timings)
                    item.loaded = item.raw = None
                    t0 = time.perf_counter()
                    rgb, alpha, timings = result.image.rgb, result.alpha, dict(result.timings)
                    del result  # drops the unrefined mask
                    written = write_output(rgb, alpha, options, item.job.output, fmt)
                    timings["write"] = time.perf_counter() - t0
                    del rgb, alpha
                except Exception as exc:
                    fail(item, exc)
                    continue
                budget.release(item.pixels)
                seconds = time.perf_counter() - item.started
                put(events, ItemDone(item.index, total, item.job, timings, written, seconds))
        except BaseException as exc:
            fatal.append(exc)
            stop.set()
        finally:
            put(events, _DONE)

    threads = [threading.Thread(target=read, name="bgremover-read", daemon=True)]
    threads.append(threading.Thread(target=infer, name="bgremover-infer", daemon=True))
    threads += [
        threading.Thread(target=finish, name=f"bgremover-finish-{i}", daemon=True)
        for i in range(n_finish)
    ]
    for thread in threads:
        thread.start()

    done = skipped = 0
    failures: list[tuple[Path, str]] = []
    running = n_finish
    try:
        while running:
            try:  # with a timeout, so that Ctrl+C reaches the main thread on Windows too
                event = events.get(timeout=0.2)
            except queue.Empty:
                continue
            if event is _DONE:
                running -= 1
                continue
            if isinstance(event, ItemDone):
                done += 1
            elif isinstance(event, ItemSkipped):
                skipped += 1
            elif isinstance(event, ItemFailed):
                failures.append((event.job.source, event.reason))
            yield event
    finally:
        stop.set()  # the consumer stopped early, or the batch is over
        for thread in threads:
            while thread.is_alive():
                with contextlib.suppress(queue.Empty):
                    events.get(timeout=0.05)  # unblock stages waiting to report
            thread.join()
    if fatal:
        raise fatal[0]
    stopped = disk_full[0] if disk_full else None
    yield BatchFinished(
        done, skipped, len(failures), time.perf_counter() - start, stopped, tuple(failures)
    )
