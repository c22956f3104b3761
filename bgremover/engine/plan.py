"""Planning a batch: input files and folders -> one output path per image.

The plan is made before anything runs, so every problem with the inputs
(missing files, names that would collide, outputs that would land on an input
or outside the output folder) and with the output (a file where a folder is
needed, a file name the writer cannot produce) is known and reported up front.

Output names are planned to be safe on every file system, whatever the platform the
run is on (the output folder may be a case-insensitive disk or a Windows share even
on Linux). Below the output folder, each file and folder name is made legal on
Windows (:func:`safe_name`), and two outputs collide when their names are equal once
case-folded and Unicode-normalised (:func:`name_key`): ``A.png`` and ``a.png``, or
``café.png`` spelled NFD (as macOS writes it) and NFC, are one name there.
"""

from __future__ import annotations

import os
import re
import tempfile
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..export.output import DEFAULT_FORMAT, FORMATS, format_for_path
from ..files.atomic import windows_long_path
from ..files.imaging import walk_images
from ..touchup.edit import Edits


@dataclass(frozen=True)
class Job:
    """One input file and the output file it becomes, with the user's edits to its mask."""

    source: Path
    output: Path
    edits: Edits | None = None


@dataclass(frozen=True)
class OutputTarget:
    """What the command line's ``-o`` names, decided before anything runs."""

    path: Path
    #: True: ``path`` is the one output file of a single input file. False: a folder.
    single_file: bool
    #: The output format's name (a key of :data:`~bgremover.export.output.FORMATS`).
    fmt: str


# --- names that are safe on every file system -------------------------------------------

#: Characters Windows forbids in a name (``\`` and ``/`` are its separators), and the
#: control characters 0-31.
_FORBIDDEN = re.compile(r'[<>:"/\\|?*\x00-\x1f]')

#: Device names Windows reserves, with or without an extension, in any case.
WINDOWS_RESERVED = frozenset(
    ["con", "prn", "aux", "nul", "conin$", "conout$"]
    + [f"{dev}{n}" for dev in ("com", "lpt") for n in "0123456789\u00b9\u00b2\u00b3"]
)

#: What a name becomes when nothing is left of it (a folder named only spaces and dots).
EMPTY_NAME = "_"


def safe_name(name: str) -> str:
    r"""``name`` made legal as a file or folder name on Windows (and so everywhere).

    - each forbidden character (``< > : " / \ | ? *`` and control characters) becomes ``_``
      (``a:b?.png`` -> ``a_b_.png``);
    - trailing dots and spaces are removed (``album. `` -> ``album``); a name with
      nothing left becomes ``_``;
    - a reserved device name (``CON``, ``PRN``, ``AUX``, ``NUL``, ``COM0``-``COM9``,
      ``LPT0``-``LPT9``, ``COM¹``..., in any case, with any extension) gets ``_`` after
      the part before its first dot (``CON.png`` -> ``CON_.png``, ``nul`` -> ``nul_``).

    A name that is already safe is returned unchanged.
    """
    name = _FORBIDDEN.sub("_", name).rstrip(". ") or EMPTY_NAME
    base, dot, rest = name.partition(".")
    if base.rstrip(" ").casefold() in WINDOWS_RESERVED:
        name = f"{base}_{dot}{rest}"
    return name


