"""Which inputs of ``bgremover remove`` are clips, and where each one's output goes.

A clip given alone with ``-o NAME.webm`` (``.mov``, ``.mp4``) is written there. Otherwise
``-o`` is a folder, and each clip (given, or found in a folder given, beside its photos)
becomes ``FOLDER/<its path under the input folder>/<name>.<kind>``: ``kind`` is webm,
mov or mp4, or png for a folder of PNG frames named after the clip.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..engine.plan import Job
from ..errors import UsageError
from ..files.imaging import is_clip_name, walk_images
from .flags import DEFAULT_KIND, KINDS
from .writer import FORMATS


def clip_target(folder: Path, relative: Path, kind: str) -> Path:
    """Where the output of the clip at ``relative`` (to its input folder) goes."""
    place = folder / relative.parent / relative.stem
    return place if kind == "png" else place.with_name(f"{place.name}.{kind}")


def plan_clips(
    inputs: Sequence[Path], output: Path, kind: str = DEFAULT_KIND
) -> tuple[list[Job], list[Path]]:
    """The clips among ``inputs`` (and in its folders) with their outputs, and the inputs
    that are not clips (photos and folders, for the photo batch's plan)."""
    if kind not in KINDS:
        raise UsageError(f"Unknown video format {kind!r}; use one of: {', '.join(KINDS)}.")
    clips = [p for p in inputs if p.is_file() and is_clip_name(p)]
    rest = [p for p in inputs if p not in clips]
    if output.suffix.lower() in FORMATS and not output.is_dir():
        if len(inputs) != 1 or not clips:
            raise UsageError(
                f"-o {output} names a video file, which holds one clip: give one clip as "
                "the input, or an output folder (a name without an extension).",
            )
        return [Job(clips[0], output)], []
    jobs = [Job(clip, clip_target(output, Path(clip.name), kind)) for clip in clips]
    for folder in (p for p in rest if p.is_dir()):
        for clip in walk_images(folder, exclude=output, wanted=is_clip_name):
            jobs.append(Job(clip, clip_target(output, clip.relative_to(folder), kind)))
    return jobs, rest
