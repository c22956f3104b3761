"""Planning a batch: input files and folders -> one output path per image.

The plan is made before anything runs, so every problem with the inputs
(missing files, names that would collide, outputs that would land on an input
or outside the output folder) is known and reported up front.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .imaging import walk_images
from .output import FORMATS, format_for_path


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


def plan_batch(inputs: Sequence[Path], output: Path, fmt: str) -> Plan:
    """Map inputs to output paths.

    - A single input file with ``output`` ending in ``.png``/``.webp`` writes that file.
    - Files go to ``output/<stem>.<fmt>``.
    - One folder is mirrored into ``output``; several folders each get
      ``output/<folder name>/``.
    - Names that would collide (``a.jpg`` and ``a.png``) get the source
      extension added (``a_png.png``); an output never replaces an input.
    """
    if fmt not in FORMATS:
        raise UsageError(f"Unknown format {fmt!r}; use one of: {', '.join(FORMATS)}.")
    extension = FORMATS[fmt].extension
    problems: list[tuple[Path, str]] = []
    pairs: list[tuple[Path, Path]] = []  # (source, wanted output)
    out_resolved = output.resolve()
    folders = [p for p in inputs if p.is_dir()]
    single_file_target = (
        len(inputs) == 1
        and inputs[0].is_file()
        and format_for_path(output) is not None
        and not output.is_dir()
    )
    for item in inputs:
        if item.is_dir():
            if item.resolve() == out_resolved:
                raise UsageError(
                    f"The output folder is the input folder ({item}). The cutouts would mix "
                    "with the photos they came from; choose another output folder."
                )
            base = output if len(folders) == 1 else output / item.resolve().name
            for src in walk_images(item, exclude=output):
                rel = src.relative_to(item)
                pairs.append((src, base / rel.parent / f"{src.stem}{extension}"))
        elif item.is_file():
            target = output if single_file_target else output / f"{item.stem}{extension}"
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