def name_key(name: str) -> str:
    """What a name is on a case-insensitive, normalisation-insensitive file system:
    two names with the same key are one file there (``A.png``/``a.png``; ``café``
    in NFD and NFC)."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


def _path_key(path: Path) -> str:
    return name_key(str(path.resolve()))


# --- long paths on Windows --------------------------------------------------------------

# --- what -o names --------------------------------------------------------------------


def _formats_named() -> str:
    return " and ".join(f"{f.label} ({f.extension})" for f in FORMATS.values())


def _ends_in_separator(name: str | os.PathLike[str]) -> bool:
    text = os.fspath(name)
    return text.endswith(tuple(sep for sep in (os.sep, os.altsep, "/") if sep))


def resolve_output(
    inputs: Sequence[Path],
    output: str | os.PathLike[str],
    fmt: str | None = None,
    default: str = DEFAULT_FORMAT,
) -> OutputTarget:
    """Decide whether ``output`` (as the user typed it) is a file or a folder, and
    refuse what cannot work.

    - An existing folder, a name without an extension, or a name that ends in a path
      separator (``shots.v2/``) is a folder.
    - Any other name (it has an extension) is the output file. That needs a single
      input that is not a folder, an extension bgremover writes, and a ``fmt`` (if
      given) that agrees with it; otherwise a :class:`UsageError` says what to give.
    - The format is ``fmt``, else the output file's extension, else ``default`` (a
      preset's format).
    """
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"Unknown format {fmt!r}; use one of: {', '.join(FORMATS)}.")
    folder = _ends_in_separator(output)
    output = Path(output)
    if folder or output.is_dir() or not output.suffix:
        return OutputTarget(output, False, fmt or default)
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
    """Refuse an output that cannot be created: a file stands where a folder must be, or
    the output folder (or, while it does not exist, the nearest folder above it) cannot be
    written in (no permission, a read-only disk).

    Done before any image is read: otherwise every image would be processed and then
    fail to be written, each with the same error.
    """
    folder = output.parent if single_file else output
    blocker = _existing_file_in_the_way(folder)
    if blocker is None:
        _check_writable(folder)
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


def _check_writable(folder: Path) -> None:
    """Refuse ``folder`` when a file cannot be made in it, or (while it does not exist)
    in the nearest folder above it: tried with a hidden file, deleted at once. Asking the
    system for permission is not enough: an administrator is allowed everything that a
    read-only disk then refuses."""
    existing = next((c for c in (folder, *folder.parents) if c.is_dir()), None)
    if existing is None:
        return  # nothing above it exists either: making the folder says what is wrong
    try:
        fd, probe = tempfile.mkstemp(prefix=".bgremover-probe-", dir=windows_long_path(existing))
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        what = (
            f"The output folder {folder} cannot be written in"
            if existing == folder
            else f"Cannot make the output folder {folder}: {existing} cannot be written in"
        )
        raise UsageError(
            f"{what} ({why}), so no image was processed.",
            fix="Give an output folder you can write to, or make this one writable "
            "(its permissions; a read-only disk or share takes no outputs).",
        ) from exc
    os.close(fd)
    os.unlink(probe)


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
    - Every name below ``output`` is made legal on Windows (:func:`safe_name`);
      ``output`` itself, and a single output file's name, are kept as given.
    - Names collide when their :func:`name_key` is the same (case and Unicode
      normalisation do not tell names apart). Folders that collide become one folder,
      spelled as the first of them. Of files that collide, or whose name would land on
      an input, the first keeps its name; the others get the source extension added
      (``a_png.png``), then a number (``a_png_2.png``, ``a_png_3.png``, ...) until the
      name is free; an output never replaces an input.
    - The names do not depend on the order of ``inputs`` or of folder listings: the
      candidates are sorted by their name keys (then their spelling, names that needed
      no change first, then the source path), so a rerun plans the same names.

    An output that cannot be made (a file stands where its folder must be) is a
    :class:`UsageError`, raised before anything runs.
    """
    if fmt not in FORMATS:
        raise UsageError(f"Unknown format {fmt!r}; use one of: {', '.join(FORMATS)}.")
    extension = FORMATS[fmt].extension
    problems: list[tuple[Path, str]] = []
    wanted: list[_Wanted] = []
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
            top = () if len(folders) == 1 else (item.resolve().name,)
            for src in walk_images(item, exclude=output):
                rel = src.relative_to(item)
                wanted.append(_Wanted(src, (*top, *rel.parent.parts), src.stem + extension))
        elif item.is_file():
            if single_file:
                wanted.append(_Wanted(item, (), output.name, as_given=True))
            else:
                wanted.append(_Wanted(item, (), item.stem + extension))
        elif item.exists():
            problems.append((item, "not a regular file or folder"))
        else:
            problems.append((item, "no such file or folder"))

    base = output.parent if single_file else output
    inside = out_resolved.parent if single_file else out_resolved
    targets = _assign_names(wanted, base, {_path_key(w.source) for w in wanted})
    jobs: list[Job] = []
    for want, target in zip(wanted, targets, strict=True):  # in the order of the inputs
        if not target.resolve().is_relative_to(inside):
            problems.append(
                (
                    want.source,
                    f"its output {target} would be written outside {output} "
                    "(through a symbolic link); nothing written",
                )
            )
            continue
        jobs.append(Job(want.source, target))
    return Plan(tuple(jobs), tuple(problems))


