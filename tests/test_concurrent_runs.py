"""Runs sharing an output folder, and files other programs hold open."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bgremover.errors import ImageWriteError
from bgremover.files import atomic
from bgremover.files.atomic import TEMP_SUFFIX, Claim, remove_leftovers, write_atomically

HOLD = """
import sys, time
from pathlib import Path
from bgremover.files.atomic import Claim
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


def _camera_photos(folder: Path, count: int = 6) -> None:
    """About 12-megapixel JPEGs, upscaled from the test photos."""
    from PIL import Image

    from conftest import real_photos

    folder.mkdir()
    photos = real_photos()
    for i in range(count):
        with Image.open(photos[i % len(photos)]) as img:
            img.convert("RGB").resize((4000, 3000), Image.Resampling.BICUBIC).save(
                folder / f"{i:02d}.jpg", quality=90
            )


@pytest.mark.slow
@pytest.mark.model
def test_two_runs_on_one_folder_write_each_output_once(tmp_path: Path, u2netp_path: Path) -> None:
    """The second run starts once the first has written an output: both exit 0, every
    output is whole and written once in all, and no temporary file is left."""
    import threading

    from PIL import Image

    src, out = tmp_path / "in", tmp_path / "out"
    _camera_photos(src)
    cmd = [sys.executable, "-m", "bgremover", "-v", "remove", str(src), "-o", str(out), "-q"]
    logs: list[list[str]] = [[], []]
    first_written = threading.Event()

    def follow(proc: subprocess.Popen, lines: list[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if " -> " in line:
                first_written.set()

    procs, readers = [], []
    for n in range(2):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        reader = threading.Thread(target=follow, args=(proc, logs[n]), daemon=True)
        reader.start()
        procs.append(proc)
        readers.append(reader)
        if n == 0:
            assert first_written.wait(timeout=600), "".join(logs[0])
    codes = [proc.wait(timeout=600) for proc in procs]
    for reader in readers:
        reader.join(timeout=60)
    assert codes == [0, 0], logs
    written = [line.split(" -> ")[1].split(" (")[0] for lines in logs for line in lines
               if line.startswith("INFO") and " -> " in line]  # fmt: skip
    assert sorted(written) == sorted(str(out / f"{i:02d}.png") for i in range(6)), logs
    for path in sorted(out.iterdir()):
        with Image.open(path) as img:
            img.load()
    assert not [p for p in out.iterdir() if p.name.endswith(TEMP_SUFFIX)]
