"""Clips in a batch of ``bgremover remove``: each one's output decided as a photo's is
(made, made again for other settings, skipped, refused), made by :func:`.run.remove_clip`
and told as the photos' are, in the engine's outcome types, so the command line reports
photos and clips in one loop and one summary."""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from ..engine.batch import (
    BatchEvent,
    BatchFinished,
    BatchSettings,
    ItemDone,
    ItemFailed,
    ItemSkipped,
    Tally,
)
from ..engine.batch_report import FAIL, SKIP, resume_decision
from ..engine.plan import Job
from .run import LEFT_OUT, clip_options, clip_source, remove_clip
from .writer import existing_clip, video_format

if TYPE_CHECKING:
    from ..engine.pipeline import Remover

log = logging.getLogger(__name__)


def clip_events(
    jobs: Sequence[Job],
    remover: Remover,
    settings: BatchSettings,
    *,
    total: int,
    audio: bool = True,
    show: Callable[[str], None] | None = None,
) -> Iterator[ItemDone | ItemSkipped | ItemFailed]:
    """Each clip's outcome, in order, with the photo batch's ``settings`` (its export
    options, overwrite and pixel limit; ``total``: the batch's photos and clips). ``show``
    hears the running frame count and speed of the clip being made."""
    options, overwrite = settings.options, settings.overwrite
    for index, job in enumerate(jobs):
        clip, fmt = job, video_format(job.output)
        try:
            made = clip_options(options, alpha=fmt is None or fmt.alpha)
            wanted = clip_source(remover, clip.source, clip.output, made, audio=audio, steady=False)
        except Exception as exc:  # a clip that cannot be read, options a clip cannot take
            yield ItemFailed.of(index, total, job, exc)
            continue
        decision = resume_decision(clip.output, wanted, overwrite, existing_clip)
        if decision.action == SKIP:
            yield ItemSkipped(index, total, job, decision.reason)
            continue
        if decision.action == FAIL:
            yield ItemFailed(index, total, job, decision.reason)
            continue
        if decision.detail:
            log.info("%s", decision.detail)
        try:
            result = remove_clip(
                remover, clip.source, clip.output, options, audio=audio, record=wanted,
                max_megapixels=settings.max_megapixels, progress=_shown(clip.source.name, show),
            )  # fmt: skip
        except Exception as exc:
            yield ItemFailed.of(index, total, job, exc)
            continue
        log.info("%s: %d frames at %.1f frames/s", clip.source, result.frames, result.fps)
        if result.audio == LEFT_OUT:
            log.warning("%s: PNG frames hold no sound, so its sound was left out (write "
                        ".webm, .mov or .mp4 to keep it)", clip.source)  # fmt: skip
        size = clip.output.stat().st_size if clip.output.is_file() else 0
        yield ItemDone(index, total, job, {"clip": result.seconds}, size, result.seconds,
                       redone=decision.reason)  # fmt: skip


def _shown(name: str, show: Callable[[str], None] | None) -> Callable[[int, int], None] | None:
    """A clip's progress (frames done, of how many) as a line for ``show``, with its speed."""
    if show is None:
        return None
    start = time.monotonic()

    def frames(done: int, count: int) -> None:
        speed = done / max(time.monotonic() - start, 1e-6)
        show(f"{name}: frame {done}{f'/{count}' if count else ''}, {speed:.1f} frames/s")

    return frames


def with_clips(
    clips: Iterable[ItemDone | ItemSkipped | ItemFailed], photos: Iterable[BatchEvent]
) -> Iterator[BatchEvent]:
    """The clips' outcomes, then the photo batch's events, ending in one BatchFinished:
    the one tally of every outcome of both (the photo batch's own end is that tally of
    its part, so it is left out)."""
    tally, start = Tally(), time.monotonic()
    for event in itertools.chain(clips, photos):
        if isinstance(event, (ItemDone, ItemSkipped, ItemFailed)):
            tally.add(event)
        if not isinstance(event, BatchFinished):
            yield event
    yield tally.finished(time.monotonic() - start)
