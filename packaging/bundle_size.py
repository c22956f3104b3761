"""What a built bundle is made of: shared-library links, and a size table by package.

Used by bgremover.spec (which libraries only the plugins it drops needed) and by build.py
(the size report written after each build). Standard library only: the spec runs inside
PyInstaller, the report after it.
"""

from __future__ import annotations

import re
import struct
import tarfile
from collections import defaultdict
from pathlib import Path, PurePosixPath

_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 15, 29


def elf_needed(path: str | Path) -> list[str] | None:
    """The DT_NEEDED names of an ELF shared object or program, None for other files."""
    dyn = elf_dynamic(path)
    return None if dyn is None else dyn[0]


def elf_dynamic(path: str | Path) -> tuple[list[str], list[str]] | None:
    """(DT_NEEDED names, DT_RPATH and DT_RUNPATH strings) of an ELF file, None for others."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if data[:4] != b"\x7fELF" or len(data) < 64:
        return None
    is64, order = data[4] == 2, "<" if data[5] == 1 else ">"
    if is64:
        (phoff,) = struct.unpack_from(order + "Q", data, 0x20)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 0x36)
    else:
        (phoff,) = struct.unpack_from(order + "I", data, 0x1C)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 0x2A)
    loads, dynamic = [], None
    for i in range(phnum):
        off = phoff + i * phentsize
        if is64:
            fields = struct.unpack_from(order + "IIQQQQ", data, off)
            p_type, p_offset, p_vaddr, p_filesz = fields[0], fields[2], fields[3], fields[5]
        else:
            fields = struct.unpack_from(order + "IIIII", data, off)
            p_type, p_offset, p_vaddr, p_filesz = fields[0], fields[1], fields[2], fields[4]
        if p_type == _PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == _PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return [], []
    entry = struct.Struct(order + ("qQ" if is64 else "iI"))
    needed, paths, strtab = [], [], None
    for off in range(dynamic[0], dynamic[0] + dynamic[1], entry.size):
        tag, val = entry.unpack_from(data, off)
        if tag == _DT_NULL:
            break
        if tag == _DT_NEEDED:
            needed.append(val)
        elif tag in (_DT_RPATH, _DT_RUNPATH):
            paths.append(val)
        elif tag == _DT_STRTAB:
            strtab = val
    if strtab is None:
        return [], []
    base = next((o + strtab - v for v, o, s in loads if v <= strtab < v + s), None)
    if base is None:
        return [], []

    def text(n: int) -> str:
        return data[base + n : data.index(b"\0", base + n)].decode(errors="replace")

    return [text(n) for n in needed], [text(n) for n in paths]


def stripped_copies(entries: list[tuple[str, str, str]], folder: Path) -> list:
    """The TOC with its ELF libraries replaced by copies without symbol tables.

    Left as they are: libraries that auditwheel repaired with patchelf (those in a
    wheel's `.libs` folder, and extension modules with an $ORIGIN rpath to one):
    `strip` rewrites their program headers and the loader then refuses them ("ELF load
    command address/offset not page-aligned", seen with numpy's OpenBLAS).
    """
    import shutil
    import subprocess

    out = []
    for dest, src, typ in entries:
        dyn = elf_dynamic(src) if typ in ("BINARY", "EXTENSION") else None
        norm = dest.replace("\\", "/")
        patched = dyn is not None and (
            any(".libs" in part for part in PurePosixPath(norm).parts[:-1])
            or any("$ORIGIN" in p for p in dyn[1])
        )
        if dyn is None or patched:
            out.append((dest, src, typ))
            continue
        copy = folder / norm  # made anew each build: a few seconds for all of them
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, copy)
        subprocess.run(["strip", str(copy)], check=True)
        out.append((dest, str(copy), typ))
    return out


def orphans(removed: list[tuple[str, str, str]], kept: list[tuple[str, str, str]],
            prunable) -> tuple[list, list]:  # fmt: skip
    """Move from `kept` to `removed` every prunable library that only removed entries link.

    Entries are PyInstaller TOC tuples (dest, src, typecode). A library goes when some
    removed file names it in DT_NEEDED (directly or through another such library) and
    no kept file does; `prunable(dest)` limits this to libraries PyInstaller collected
    as dependencies (not ones a package loads by name at run time). Returns both lists.
    """
    cache: dict[str, list[str]] = {}

    def needs(entry) -> list[str]:
        if entry[1] not in cache:
            cache[entry[1]] = elf_needed(entry[1]) or []
        return cache[entry[1]]

    removed, kept = list(removed), list(kept)
    while True:
        wanted_by_kept = {n for e in kept for n in needs(e)}
        wanted_by_removed = {n for e in removed for n in needs(e)}
        gone = [e for e in kept if prunable(e[0]) and PurePosixPath(e[0]).name in
                wanted_by_removed - wanted_by_kept]  # fmt: skip
        if not gone:
            return removed, kept
        kept = [e for e in kept if e not in gone]
        removed += gone


# --- size report -------------------------------------------------------------------------

_PYTHON_RUNTIME = "Python runtime and standard library"


def _dist_of_top(top: str, mapping: dict[str, list[str]]) -> str | None:
    stem = top.split(".")[0]
    dists = mapping.get(stem)
    return dists[0] if dists else None


def _qt_part(parts: tuple[str, ...]) -> str:
    # parts start at the PySide6 folder: PySide6/Qt/lib/libQt6Gui.so.6, PySide6/Qt/plugins/...
    if len(parts) >= 3 and parts[1] == "Qt":
        if parts[2] == "lib":
            name = parts[-1]
            if name.startswith("libicu"):
                return "PySide6: ICU (Qt's Unicode data)"
            m = re.match(r"lib(Qt6\w+?)\.so", name) or re.match(r"(Qt6\w+?)\.dll", name)
            return f"PySide6: {m.group(1)}" if m else "PySide6: Qt/lib (other)"
        if parts[2] == "plugins" and len(parts) >= 4:
            return f"PySide6: plugins/{parts[3]}"
        return f"PySide6: Qt/{parts[2]}"
    if len(parts) >= 2 and re.match(r"(lib)?Qt6\w+\.(dll|so)", parts[1]):
        return "PySide6: Qt libraries"
    return "PySide6: Python bindings"


def attribute(bundle: Path) -> dict[str, list[Path]]:
    """Every file of a onedir bundle, grouped by the package it comes from."""
    from importlib.metadata import packages_distributions

    mapping = {k: v for k, v in packages_distributions().items()}
    internal = bundle / "_internal"
    if not internal.is_dir():  # macOS .app or an older layout
        internal = bundle
    files = [f for f in bundle.rglob("*") if f.is_file() and not f.is_symlink()]
    groups: dict[str, list[Path]] = defaultdict(list)
    system: list[Path] = []
    for f in files:
        try:
            rel = f.relative_to(internal)
        except ValueError:
            groups["programs (launcher + their archive of Python code)"].append(f)
            continue
        parts, top = rel.parts, rel.parts[0]
        if top.startswith(("libpython", "python3", "base_library", "lib-dynload")):
            groups[_PYTHON_RUNTIME].append(f)
        elif top in ("PySide6", "shiboken6"):
            groups[_qt_part(parts) if top == "PySide6" else "shiboken6"].append(f)
        elif top.endswith(".libs"):  # auditwheel's folder of a wheel's own libraries
            groups[f"{top[:-5].replace('_', '-')} (its .libs)"].append(f)
        elif top.endswith((".dist-info", ".egg-info")):
            groups[re.split(r"-\d", top)[0]].append(f)
        elif len(parts) == 1 and re.search(r"\.so(\.|$)|\.dll$|\.dylib$", top):
            system.append(f)
        else:
            groups[_dist_of_top(top, mapping) or top].append(f)
    # A system library belongs to what needs it: follow DT_NEEDED back to a package.
    owner_of: dict[str, str] = {}
    for name, members in groups.items():
        for f in members:
            owner_of[str(f)] = name
    needers: dict[str, set[str]] = defaultdict(set)
    for f in files:
        for n in elf_needed(f) or []:
            needers[n].add(str(f))
    by_name = {f.name: f for f in system}

    def roots(lib: Path, seen: frozenset = frozenset()) -> set[str]:
        out: set[str] = set()
        for who in needers.get(lib.name, ()):
            if who in owner_of:
                out.add(owner_of[who])
            elif Path(who).name in by_name and who not in seen:
                out |= roots(by_name[Path(who).name], seen | {who})
        return out

    for f in system:
        r = sorted(roots(f))
        label = f"for {' + '.join(r)}" if len(r) <= 2 else "shared by several"
        groups[f"system libraries {label}" if r else "system libraries"].append(f)
    return groups


def report(bundle: Path, archive: Path | None = None) -> str:
    groups = attribute(bundle)
    sizes = {k: sum(f.stat().st_size for f in v) for k, v in groups.items()}
    total = sum(sizes.values())
    width = max(len(k) for k in sizes) + 2
    lines = [f"{'package':<{width}}{'files':>6}{'MB':>9}{'share':>8}"]
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        lines.append(f"{name:<{width}}{len(groups[name]):>6}{size / 1e6:>9.1f}{size / total:>8.1%}")
    nfiles = sum(len(v) for v in groups.values())
    lines.append(f"{'total (' + bundle.name + ')':<{width}}{nfiles:>6}{total / 1e6:>9.1f}{1:>8.0%}")
    if archive is not None and archive.exists():
        lines.append(f"{archive.name}: {archive.stat().st_size / 1e6:.1f} MB")
    return "\n".join(lines) + "\n"


def make_tar_gz(folder: Path, archive: Path) -> Path:
    """folder as a .tar.gz beside it (the Linux release archive)."""
    with tarfile.open(archive, "w:gz", compresslevel=9) as tar:
        tar.add(folder, arcname=folder.name)
    return archive


if __name__ == "__main__":
    import sys

    print(report(Path(sys.argv[1]) if len(sys.argv) > 1 else
                 Path(__file__).parent / "dist" / "bgremover"), end="")  # fmt: skip
