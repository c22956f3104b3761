"""Resume that cannot be fooled: an existing output is "already done" only when it records
being made from this very photo; any other file at its name is kept and reported."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover.export.compose import ComposeOptions
from bgremover.export.output import (
    DONE,
    MISSING,
    OTHER_PHOTO,
    REDO,
    UNVERIFIED,
    SourceRecord,
    existing_output,
    write_output,
)

from conftest import DATA, SAMPLE, cli

ROCKET = DATA / "skimage_rocket.jpg"


def _record(tmp_path: Path, name: str, content: bytes) -> SourceRecord:
    photo = tmp_path / name
    photo.write_bytes(content)
    return SourceRecord.of(photo)


@pytest.mark.parametrize("fmt", ["png", "webp"])
def test_the_record_in_an_output_names_its_photo(
    tmp_path: Path, rgb_gradient: np.ndarray, fmt: str
) -> None:
    alpha = rgb_gradient[..., 0]
    mine = _record(tmp_path, "mine.jpg", SAMPLE.read_bytes())
    other = _record(tmp_path, "other.jpg", ROCKET.read_bytes())
    out = tmp_path / f"cut.{fmt}"
    assert existing_output(out, mine).state == MISSING
    write_output(rgb_gradient, alpha, ComposeOptions(), out, fmt, mine)
    assert existing_output(out, mine).state == DONE
    seen = existing_output(out, other)
    assert seen.state == OTHER_PHOTO and seen.record is not None
    assert seen.record.name == "mine.jpg"
    # The same photo under another name (renamed, copied) is still the same photo.
    assert existing_output(out, _record(tmp_path, "Renamed.JPG", SAMPLE.read_bytes())).state == DONE
    with Image.open(out) as img:  # still an ordinary image for every other program
        img.load()
        assert img.size == (64, 48)


def test_a_photo_changed_in_place_is_another_photo(
    tmp_path: Path, rgb_gradient: np.ndarray
) -> None:
    photo = tmp_path / "a.jpg"
    shutil.copy(SAMPLE, photo)
    out = tmp_path / "a.png"
    write_output(rgb_gradient, rgb_gradient[..., 0], ComposeOptions(), out, "png",
                 SourceRecord.of(photo))  # fmt: skip
    data = bytearray(photo.read_bytes())
    data[5000] ^= 0xFF  # same size, one byte edited
    photo.write_bytes(bytes(data))
    assert existing_output(out, SourceRecord.of(photo)).state == OTHER_PHOTO


def test_unfinished_output_of_this_photo_is_redone_files_without_record_are_not(
    tmp_path: Path, rgb_gradient: np.ndarray
) -> None:
    mine = _record(tmp_path, "mine.jpg", SAMPLE.read_bytes())
    out = tmp_path / "cut.png"
    write_output(rgb_gradient, rgb_gradient[..., 0], ComposeOptions(), out, "png", mine)
    out.write_bytes(out.read_bytes()[:-20])  # cut short (copied by another program, say)
    assert existing_output(out, mine).state == REDO
    plain = tmp_path / "plain.png"
    Image.fromarray(rgb_gradient).save(plain)  # as bgremover 0.1.0 or any other program
    assert existing_output(plain, mine).state == UNVERIFIED
    (tmp_path / "junk.png").write_bytes(b"not a png")
    assert existing_output(tmp_path / "junk.png", mine).state == UNVERIFIED


def _two_photos(src: Path) -> None:
    src.mkdir()
    shutil.copy(SAMPLE, src / "a.jpg")
    shutil.copy(ROCKET, src / "b.jpg")


def test_renamed_photos_are_not_taken_for_each_others_outputs(
    tmp_path: Path, u2netp_path: Path
) -> None:
    """Two photos swap names after a run: each name's output is another photo's now.
    Nothing is taken for done, nothing is overwritten, and each is reported."""
    src, out = tmp_path / "in", tmp_path / "out"
    _two_photos(src)
    cli("remove", str(src), "-o", str(out), "-q", check=True)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    (src / "a.jpg").rename(src / "tmp.jpg")
    (src / "b.jpg").rename(src / "a.jpg")
    (src / "tmp.jpg").rename(src / "b.jpg")

    proc = cli("remove", str(src), "-o", str(out), "-q")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("exists and was not made from this photo") == 2, proc.stderr
    assert "made from 'b.jpg'" in proc.stderr and "use --overwrite" in proc.stderr
    assert "0 written" in proc.stderr and "2 failed" in proc.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before

    proc = cli("remove", str(src), "-o", str(out), "-q", "--overwrite")
    assert proc.returncode == 0, proc.stderr
    for name in ("a", "b"):
        state = existing_output(out / f"{name}.png", SourceRecord.of(src / f"{name}.jpg"))
        assert state.state == DONE
    proc = cli("remove", str(src), "-o", str(out), "-q", check=True)
    assert "0 written, 2 already done" in proc.stderr


def test_a_case_colliding_name_never_counts_as_another_photos_output(
    tmp_path: Path, u2netp_path: Path
) -> None:
    """`Photo.jpg` and `photo.jpg` are one output name on a case-insensitive disk
    (macOS, Windows): the finished output of one is not the other's. Simulated on any
    disk by giving the second photo the first one's output."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    shutil.copy(SAMPLE, src / "Photo.jpg")
    cli("remove", str(src / "Photo.jpg"), "-o", str(out), "-q", check=True)
    first = (out / "Photo.png").read_bytes()
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(ROCKET, other / "photo.jpg")
    shutil.copy(out / "Photo.png", out / "photo.png")  # what that disk shows under this name

    proc = cli("remove", str(other / "photo.jpg"), "-o", str(out), "-q")
    assert proc.returncode == 1, proc.stderr
    assert "was not made from this photo (it was made from 'Photo.jpg')" in proc.stderr
    assert (out / "photo.png").read_bytes() == first


def test_outputs_without_a_record_are_kept_and_said_so(tmp_path: Path, u2netp_path: Path) -> None:
    """Outputs of bgremover 0.1.0 (no record) are skipped, with a line saying why."""
    src, out = tmp_path / "in", tmp_path / "out"
    _two_photos(src)
    out.mkdir()
    Image.new("RGBA", (8, 8), (1, 2, 3, 255)).save(out / "a.png")
    old = (out / "a.png").read_bytes()
    proc = cli("remove", str(src), "-o", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert "does not record which photo it was made from" in proc.stderr
    assert "1 written, 1 already done" in proc.stderr
    assert (out / "a.png").read_bytes() == old
    assert existing_output(out / "b.png", SourceRecord.of(src / "b.jpg")).state == DONE
