"""The pixel budget: how many pixels of images may be worked on at once, shared by the
batch's stages (:mod:`~bgremover.engine.batch`) and the server's workers
(:mod:`bgremover.serve`); and this process's resident memory, as the server's metrics and
``bench`` report it.

What must stay true: the pixels held never pass the limit, except that one image is
always admitted when nothing is held (an image larger than the limit runs alone).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

#: Pixels of the images in flight at once (read, in the model, or being written),
#: unless told otherwise: about two 12-megapixel photos. An image in flight holds about
#: 6 bytes per pixel (its colours, mask and alpha; outputs are written in strips): two
#: 12 MP photos peaked at 136 MB of arrays. However large the photos, this bounds that
#: memory; small photos still fill every stage.
DEFAULT_PIXELS_IN_FLIGHT = 25_000_000


class PixelBudget:
    """Admits images while the pixels being worked on stay under a limit (one at least)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.cond = threading.Condition()

    def acquire(self, pixels: int, stop: threading.Event | None = None) -> bool:
        """Wait until ``pixels`` fit, then hold them: True. False, holding nothing, when
        ``stop`` is set while waiting."""
        with self.cond:
            while self.used and self.used + pixels > self.limit:
                if stop is None:
                    self.cond.wait()
                    continue
                if stop.is_set():
                    return False
                self.cond.wait(0.05)
            self.used += pixels
            return True

    def release(self, pixels: int) -> None:
        """Give back ``pixels`` held by :meth:`acquire`."""
        with self.cond:
            self.used -= pixels
            self.cond.notify_all()

    @contextlib.contextmanager
    def hold(self, pixels: int) -> Iterator[None]:
        """Hold ``pixels`` for the ``with`` block (waiting as long as it takes)."""
        self.acquire(pixels)
        try:
            yield
        finally:
            self.release(pixels)


def rss_bytes() -> int:
    """This process's resident memory in bytes: now on Linux and Windows, its peak so far
    elsewhere (macOS and the BSDs report only that)."""
    if sys.platform == "win32":
        import ctypes
        from ctypes import wintypes

        class Counters(ctypes.Structure):  # PROCESS_MEMORY_COUNTERS
            _fields_ = [
                ("cb", wintypes.DWORD),
                ("PageFaultCount", wintypes.DWORD),
                *((name, ctypes.c_size_t) for name in (
                    "PeakWorkingSetSize", "WorkingSetSize", "QuotaPeakPagedPoolUsage",
                    "QuotaPagedPoolUsage", "QuotaPeakNonPagedPoolUsage",
                    "QuotaNonPagedPoolUsage", "PagefileUsage", "PeakPagefileUsage")),
            ]  # fmt: skip

        kernel32 = ctypes.WinDLL("kernel32")
        kernel32.GetCurrentProcess.restype = wintypes.HANDLE
        counters = Counters(cb=ctypes.sizeof(Counters))
        if kernel32.K32GetProcessMemoryInfo(
            kernel32.GetCurrentProcess(), ctypes.byref(counters), counters.cb
        ):
            return int(counters.WorkingSetSize)
        return 0
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak if sys.platform == "darwin" else peak * 1024)
