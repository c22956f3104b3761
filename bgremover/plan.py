"""Planning a batch: input files and folders -> one output path per image.

The plan is made before anything runs, so every problem with the inputs
(missing files, names that would collide, outputs that would land on an input
or outside the output folder) and with the output (a file where a folder is
needed, a file name the writer cannot produce) is known and reported up front.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .imaging import walk_images
from .output import DEFAULT_FORMAT, FORMATS, format_for_path


@dataclass(frozen=True)
class Job:
    """One input file and the output file it becomes."""

    source: Path
    output: Path


@dataclass(frozen=True)
class OutputTarget:
    """What the command line's ``-o`` names, decided before anything runs."""

    path: Path
    #: True: ``path`` is the one output file of a single input file. False: a folder.
    single_file: bool
    #: The output format's name (a key of :data:`~bgremover.output.FORMATS`).
    fmt: str


def _formats_named() -> str:
    return " and ".join(f"{f.label} ({f.extension})" for f in FORMATS.values())


def _ends_in_separator(name: str | os.PathLike[str]) -> bool:
    text = os.fspath(name)
    return text.endswith(tuple(sep for sep in (os.sep, os.altsep, "/") if sep))


def resolve_output(
    inputs: Sequence[Path], output: str | os.PathLike[str], fmt: str | None = None
) -> OutputTarget:
    """Decide whether ``output`` (as the user typed it) is a file or a folder, and
    refuse what cannot work.

    - An existing folder, a name without an extension, or a name that ends in a path
      separator (``shots.v2/``) is a folder.
    - Any other name (it has an extension) is the output file. That needs a single
      input that is not a folder, an extension bgremover writes, and a ``fmt`` (if
      given) that agrees with it; otherwise a :class:`UsageError` says what to give.
    - The format is ``fmt``, else the output file's extension, else the default.
    """
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"Unknown format {fmt!r}; use one of: {', '.join(FORMATS)}.")
    folder = _ends_in_separator(output)
    output = Path(output)
    if folder or output.is_dir() or not output.suffix:
        return OutputTarget(output, False, fmt or DEFAULT_FORMAT)
    folders = [p for p in inputs if p.is_dir()]
    if folders or len(inputs) > 1:
        what = (
            f"the input {folders[0]} is a folder" if folders else f"there are {len(inputs)} inputs"
        )
        raise UsageError(
            f"-o {output} names a file (it has an extension), but {what}: give an output "
            "folder (a name without an extension, an existing folder, or a name ending in /)."
        )
    named = format_for_path(output)
    if named is None:
        raise UsageError(
            f"Cannot write {output}: bgremover writes {_formats_named()} files, not "
            f"{output.suffix}. Name the output {output.stem}.png or {output.stem}.webp, or give "
            "a folder (a name without an extension)."
        )
    if fmt is not None and fmt != named.name:
        wanted = FORMATS[fmt]
        raise UsageError(
            f"-f {fmt} does not match the output name {output} ({named.label}). Leave out -f "
            f"(the extension sets the format), or name the output "
            f"{output.with_suffix(wanted.extension).name}."
        )
    return OutputTarget(output, True, named.name)


def _existing_file_in_the_way(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` (or ``path``) if it is not a folder."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def check_output_place(output: Path, single_file: bool) -> None:
    """Refuse an output that cannot be created because a file stands where a folder must be.

    Done before any image is read: otherwise every image would be processed and then
    fail to be written, each with the same error.
    """
    folder = output.parent if single_file else output
    blocker = _existing_file_in_the_way(folder)
    if blocker is None:
        return
    if blocker == output:
        raise UsageError(
            f"The output {output} is an existing file, but a folder is needed there. "
            "Give a folder (a new name, or an existing folder)."
        )
    raise UsageError(
        f"Cannot make the output folder {folder}: {blocker} is a file, not a folder. "
        "Give an output in another place."
    )


@dataclass(frozen=True)
class Plan:
    jobs: tuple[Job, ...]
    #: Inputs that cannot be processed, each with the reason.
    problems: tuple[tuple[Path, str], ...] = ()


def plan_batch(
    inputs: Sequence[Path], output: Path, fmt: str, *, single_file: bool | None = None
) -> Plan:
    """Map inputs to output paths.

    - A single input file with ``output`` ending in ``.png``/``.webp`` writes that file
      (``single_file`` says so explicitly: see :func:`resolve_output`).
    - Files go to ``output/<stem>.<fmt>``.
    - One folder is mirrored into ``output``; several folders each get
      ``output/<folder name>/``.
    - Names that would collide (``a.jpg`` and ``a.png``) get the source
      extension added (``a_png.png``); an output never replaces an input.

    An output that cannot be made (a file stands where its folder must be) is a
    :class:`UsageError`, raised before anything runs.
    """
    if fmt not in FORMATS:
        raise UsageError(f"Unknown format {fmt!r}; use one of: {', '.join(FORMATS)}.")
    extension = FORMATS[fmt].extension
    problems: list[tuple[Path, str]] = []
    pairs: list[tuple[Path, Path]] = []  # (source, wanted output)
    out_resolved = output.resolve()
    folders = [p for p in inputs if p.is_dir()]
    if single_file is None:
        single_file = (
            len(inputs) == 1
            and inputs[0].is_file()
            and format_for_path(output) is not None
            and not output.is_dir()
        )
    check_output_place(output, single_file)
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
            target = output if single_file else output / f"{item.stem}{extension}"
            pairs.append((item, target))
        elif item.exists():
            problems.append((item, "not a regular file or folder"))
        else:
            problems.append((item, "no such file or folder"))

    input_set = {src.resolve() for src, _ in pairs}
    output_is_folder = not single_file
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
