"""Batches: inputs (files and folders) -> a plan of jobs -> a stream of events.

:func:`run_batch` is a generator: each yielded event is a point where the
consumer (CLI progress display, GUI worker) may stop by simply not asking for
the next one. Outputs are written atomically, so stopping, cancelling or being
killed never leaves a half-written file, and a rerun skips finished outputs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .compose import ComposeOptions
from .errors import BgRemoverError, DiskFullError, ModelError, UsageError
from .imaging import IMAGE_EXTENSIONS, OUTPUT_FORMATS, TEMP_SUFFIX, is_complete_image, write_image
from .pipeline import Remover, Result

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
    result: Result
    bytes_written: int
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


def run_batch(
    jobs: Sequence[Job],
    remover: Remover,
    options: ComposeOptions | None = None,
    fmt: str = "png",
    overwrite: bool = False,
) -> Iterator[BatchEvent]:
    """Process ``jobs`` in order, yielding an event per item.

    A failed item is reported and the batch goes on. A model that cannot be
    obtained or loaded raises (nothing could run); a full disk ends the batch
    with ``BatchFinished.stopped`` set.
    """
    options = options or ComposeOptions()
    total = len(jobs)
    start = time.perf_counter()
    done = skipped = 0
    failures: list[tuple[Path, str]] = []
    stale = remove_stale_temp_files(jobs)
    if stale:
        log.info("Removed %d unfinished file(s) left by an interrupted run.", stale)
    yield BatchStarted(total)
    stopped = None
    for index, job in enumerate(jobs, 1):
        if not overwrite and is_complete_image(job.output):
            skipped += 1
            yield ItemSkipped(index, total, job, "output already exists")
            continue
        t0 = time.perf_counter()
        try:
            result = remover.remove(job.source)
            written = write_image(result.compose(options), job.output, fmt)
        except ModelError:
            raise
        except DiskFullError as exc:
            failures.append((job.source, str(exc)))
            stopped = str(exc)
            yield ItemFailed(index, total, job, str(exc))
            break
        except BgRemoverError as exc:
            failures.append((job.source, str(exc)))
            yield ItemFailed(index, total, job, str(exc))
            continue
        except Exception as exc:  # a bug or an unforeseen input: report it, keep going
            log.exception("Unexpected error on %s", job.source)
            reason = f"unexpected error ({type(exc).__name__}: {exc}); please report it"
            failures.append((job.source, reason))
            yield ItemFailed(index, total, job, reason)
            continue
        done += 1
        yield ItemDone(index, total, job, result, written, time.perf_counter() - t0)
    yield BatchFinished(
        done, skipped, len(failures), time.perf_counter() - start, stopped, tuple(failures)
    )
