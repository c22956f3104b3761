"""Bad input, faults and interrupted batches: a clear message every time, nothing lost."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from corpus import _bytes, _photo, build_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image, ImageOps

from bgremover.errors import ImageReadError
from bgremover.files.atomic import TEMP_SUFFIX
from bgremover.files.imaging import read_image

from conftest import DATA, SAMPLE, cli


def outputs(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.mark.slow
@pytest.mark.model
def test_corpus_batch_reports_every_broken_file_and_keeps_going(
    tmp_path: Path, u2netp_path: Path
) -> None:
    expect = build_corpus(tmp_path / "in")
    out = tmp_path / "out"
    proc = cli("remove", str(tmp_path / "in"), "-o", str(out))
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for name, expectation in expect.items():
        target = (out / name).with_suffix(".png")
        if expectation == "ok":
            with Image.open(tmp_path / "in" / name) as src:
                size = ImageOps.exif_transpose(src).size
            with Image.open(target) as result:
                assert result.mode == "RGBA" and result.size == size, name
                result.load()
        else:
            assert not target.exists(), name
            lines = [line for line in proc.stderr.splitlines() if Path(name).name in line]
            assert lines and expectation in lines[0], (name, lines)
    assert not list(out.rglob(f"*{TEMP_SUFFIX}"))
    bad = sum(1 for e in expect.values() if e != "ok")
    assert f"{len(expect) - bad} written" in proc.stderr and f"{bad} failed" in proc.stderr


def test_decompression_bomb_limit_is_configurable(tmp_path: Path, tiny_model: Path) -> None:
    big = tmp_path / "in" / "big.png"
    big.parent.mkdir()
    Image.new("RGB", (3000, 2000), (200, 50, 50)).save(big)  # 6 megapixels
    args = ["remove", str(big.parent), "-o", str(tmp_path / "out"), "--model", str(tiny_model)]
    refused = cli(*args, "--max-megapixels", "5")
    assert refused.returncode == 1
    assert "6 megapixels, over the limit of 5 megapixels" in refused.stderr
    assert "--max-megapixels" in refused.stderr
    accepted = cli(*args, "--max-megapixels", "10")
    assert accepted.returncode == 0, accepted.stderr
    assert Image.open(tmp_path / "out" / "big.png").size == (3000, 2000)


def test_outputs_never_escape_the_output_folder(tmp_path: Path, tiny_model: Path) -> None:
    src = tmp_path / "in" / "sub"
    src.mkdir(parents=True)
    _photo().save(src / "a.png")
    _photo().save(tmp_path / "in" / "b.png")
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "sub").symlink_to(outside, target_is_directory=True)  # a trap inside OUT
    proc = cli("remove", str(tmp_path / "in"), "-o", str(out), "--model", str(tiny_model))
    assert proc.returncode == 1
    assert "outside" in proc.stderr and "symbolic link" in proc.stderr
    assert not list(outside.iterdir())
    assert (out / "b.png").is_file()


def test_symlink_loops_are_not_followed(tmp_path: Path, tiny_model: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    _photo().save(src / "a.png")
    (src / "loop").symlink_to(src, target_is_directory=True)
    proc = cli("remove", str(src), "-o", str(tmp_path / "out"), "--model", str(tiny_model))
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in (tmp_path / "out").rglob("*.png")] == ["a.png"]


class BatchRun:
    """`bgremover remove` in a subprocess whose progress the test follows as it happens."""

    def __init__(self, cmd: list[str], out: Path) -> None:
        self.out = out
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.done_lines = 0  # one INFO line per image written ("SRC -> OUT")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if b" -> " in line:
                self.done_lines += 1

    def writing(self) -> bool:
        """An output is being written right now (its temporary file exists)."""
        return self.out.exists() and any(self.out.rglob(f"*{TEMP_SUFFIX}"))

    def kill_when(self, moment) -> str | None:
        """SIGKILL the batch at the first moment ``moment()`` names one; None if it ended."""
        while self.proc.poll() is None:
            if seen := moment():
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait()
                self.reader.join()
                return seen
            time.sleep(0.001)
        self.reader.join()
        return None


@pytest.mark.slow
@pytest.mark.model
def test_killed_batches_resume_to_the_same_result(tmp_path: Path, u2netp_path: Path) -> None:
    """SIGKILL a batch five times, at moments read from its own progress: while an output
    is being written, and right after an image is reported done with others in flight.
    The rerun completes it exactly as an uninterrupted run does."""
    src = tmp_path / "in"
    src.mkdir()
    photos = [SAMPLE, *sorted(DATA.glob("*.png")), *sorted(DATA.glob("*.jpg"))]
    for i in range(12):
        photo = photos[i % len(photos)]
        shutil.copy(photo, src / f"{i:02d}_{photo.name}")
    reference = tmp_path / "reference"
    cli("remove", str(src), "-o", str(reference), "-q", check=True)

    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "bgremover", "-v", "remove", str(src), "-o", str(out), "-q"]
    kills = []
    for attempt in range(5):
        run = BatchRun(cmd, out)
        if attempt % 2 == 0:  # while a file is half-written (or, failing that, once 2 are done)
            kills.append(
                run.kill_when(
                    lambda run=run: "mid-write" if run.writing()
                    else "after an image" if run.done_lines >= 2 else None
                )
            )  # fmt: skip
        else:
            kills.append(run.kill_when(lambda run=run: run.done_lines >= 1 and "after an image"))
        assert kills[-1], "the batch finished before it could be killed"
        # Only complete images (a hidden temporary file may remain; the next run removes it).
        for path in out.rglob("*") if out.exists() else []:
            if path.is_file() and not path.name.endswith(TEMP_SUFFIX):
                with Image.open(path) as img:
                    img.load()
    assert kills.count("after an image") >= 2, kills
    cli("remove", str(src), "-o", str(out), "-q", check=True)
    assert outputs(out) == outputs(reference)
    assert not list(out.rglob(f"*{TEMP_SUFFIX}"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.one_of(
        st.binary(max_size=4096),
        st.tuples(st.sampled_from(["PNG", "JPEG", "GIF", "WEBP", "BMP", "TIFF"]),
                  st.integers(0, 4000), st.binary(min_size=1, max_size=16)),
    )
)  # fmt: skip
def test_reader_never_crashes(tmp_path_factory: pytest.TempPathFactory, data) -> None:
    """Random bytes and corrupted real files: an ImageReadError or an image, nothing else."""
    if isinstance(data, tuple):
        fmt, offset, junk = data
        blob = bytearray(_bytes(_photo(24, 18), fmt))
        pos = offset % len(blob)
        blob[pos : pos + len(junk)] = junk  # overwrite a stretch with junk
        data = bytes(blob)
    path = tmp_path_factory.mktemp("fuzz") / "input.img"
    path.write_bytes(data)
    try:
        loaded = read_image(path)
    except ImageReadError as exc:
        assert str(path) in str(exc)
        return
    assert loaded.rgb.dtype == np.uint8 and loaded.rgb.ndim == 3


def test_unwritable_output_is_a_clear_failure(tmp_path: Path, tiny_model: Path) -> None:
    _photo().save(tmp_path / "a.png")
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("a file where the output folder should be")
    proc = cli(
        "remove", str(tmp_path / "a.png"), "-o", str(blocker / "out"), "--model", str(tiny_model)
    )
    # Refused before any image is processed (not one write error per image).
    assert proc.returncode == 2
    assert f"{blocker} is a file, not a folder" in proc.stderr and "Traceback" not in proc.stderr
    assert "failed:" not in proc.stderr and os.path.isfile(blocker)


def test_full_disk_stops_the_batch_without_partial_files(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from bgremover import Remover
    from bgremover.engine.batch import BatchFinished, ItemDone, ItemFailed, run_batch
    from bgremover.engine.plan import plan_batch
    from bgremover.files import atomic

    for i in range(4):
        _photo().save(tmp_path / f"{i}.png")
    calls = {"n": 0}
    real_fsync = os.fsync

    def fsync_until_full(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] >= 2:  # the second image's data does not fit on the disk
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync_until_full)
    plan = plan_batch([tmp_path], tmp_path / "out", "png")
    events = list(run_batch(plan.jobs, Remover(str(tiny_model)), finishers=1))
    done = [e for e in events if isinstance(e, ItemDone)]
    failed = [e for e in events if isinstance(e, ItemFailed)]
    finished = events[-1]
    assert isinstance(finished, BatchFinished) and finished.stopped
    assert "disk is full" in finished.stopped
    assert len(done) == 1 and len(failed) == 1  # stopped: the last two were not attempted
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [done[0].job.output.name]
