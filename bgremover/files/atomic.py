"""Creating a file atomically: readers, and a rerun after a crash, see no file or the whole one.

Runs sharing an output folder coordinate through a *claim* per output file: a small
lock file beside it (``.NAME.lock`` + :data:`TEMP_SUFFIX`) that the writing run holds
locked with the operating system's file lock (``flock`` on macOS and Linux,
``msvcrt.locking`` on Windows). The system drops the lock when its process ends, however
it ends, so a temporary file is known to be left over (and is deleted) exactly when
nobody holds its output's claim.

Standard library only, so that the modules that name output files stay light to import.
"""

from __future__ import annotations

import contextlib
import errno
import ntpath
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from ..errors import DiskFullError, ImageWriteError

if sys.platform == "win32":  # pragma: no cover - exercised by CI on Windows
    import msvcrt
else:
    import fcntl

#: Suffix of the temporary files that atomic writes rename into place, and of the
#: claims (lock files) of the runs writing them. Such a file belongs to a write in
#: progress while its output's claim is held, and is left over (safe to delete) otherwise.
TEMP_SUFFIX = ".bgremover-part"
_LOCK_TAG = ".lock"

#: Waits between attempts to rename a finished file into place while the system refuses
#: with "permission denied" (on Windows: another program, such as a viewer or a virus
#: scanner, has the old file open): 1.55 s in all, then the error is reported.
REPLACE_BACKOFF = (0.05, 0.1, 0.2, 0.4, 0.8)

#: How long a write that holds no claim waits for another run's claim on its file.
CLAIM_WAIT_SECONDS = 60.0


def claim_path(path: Path) -> Path:
    """The lock file that claims ``path`` for the run writing it."""
    return path.parent / f".{path.name}{_LOCK_TAG}{TEMP_SUFFIX}"


def output_of(leftover: Path) -> Path | None:
    """The output a temporary file or claim (``.NAME.TAG`` + suffix) belongs to."""
    name = leftover.name
    if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)):
        return None
    stem = name[1 : -len(TEMP_SUFFIX)]
    if "." not in stem:
        return None
    return leftover.parent / stem.rsplit(".", 1)[0]


#: Beyond this many characters a Windows path needs the ``\\?\`` prefix: 259 for a file
#: (MAX_PATH, 260, holds the terminating NUL), 247 for a folder being created; the
#: prefix is given from the lower one on (it does no harm to a shorter path).
WINDOWS_PATH_LIMIT = 247
_LONG_PREFIX = "\\\\?\\"


def long_path_form(path: str) -> str:
    r"""A Windows path in the ``\\?\`` form that lifts the 260-character limit, when it is
    longer than :data:`WINDOWS_PATH_LIMIT`; otherwise ``path`` unchanged. Pure text (it
    runs on any platform).

    ``C:\very\long\...`` -> ``\\?\C:\very\long\...``; on a share,
    ``\\server\share\...`` -> ``\\?\UNC\server\share\...``. Windows does not normalise a
    prefixed path, so it is made absolute and normalised first (``/`` to ``\``, ``..``
    resolved).
    """
    if path.startswith(_LONG_PREFIX):
        return path
    full = ntpath.abspath(path)
    if len(full) <= WINDOWS_PATH_LIMIT:
        return path
    if full.startswith("\\\\"):
        return f"{_LONG_PREFIX}UNC\\{full[2:]}"
    return _LONG_PREFIX + full


def windows_long_path(path: str | os.PathLike[str]) -> str:
    r"""``path`` as it must be given to the operating system to open, create, rename,
    delete or test it: on Windows, a path longer than :data:`WINDOWS_PATH_LIMIT` gets
    the ``\\?\`` prefix (:func:`long_path_form`); elsewhere, and for shorter paths,
    ``path`` unchanged.

    Planned outputs keep their plain spelling (for messages and comparisons); the code
    that touches the disk calls this when it does.
    """
    text = os.fspath(path)
    if sys.platform != "win32":
        return text
    return long_path_form(text)


def _lock(fd: int) -> bool:
    """Lock an open file without waiting; False when another process holds it."""
    try:
        if sys.platform == "win32":  # pragma: no cover
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        else:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK, errno.EDEADLK):
            return False
        if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            return True  # a file system without locks: write without coordinating
        raise
    return True


