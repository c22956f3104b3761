"""Creating a file atomically: readers, and a rerun after a crash, see no file or the whole one.

Standard library only, so that the modules that name output files stay light to import.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from .errors import DiskFullError, ImageWriteError

#: Suffix of the temporary files that atomic writes rename into place. A file
#: with this suffix is always an unfinished write and is safe to delete.
TEMP_SUFFIX = ".bgremover-part"


def write_atomically(path: Path, fill: Callable[[BinaryIO], object]) -> int:
    """Create ``path`` with what ``fill`` writes, atomically; returns its size in bytes.

    The data goes to a temporary file in the same folder, is flushed to disk and
    then renamed over ``path``: readers (and a rerun after a crash) see either
    no file or the complete one. If ``fill`` raises, nothing is left behind.
    """
    tmp_name = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL with mode 0o666 (the umask applies): private like mkstemp's
        # temp names, but the finished file gets the user's normal permissions.
        tmp_name = str(path.parent / f".{path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
        fd = os.open(
            tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666
        )
        with os.fdopen(fd, "wb") as fh:
            fill(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, path)
        tmp_name = None
        return path.stat().st_size
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise DiskFullError(
                f"{path}: the disk is full; free some space and run again "
                "(finished files are kept, this one was not written)."
            ) from None
        raise ImageWriteError(_write_failure(path, exc)) from None
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def _write_failure(path: Path, exc: OSError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (
            f"{path}: cannot write there (permission denied or read-only); "
            "choose another output folder."
        )
    return f"{path}: could not be written ({exc.strerror or exc})."
