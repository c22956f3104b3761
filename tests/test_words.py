"""The engine's failures in two voices: the command line's (options, commands) and the
app's (menus; no library's raw words in the message, they go behind Details)."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from bgremover.errors import BgRemoverError, ImageReadError, ModelError
from bgremover.imaging import HEIF_EXTENSIONS, read_image
from bgremover.models import DEFAULT_MODEL, REGISTRY, ModelStore, Source
from bgremover.session import create_session

#: Words a desktop user should never have to read in the app's messages.
CLI_WORDS = ("--", "bgremover models", "`", "Pillow", "pip install pillow-heif")


def assert_plain(exc: BgRemoverError) -> None:
    for word in CLI_WORDS:
        assert word not in exc.app_message, (word, exc.app_message)


def test_an_unreadable_file_names_no_library(tmp_path: Path) -> None:
    junk = tmp_path / "notes.png"
    junk.write_text("these are notes, not a picture")
    with pytest.raises(ImageReadError) as caught:
        read_image(junk)
    assert "not an image format bgremover can read" in str(caught.value)
    assert "Pillow" not in str(caught.value)
    assert_plain(caught.value)


@pytest.mark.skipif(bool(HEIF_EXTENSIONS), reason="HEIC support is installed here")
def test_heic_advice_is_the_readmes(tmp_path: Path) -> None:
    photo = tmp_path / "IMG_0001.HEIC"
    photo.write_bytes(b"\0\0\0\x18ftypheic" + b"\0" * 64)
    with pytest.raises(ImageReadError) as caught:
        read_image(photo)
    assert "pip install 'bgremover[heic]'" in caught.value.app_message
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert "pip install 'bgremover[heic]'" in readme


def test_damaged_data_keeps_the_decoders_words_behind_details(tmp_path: Path) -> None:
    photo = tmp_path / "cut.jpg"
    whole = (Path(__file__).resolve().parents[1] / "assets" / "sample.jpg").read_bytes()
    photo.write_bytes(whole[:2000])  # a header and the start of the data
    with pytest.raises(ImageReadError) as caught:
        read_image(photo)
    exc = caught.value
    assert "damaged or truncated" in exc.app_message
    assert exc.technical and exc.technical not in exc.app_message
    assert exc.technical in str(exc)  # the command line shows it in brackets


def test_a_size_refusal_tells_the_app_user_what_they_can_change(tmp_path: Path) -> None:
    with pytest.raises(ImageReadError) as caught:
        read_image(Path(__file__).resolve().parents[1] / "assets" / "sample.jpg", 0.1)
    exc = caught.value
    assert "--max-megapixels" in str(exc)
    assert "BGREMOVER_MAX_MEGAPIXELS" in exc.app_message
    assert_plain(exc)


def test_a_model_that_cannot_be_downloaded_speaks_of_menus(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BGREMOVER_HOME", str(tmp_path))
    spec = replace(
        REGISTRY[DEFAULT_MODEL],
        name="unreachable",
        filename="unreachable.onnx",
        sources=(Source("url", "http://127.0.0.1:9/unreachable.onnx"),),  # port 9: nobody
        sha256=hashlib.sha256(b"x").hexdigest(),
        md5=None,
    )
    with pytest.raises(ModelError) as caught:
        ModelStore().ensure(spec)
    exc = caught.value
    assert "bgremover models pull unreachable" in str(exc) and "--model PATH" in str(exc)
    assert "File ▸ Use a Model File" in exc.app_message and "Reprocess" in exc.app_message
    assert_plain(exc)


def test_onnx_runtimes_own_words_go_behind_details(tmp_path: Path) -> None:
    junk = tmp_path / "downloaded.onnx"
    junk.write_bytes(b"this is not a protobuf")
    with pytest.raises(ModelError) as caught:
        create_session(junk, ["CPUExecutionProvider"])
    exc = caught.value
    assert "downloaded.onnx could not be loaded as a model" in exc.app_message
    assert exc.technical and exc.technical not in exc.app_message  # "Protobuf parsing failed"
    assert exc.technical in str(exc)
