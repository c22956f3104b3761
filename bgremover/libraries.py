"""Which shared libraries a library needs and this system lacks.

The app's start-up check (Qt's platform plugin) and the CUDA provider's check use it
to name what is missing, instead of a loader's bare "cannot load" or an abort.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["missing_dlls", "missing_libraries", "parse_ldd"]

# ldd (glibc) lists a library it cannot find as "\tlibxcb-icccm.so.4 => not found".
_LDD_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found\s*$", re.MULTILINE)
# dlopen's error names the first library it could not find.
_DLOPEN_MISSING = re.compile(r"([^\s:]+\.so(?:\.[^\s:]*)?): cannot open shared object file")


def parse_ldd(output: str) -> list[str]:
    """The libraries `ldd` reports as not found, each once, in the order it lists them."""
    return list(dict.fromkeys(_LDD_NOT_FOUND.findall(output)))


def missing_libraries(library: Path, own: Sequence[str] = ()) -> list[str] | None:
    """The shared libraries ``library`` needs and the system lacks: [] when it loads.

    It is loaded as its user will load it, so a working start costs nothing extra. Only
    when that fails does `ldd` list everything that is missing. None: it fails for
    another reason, or lacks libraries whose names start with one of ``own`` (those of
    the package it belongs to, which that package has in memory by the time it loads
    ``library``).
    """
    try:
        ctypes.CDLL(str(library))
        return []
    except OSError as exc:
        first = _DLOPEN_MISSING.search(str(exc))
    if first is None:
        return None
    missing = []
    ldd = shutil.which("ldd")
    if ldd:
        try:
            out = subprocess.run([ldd, str(library)], capture_output=True, text=True, check=False)
            missing = parse_ldd(out.stdout + out.stderr)
        except OSError:
            pass
    if first.group(1) not in missing:
        missing.insert(0, first.group(1))
    if own and any(name.startswith(tuple(own)) for name in missing):
        return None
    return missing


def missing_dlls(names: Sequence[str]) -> list[str]:
    """Of the DLLs ``names``, those Windows cannot load by name (its loader's error 126
    does not say which dependency is missing, so each is tried on its own)."""
    missing = []
    for name in names:
        try:
            ctypes.WinDLL(name)  # type: ignore[attr-defined]
        except OSError:
            missing.append(name)
    return missing