class Claim:
    """A held claim on one output file; :meth:`release` (or ``with``) gives it up."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def try_acquire(cls, path: Path) -> Claim | None:
        """Claim ``path``; None while another run (process) holds its claim."""
        lock = claim_path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o666)
            try:
                if not _lock(fd):
                    os.close(fd)
                    return None
                # The lock file may have been deleted (and made again) by the run that held
                # it between our open and our lock: then ours locks nothing; try again.
                try:
                    same = os.path.samestat(os.fstat(fd), os.stat(lock))
                except FileNotFoundError:
                    same = False
            except BaseException:
                os.close(fd)
                raise
            if same:
                return cls(path, fd)
            os.close(fd)

    @classmethod
    def acquire(cls, path: Path, wait: float = CLAIM_WAIT_SECONDS) -> Claim:
        """Claim ``path``, waiting up to ``wait`` seconds for another run to finish it."""
        deadline = time.monotonic() + wait
        while (claim := cls.try_acquire(path)) is None:
            if time.monotonic() > deadline:
                raise ImageWriteError(
                    f"{path}: another bgremover run is writing this file; "
                    "wait for it to finish, or choose another name."
                )
            time.sleep(0.05)
        return claim

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Give the claim up and delete its lock file (unless another run reopened it)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        lock = claim_path(self.path)
        if sys.platform == "win32":  # pragma: no cover - an open file cannot be deleted
            with contextlib.suppress(OSError):
                msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
            os.close(fd)
            with contextlib.suppress(OSError):
                lock.unlink()  # fails while another run has it open: that run deletes it
        else:
            with contextlib.suppress(OSError):
                lock.unlink()  # deleted while locked: a run that opened it sees and retries
            os.close(fd)

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:  # a claim dropped without release (a bug): free it anyway
        with contextlib.suppress(Exception):
            self.release()


def remove_leftovers(folder: Path) -> int:
    """Delete the temporary files and claims in ``folder`` whose run has ended.

    A file is left over when its output's claim is free: the run that made it was
    killed or crashed. Files whose output another run holds are kept. Returns how many
    temporary files (unfinished writes) were deleted.
    """
    removed = 0
    if not folder.is_dir():
        return 0
    for leftover in sorted(folder.glob(f".*{TEMP_SUFFIX}")):
        output = output_of(leftover)
        if output is None or not leftover.exists():
            continue
        try:
            claim = Claim.try_acquire(output)
        except OSError:
            continue
        if claim is None:
            continue  # another run is writing this output: its file is not left over
        with claim:
            if leftover != claim_path(output):
                with contextlib.suppress(OSError):
                    leftover.unlink()
                    removed += 1
    return removed


@contextlib.contextmanager
def _claimed(path: Path, claim: Claim | None) -> Iterator[None]:
    if claim is not None and claim.held:
        yield
        return
    with Claim.acquire(path):
        yield


def replace_with_retry(src: str | Path, dst: str | Path) -> None:
    """``os.replace``, tried again after short waits while it raises PermissionError.

    Windows refuses to replace a file that another program has open (an image viewer,
    a virus scanner, a search indexer), usually only for a moment; elsewhere the error
    comes back at once after the same waits.
    """
    for delay in (*REPLACE_BACKOFF, None):
        try:
            os.replace(src, dst)
            return
        except PermissionError:
            if delay is None:
                raise
            time.sleep(delay)


def write_atomically(
    path: Path, fill: Callable[[BinaryIO], object], claim: Claim | None = None
) -> int:
    """Create ``path`` with what ``fill`` writes, atomically; returns its size in bytes.

    The data goes to a temporary file in the same folder, is flushed to disk, closed
    and then renamed over ``path``: readers (and a rerun after a crash) see either
    no file or the complete one. If ``fill`` raises, nothing is left behind. The write
    holds ``path``'s claim (``claim``, when the caller holds it already), so that
    another run neither deletes its temporary file nor writes the same file at once.
    """
    tmp_name = None
    path = Path(windows_long_path(path))  # past 260 characters on Windows: the \\?\ form
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _claimed(path, claim):
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
            # Closed before the rename: Windows cannot rename a file that is open.
            try:
                replace_with_retry(tmp_name, path)
            except PermissionError:
                raise ImageWriteError(
                    f"{path}: could not be replaced: another program has it open, or the "
                    "folder is read-only. Close the program showing it (or choose another "
                    "output folder) and run again."
                ) from None
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
