"""How a batch decides and tells what happened to each photo, the same for the plain batch
(:mod:`~bgremover.engine.batch`, ``bgremover remove``) and ``remove --ray``
(:mod:`~bgremover.distributed`): the exit statuses, the stderr lines (a failure, a skip,
the summary), the reasons an output is skipped or made again, the resume decision for an
existing output and the clean-up of files left by interrupted runs.

What must stay true: both front ends print the same line for the same outcome, and a
rerun decides about an existing output by :func:`resume_decision` alone. Nothing here
imports numpy or the engine at module level (the command line imports the exit statuses
before it parses its options).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BgRemoverError
from ..export.output import (
    DONE,
    EDITED,
    MISSING,
    OTHER_PHOTO,
    REDO,
    STALE,
    Existing,
    OutputSettings,
    SourceRecord,
    existing_output,
)
from ..files.atomic import remove_leftovers, windows_long_path

if TYPE_CHECKING:
    from ..network.guard import GuardCheck
    from .plan import Job

#: Exit statuses of the command line (its ``--help`` lists them, cli.EXIT_STATUS).
EXIT_OK = 0
#: Some images failed; each is named on stderr and the others were written.
EXIT_SOME_FAILED = 1
#: A usage error, or nothing could run (no input found, model not obtainable).
EXIT_USAGE = 2
#: Interrupted (Ctrl+C): finished outputs are kept and a rerun resumes.
EXIT_INTERRUPTED = 130

#: The skip reason of an output made from the same photo by an earlier run (no line).
ALREADY_DONE = "output already exists"
#: The skip reason of an output that another run (process) is making now.
BEING_WRITTEN = "being written by another run"
#: Why an output of this photo is made again: it was made with other settings.
SETTINGS_CHANGED = "settings changed"
#: Why an output of this photo is made again: its record names no settings (written by an
#: earlier bgremover), so whether they were these is not known.
SETTINGS_UNKNOWN = "settings not recorded"

#: :attr:`Resume.action`: make the output, keep the existing one, or report a failure.
MAKE, SKIP, FAIL = "make", "skip", "fail"


def err(message: str) -> None:
    """Print ``message`` on stderr (a windowed app has none: then nothing is printed)."""
    if sys.stderr is not None:
        print(message, file=sys.stderr)


def failure_reason(exc: BaseException, source: Path, log: logging.Logger) -> str:
    """A failed photo's reason: the error's own words, or for an unforeseen exception (a
    bug) its type and text, logged with the traceback on ``log``."""
    if isinstance(exc, BgRemoverError):
        return str(exc)
    log.error("Unexpected error on %s", source, exc_info=exc)
    return f"unexpected error ({type(exc).__name__}: {exc}); please report it"


def failure_line(source: Path, reason: str) -> str:
    """The stderr line of a failed photo; it names the photo unless the reason does."""
    if str(source) not in reason:
        reason = f"{source}: {reason}"
    return f"bgremover: failed: {reason}"


def skip_line(source: Path, reason: str) -> str | None:
    """The stderr line of a skipped photo; None for one already done (said only in the
    summary's count)."""
    if reason == ALREADY_DONE:
        return None
    return f"bgremover: skipped {source}: {reason}"


def redone_reason(made: SourceRecord | None) -> str:
    """Why this photo's output is made again, from the record it holds (STALE)."""
    return SETTINGS_CHANGED if made is not None and made.settings is not None else SETTINGS_UNKNOWN


def redone_detail(output: Path, made: SourceRecord | None, wanted: OutputSettings | None) -> str:
    """A log line for an output made again: what it was made with, and what it is now."""
    was = made.settings.summary if made is not None and made.settings is not None else None
    now = wanted.summary if wanted is not None else "?"
    if was is None:
        return f"{output}: made again: it records no settings (an earlier bgremover); now {now}"
    return f"{output}: made again: settings changed (it was {was}; now {now})"


def unverified_reason(output: Path) -> str:
    return (
        f"{output} exists but does not record which photo it was made from (written by "
        "bgremover 0.1.0 or earlier, or by another program): kept as it is; use --overwrite "
        "to make it again"
    )


def edited_reason(output: Path) -> str:
    return (
        f"{output} was made with your edits (touch-up), which this run does not have: kept "
        "as it is; give the edits (--edits FILE), or use --overwrite to make it again "
        "without them"
    )


def other_photo_reason(output: Path, record: SourceRecord) -> str:
    return (
        f"{output} exists and was not made from this photo (it was made from "
        f"{record.name!r}): kept as it is; use --overwrite to replace it, or another "
        "output folder"
    )


@dataclass(frozen=True)
class Resume:
    """What a run does with one output: :data:`MAKE`, :data:`SKIP` or :data:`FAIL`."""

    action: str
    #: SKIP or FAIL: why. MAKE: why the existing output is made again ("" when there is
    #: none to replace, or it is overwritten as asked).
    reason: str = ""
    #: MAKE again: a log line saying what the output was made with and what it is now.
    detail: str = ""


def resume_decision(
    output: Path,
    record: SourceRecord | None,
    overwrite: bool,
    existing: Callable[[Path, SourceRecord], Existing] = existing_output,
) -> Resume:
    """Whether ``output`` is to be made from the photo ``record`` describes (with the
    settings it names), by what the existing output records.

    Made: with ``overwrite``, when the photo could not be read (reading it then says
    why), when there is no output or it is unfinished, and again (with the reason) when
    it was made with other settings. Skipped: made by an earlier run with these settings,
    made with edits this run does not have, or not recording its photo. Failed: made
    from another photo (its name is kept, never overwritten). ``existing`` reads what
    stands at ``output`` (a clip's output is read by its own).
    """
    if overwrite or record is None:
        return Resume(MAKE)
    there = existing(Path(windows_long_path(output)), record)
    if there.state in (MISSING, REDO):
        return Resume(MAKE)
    if there.state == STALE:
        detail = redone_detail(output, there.record, record.settings)
        return Resume(MAKE, redone_reason(there.record), detail)
    if there.state == DONE:
        return Resume(SKIP, ALREADY_DONE)
    if there.state == OTHER_PHOTO and there.record is not None:
        return Resume(FAIL, other_photo_reason(output, there.record))
    if there.state == EDITED:
        return Resume(SKIP, edited_reason(output))
    return Resume(SKIP, unverified_reason(output))


def remove_stale_temp_files(jobs: Sequence[Job], log: logging.Logger | None = None) -> int:
    """Delete unfinished atomic-write files left in the output folders by runs that ended
    (killed, crashed); those of runs still writing are kept. How many were deleted is
    logged on ``log`` (the caller's) when given and any were."""
    folders = {Path(windows_long_path(job.output.parent)) for job in jobs}
    removed = sum(remove_leftovers(folder) for folder in folders)
    if removed and log is not None:
        log.info("Removed %d unfinished file(s) left by an interrupted run.", removed)
    return removed


def written_place(jobs: Sequence[Job], folder: Path) -> Path | None:
    """What a batch's summary points to: the one output file, or the output folder;
    None when it does not exist (nothing was written: the summary names no file)."""
    place = jobs[0].output if len(jobs) == 1 else folder
    return place if os.path.lexists(windows_long_path(place)) else None


def counts_words(
    done: int,
    redone: Mapping[str, int],
    skipped: int,
    failed: int,
    skipped_words: str = "already done",
    every: bool = False,
) -> str:
    """A batch's counts as its summary says them: "3 written, 1 redone: settings changed,
    2 already done, 1 failed" (no count of 0 but the written one, unless ``every``). Each
    file counts once: "written" are new files, "redone" replaced this photo's outputs made
    with other settings (``done`` counts both)."""
    parts = [f"{done - sum(redone.values())} written"]
    parts += [f"{n} redone: {reason}" for reason, n in sorted(redone.items()) if n]
    if skipped or every:
        parts.append(f"{skipped} {skipped_words}")
    if failed or every:
        parts.append(f"{failed} failed")
    return ", ".join(parts)


def doubt_line(source: Path, doubts: Sequence[str], model: str) -> str:
    """The ``-v`` line for a cutout in doubt (``doubts``: why, from ``Result.doubts``)."""
    instead = "" if model == "best" else ", try --model best"
    return (
        f"{source}: this cutout may be wrong ({'; '.join(doubts)}): check it{instead}, "
        "or touch it up in the app"
    )


def doubt_note(doubtful: int, named: bool = False) -> str:
    """The summary's note on the cutouts in doubt; "" when none is. ``named``: the run
    printed each one's :func:`doubt_line` (``-v``), so the note does not send the user
    to -v for what is already above it."""
    if not doubtful:
        return ""
    many = "cutout" if doubtful == 1 else "cutouts"
    hint = "" if named else " (run with -v to see which and why)"
    return f"{doubtful} {many} may be wrong{hint}."


def report_summary(
    *,
    done: int,
    redone: Mapping[str, int],
    skipped: int,
    failed: int,
    seconds: float,
    where: Path | None,
    stopped: str | None,
    guarded: Iterable[GuardCheck | None],
    doubtful: int = 0,
    doubts_named: bool = False,
) -> int:
    """Print a batch's summary on stderr and return its exit status.

    The summary: the counts, the time and where the outputs are (``where``, from
    :func:`written_place`); why it stopped early, if it did; how many cutouts are in
    doubt (:func:`doubt_note`; ``doubts_named``: their lines were printed); the int8
    guard's note, if any. ``failed`` counts the inputs skipped before the batch as well.
    """
    from ..network.guard import CLI_HINT
    from ..network.guard import summary as guard_summary

    counts = counts_words(done, redone, skipped, failed, "already done")
    summary = f"bgremover: {counts} in {seconds:.1f} s"
    summary += f" -> {where}" if where is not None else ""
    if stopped:
        summary += f"\nbgremover: stopped early: {stopped}"
    notes = [n for n in (doubt_note(doubtful, doubts_named), guard_summary(guarded, CLI_HINT)) if n]
    err(summary + "".join(f"\nbgremover: {n}" for n in notes))
    return EXIT_SOME_FAILED if failed else EXIT_OK


def nothing_to_do(inputs: Sequence[Path], problems: Sequence[tuple[Path, str]]) -> str:
    """Why a run found nothing to process, and what to do."""
    if problems:
        return (
            "bgremover: nothing could run: no image or clip to process (the inputs above "
            "were skipped). Check the paths and try again."
        )
    from ..files.imaging import CLIP_EXTENSIONS, IMAGE_EXTENSIONS

    names = ", ".join(str(p) for p in inputs)
    return (
        f"bgremover: no images or clips found in {names}. Folders are searched for files "
        f"ending in {' '.join(sorted(IMAGE_EXTENSIONS))} and clips ending in "
        f"{' '.join(CLIP_EXTENSIONS)} (hidden files and folders are skipped)."
    )


def progress_line(count: int, total: int, start: float, current: Path) -> str:
    """The command line's progress: count of total, share, time left, the current name."""
    elapsed = time.monotonic() - start
    left = elapsed / count * (total - count) if count else 0.0
    eta = f"{int(left // 60)}:{int(left % 60):02d}"
    return f"[{count}/{total}] {100 * count // total:3d}%  eta {eta}  {current.name}"
