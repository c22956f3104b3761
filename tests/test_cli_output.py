"""What `remove -o` names (a file or a folder), and the outputs refused before any image runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from conftest import SAMPLE, cli, offline_env


def _photos(folder: Path, count: int = 3) -> Path:
    folder.mkdir(parents=True)
    for i in range(count):
        Image.open(SAMPLE).save(folder / f"p{i}.jpg")
    return folder


@pytest.mark.model
def test_single_file_with_file_name_writes_that_file(tmp_path: Path, u2netp_path: Path) -> None:
    out = tmp_path / "cuts" / "hopper.webp"
    proc = cli("remove", str(SAMPLE), "-o", str(out), check=True)
    assert out.is_file() and Image.open(out).format == "WEBP"
    assert "1 written in" in proc.stderr and str(out) in proc.stderr


@pytest.mark.model
def test_name_without_extension_is_a_folder(tmp_path: Path, u2netp_path: Path) -> None:
    """`-o noext` with one file: a folder holding <stem>.png, and the summary says where."""
    proc = cli("remove", str(SAMPLE), "-o", str(tmp_path / "noext"), check=True)
    written = tmp_path / "noext" / "sample.png"
    assert (tmp_path / "noext").is_dir() and Image.open(written).mode == "RGBA"
    assert f"-> {written}" in proc.stderr


@pytest.mark.model
def test_trailing_separator_makes_a_dotted_name_a_folder(tmp_path: Path, u2netp_path: Path) -> None:
    cli("remove", str(SAMPLE), "-o", f"{tmp_path / 'shots.v2'}/", check=True)
    assert (tmp_path / "shots.v2" / "sample.png").is_file()


def test_extension_the_writer_cannot_produce_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "x.gif"
    proc = cli("remove", str(SAMPLE), "-o", str(out), env=offline_env(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "Cannot write" in proc.stderr and "PNG (.png)" in proc.stderr
    assert "WebP (.webp)" in proc.stderr and "x.png" in proc.stderr
    assert "Could not obtain model" not in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_a_jpeg_that_would_need_transparency_is_refused_before_the_model(tmp_path: Path) -> None:
    out = tmp_path / "x.jpg"
    proc = cli("remove", str(SAMPLE), "-o", str(out), env=offline_env(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "JPEG cannot keep transparency" in proc.stderr
    assert "--background white" in proc.stderr
    assert "Could not obtain model" not in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_file_name_for_a_folder_input_is_refused(tmp_path: Path) -> None:
    photos = _photos(tmp_path / "photos")
    out = tmp_path / "x.png"
    proc = cli("remove", str(photos), "-o", str(out), env=offline_env(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert f"-o {out} names a file" in proc.stderr
    assert f"the input {photos} is a folder: give an output folder" in proc.stderr
    assert not out.exists()


def test_file_name_for_several_inputs_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.jpg"
    Image.open(SAMPLE).save(other)
    out = tmp_path / "x.webp"
    proc = cli("remove", str(SAMPLE), str(other), "-o", str(out), env=offline_env(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "there are 2 inputs: give an output folder" in proc.stderr
    assert not out.exists()


def test_format_that_disagrees_with_the_extension_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "x.png"
    proc = cli("remove", str(SAMPLE), "-o", str(out), "-f", "webp", env=offline_env(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "-f webp does not match the output name" in proc.stderr and "x.webp" in proc.stderr
    assert not out.exists()


def test_existing_file_where_a_folder_is_needed_is_refused_up_front(tmp_path: Path) -> None:
    """Before: every image was processed, then each failed to be written."""
    photos = _photos(tmp_path / "photos")
    blocker = tmp_path / "somefile"
    blocker.write_text("keep me")
    for out, says in (
        (blocker, f"The output {blocker} is an existing file, but a folder is needed"),
        (blocker / "sub", f"{blocker} is a file, not a folder"),
    ):
        proc = cli("remove", str(photos), "-o", str(out), env=offline_env(tmp_path))
        assert proc.returncode == 2, proc.stderr
        assert says in proc.stderr
        assert "failed:" not in proc.stderr and "Could not obtain model" not in proc.stderr
    assert blocker.read_text() == "keep me"


@pytest.mark.model
def test_existing_folder_with_a_dotted_name_is_a_folder(tmp_path: Path, u2netp_path: Path) -> None:
    photos = _photos(tmp_path / "photos", 1)
    out = tmp_path / "cuts.png"
    out.mkdir()
    cli("remove", str(photos), "-o", str(out), check=True)
    assert (out / "p0.png").is_file()


def test_resolve_output_rules(tmp_path: Path) -> None:
    """The rules behind -o, on the engine side (the command line and compare use them)."""
    from bgremover.engine.plan import resolve_output
    from bgremover.errors import UsageError

    photo = tmp_path / "a.jpg"
    Image.open(SAMPLE).save(photo)
    target = resolve_output([photo], tmp_path / "a.webp")
    assert (target.single_file, target.fmt) == (True, "webp")
    target = resolve_output([photo], tmp_path / "out", "webp")
    assert (target.single_file, target.fmt) == (False, "webp")
    assert resolve_output([photo], f"{tmp_path / 'v1.5'}/").single_file is False
    # A single input that does not exist is not refused here: the run says it is missing.
    assert resolve_output([tmp_path / "nope.jpg"], tmp_path / "x.png").single_file is True
    with pytest.raises(UsageError, match=r"not \.gif"):
        resolve_output([photo], tmp_path / "a.gif")
    # A preset's format is the default: a folder takes it, a file's extension wins.
    assert resolve_output([photo], tmp_path / "out", default="jpeg").fmt == "jpeg"
    assert resolve_output([photo], tmp_path / "a.png", default="jpeg").fmt == "png"
    with pytest.raises(UsageError, match="is a folder"):
        resolve_output([tmp_path], tmp_path / "a.png")