def plan_names(items: Sequence[tuple[Path | None, str]], folder: Path, fmt: str) -> list[Path]:
    """One output path in ``folder`` for each of ``items`` (in their order), named as
    :func:`plan_batch` names files: ``<stem>.<fmt>`` made legal everywhere, no two the
    same once case-folded and normalised, never an input.

    Each item is its photo's file (None for an image without one, such as a pasted
    image) and its name. A name held by anything already in ``folder`` is taken too:
    these outputs never replace a file. The names do not depend on the order of
    ``items``. A file where ``folder`` must be is a :class:`UsageError`.
    """
    if fmt not in FORMATS:
        raise UsageError(f"Unknown format {fmt!r}; use one of: {', '.join(FORMATS)}.")
    check_output_place(folder, False)
    extension = FORMATS[fmt].extension
    wanted = [
        _Wanted(source or Path(name), (), Path(name).stem + extension) for source, name in items
    ]
    taken = {_path_key(source) for source, _ in items if source is not None}
    if folder.is_dir():
        taken.update(_path_key(folder / child.name) for child in folder.iterdir())
    return _assign_names(wanted, folder, taken)


@dataclass(frozen=True)
class _Wanted:
    """An input and the output it would get if nothing collided."""

    source: Path
    #: Folders below the output folder, as the input's folders are spelled.
    folders: tuple[str, ...]
    name: str
    #: The user gave this file name (a single output file): it is not made safe.
    as_given: bool = False

    def safe_folders(self) -> tuple[str, ...]:
        return tuple(safe_name(part) for part in self.folders)

    def safe_file_name(self) -> str:
        return self.name if self.as_given else safe_name(self.name)

    def order(self) -> tuple[tuple[str, ...], tuple[str, ...], bool, str]:
        """Where it comes in the assignment of names: deterministic for a set of inputs."""
        safe = (*self.safe_folders(), self.safe_file_name())
        unchanged = safe == (*self.folders, self.name)
        return tuple(name_key(part) for part in safe), safe, not unchanged, str(self.source)


def _collision_names(want: _Wanted) -> Iterable[str]:
    """The names a file whose own name is taken tries, in order: ``a_png.png``, then
    ``a_png_2.png``, ``a_png_3.png``, ..."""
    stem, suffix = os.path.splitext(want.name)
    ext = want.source.suffix.lower().lstrip(".") or "noext"
    yield f"{stem}_{ext}{suffix}"
    number = 2
    while True:
        yield f"{stem}_{ext}_{number}{suffix}"
        number += 1


def _assign_names(wanted: Sequence[_Wanted], base: Path, inputs: set[str]) -> list[Path]:
    """The output path of each of ``wanted`` (in its order), below ``base``.

    First every output whose safe name is free (by :func:`name_key`, and not an input's
    path) takes it, so a name stays the same when another file joins; then the others
    take their first free collision name (:func:`_collision_names`), in the same order.
    """
    order = sorted(range(len(wanted)), key=lambda i: wanted[i].order())
    # Folders: each key is one folder, spelled as the first input (in order) that has it.
    spelled: dict[tuple[str, ...], str] = {}
    folder_of: dict[int, Path] = {}
    taken: set[str] = set()
    for i in order:
        folder = base
        keys: tuple[str, ...] = ()
        for part in wanted[i].safe_folders():
            keys = (*keys, name_key(part))
            if keys not in spelled:
                spelled[keys] = part
                taken.add(_path_key(folder / part))  # no file may take a folder's name
            folder = folder / spelled[keys]
        folder_of[i] = folder

    targets: dict[int, Path] = {}
    later: list[int] = []
    for i in order:
        target = folder_of[i] / wanted[i].safe_file_name()
        key = _path_key(target)
        if key in taken or key in inputs:
            later.append(i)
            continue
        taken.add(key)
        targets[i] = target
    for i in later:
        want = wanted[i]
        for name in _collision_names(want):
            target = folder_of[i] / (name if want.as_given else safe_name(name))
            key = _path_key(target)
            if key not in taken and key not in inputs:
                taken.add(key)
                targets[i] = target
                break
    return [targets[i] for i in range(len(wanted))]
