"""Runs sharing an output folder, and files other programs hold open."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bgremover import atomic
from bgremover.atomic import TEMP_SUFFIX, Claim, remove_leftovers, write_atomically
from bgremover.errors import ImageWriteError

HOLD = """
import sys, time
from pathlib import Path
from bgremover.atomic import Claim
claim = Claim.try_acquire(Path(sys.argv[1]))
print("held" if claim else "busy", flush=True)
sys.stdin.readline()
"""


def test_a_temporary_file_is_left_over_only_when_its_run_has_ended(tmp_path: Path) -> None:
    out = tmp_path / "a.png"
    part = tmp_path / f".a.png.1234abcd{TEMP_SUFFIX}"
    part.write_bytes(b"half")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert Claim.try_acquire(out) is None  # another process is writing it
        assert remove_leftovers(tmp_path) == 0
        assert part.exists()
    finally:
        holder.communicate("\n", timeout=60)
    assert remove_leftovers(tmp_path) == 1  # its run has ended: left over
    assert not list(tmp_path.iterdir())  # the claim's lock file went with it


def _open_paths() -> set[str]:
    fds = Path("/proc/self/fd")
    return {os.path.realpath(p) for p in fds.iterdir()} if fds.is_dir() else set()


def test_replace_is_retried_while_the_target_is_held_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows refuses to replace a file another program has open (PermissionError) and
    cannot be run here: os.replace is made to fail that way twice, then to work."""
    real_replace = os.replace
    calls: list[str] = []

    def held_open(src, dst):
        calls.append(str(src))
        assert os.path.realpath(src) not in _open_paths()  # closed before the rename
        if len(calls) <= 2:
            raise PermissionError(13, "The process cannot access the file")
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", held_open)
    out = tmp_path / "a.png"
    assert write_atomically(out, lambda fh: fh.write(b"data")) == 4
    assert len(calls) == 3 and out.read_bytes() == b"data"
    assert not list(tmp_path.glob(f".*{TEMP_SUFFIX}"))


def test_replace_held_open_for_good_gives_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def always_held(src, dst):
        raise PermissionError(13, "The process cannot access the file")

    monkeypatch.setattr(atomic.os, "replace", always_held)
    monkeypatch.setattr(atomic, "REPLACE_BACKOFF", (0.01, 0.02))
    out = tmp_path / "a.png"
    out.write_bytes(b"old")
    with pytest.raises(ImageWriteError, match="another program has it open"):
        write_atomically(out, lambda fh: fh.write(b"new"))
    assert out.read_bytes() == b"old"
    assert not list(tmp_path.glob(f".*{TEMP_SUFFIX}"))
