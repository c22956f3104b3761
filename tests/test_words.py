"""The engine's failures in two voices: the command line's (options, commands) and the
app's (menus; no library's raw words in the message, they go behind Details)."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from bgremover.errors import BgRemoverError, ErrorKind, ImageReadError, ModelError
from bgremover.files.imaging import HEIF_EXTENSIONS, read_image
from bgremover.gui.wording import APP_ADVICE, app_advice, app_message
from bgremover.network.families import Signature, guess_family
from bgremover.network.models import DEFAULT_MODEL, REGISTRY, local_spec
from bgremover.network.session import create_session
from bgremover.network.sources import Source
from bgremover.network.store import ModelStore

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


def test_a_model_that_cannot_be_downloaded_speaks_of_menus(
    tmp_path: Path, monkeypatch, window
) -> None:
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
    assert exc.kind is ErrorKind.MODEL_UNAVAILABLE
    assert "bgremover models pull unreachable" in str(exc) and "--model PATH" in str(exc)
    assert "▸" not in exc.app_message  # the engine names no menu: the app does
    assert_plain(exc)
    shown = app_message(exc)  # as the app words it, with the window's real menus
    assert "File ▸ Use a Model File… uses a model file you have" in shown
    assert "Edit ▸ Reprocess All with Current Settings (Ctrl+R) tries again" in shown
    assert "unreachable.onnx yourself" in shown and "--" not in shown


def test_onnx_runtimes_own_words_go_behind_details(tmp_path: Path) -> None:
    junk = tmp_path / "downloaded.onnx"
    junk.write_bytes(b"this is not a protobuf")
    with pytest.raises(ModelError) as caught:
        create_session(junk, ["CPUExecutionProvider"])
    exc = caught.value
    assert "downloaded.onnx could not be loaded as a model" in exc.app_message
    assert exc.technical and exc.technical not in exc.app_message  # "Protobuf parsing failed"
    assert exc.technical in str(exc)


def test_the_engine_names_no_menu_of_the_app() -> None:
    """Menus are the app's to name (gui/wording.py): an engine module that names one
    would drift from the real menu the day it is renamed."""
    package = Path(__file__).resolve().parents[1] / "bgremover"
    engine = [p for p in package.rglob("*.py") if "gui" not in p.relative_to(package).parts]
    assert len(engine) > 20
    naming = [p.name for p in engine if "▸" in p.read_text(encoding="utf-8")]
    assert naming == []


def test_each_kind_the_app_words_names_real_menu_items(window, tmp_path: Path) -> None:
    """Every menu item the app's advice names is a real QAction of the real window's
    menu bar, in that menu, with its shortcut: the advice reads the actions' own texts."""
    real = set()
    for top in window.menuBar().actions():
        menu = top.menu()
        for action in menu.actions() if menu is not None else ():
            if not action.isSeparator() and action.menu() is None:
                title, text = menu.title().replace("&", ""), action.text().replace("&", "")
                keys = action.shortcut().toString()
                real.add(f"{title} ▸ {text}" + (f" ({keys})" if keys else ""))
    assert "Edit ▸ Reprocess All with Current Settings (Ctrl+R)" in real
    assert set(APP_ADVICE) >= {ErrorKind.MODEL_UNAVAILABLE, ErrorKind.MODEL_FILE_MISSING}
    for kind in APP_ADVICE:
        advice = app_advice(BgRemoverError("Something failed.", kind=kind))
        named = [item for item in real if item in advice]
        assert named and advice.count("▸") == len(named), (kind, advice)
        assert_plain(BgRemoverError("Something failed.", app_fix=advice, kind=kind))


def real_menu_item(window, text: str) -> str:
    """The menu item whose text starts with ``text`` as the real window's menu bar shows
    it: "Menu ▸ Text (Shortcut)", read from the QAction itself."""
    for top in window.menuBar().actions():
        menu = top.menu()
        for action in menu.actions() if menu is not None else ():
            if action.text().replace("&", "").startswith(text):
                title, shown = menu.title().replace("&", ""), action.text().replace("&", "")
                keys = action.shortcut().toString()
                return f"{title} ▸ {shown}" + (f" ({keys})" if keys else "")
    raise AssertionError(f"no menu item {text!r}")


def test_the_apps_notes_name_the_real_reprocess_item(window) -> None:
    """The settings pane's note, Save's refusal for an image that was not processed and
    the reason given for a cancelled model preparation name the menu item that redoes
    the queue by the real QAction's menu, text and shortcut (read through
    wording.use_menus), not by a copy of its words that could drift."""
    from bgremover.engine.pipeline import EngineConfig
    from bgremover.gui.entry import QueueEntry
    from bgremover.gui.jobs import JobEnd, JobState
    from bgremover.gui.queue_jobs import _stopped_reason
    from bgremover.gui.settings_panel import APPLIES_TO

    reprocess = real_menu_item(window, "Reprocess")
    assert reprocess == "Edit ▸ Reprocess All with Current Settings (Ctrl+R)"
    note = window.panel.applies_label.text()
    assert note == f"{APPLIES_TO} {reprocess} redoes the whole queue now."
    entry = QueueEntry(1, Path("cat.jpg"), "cat.jpg")
    entry.cutout.stopped("Stopped before it ran.")
    refusal = window.saving.why_nothing_to_save(entry)
    assert refusal == f"cat.jpg was not processed. {reprocess} makes its cutout."
    config = EngineConfig(model="slowmodel")
    cause = JobEnd(1, "prepare", ("prepare", None, config), JobState.CANCELLED)
    end = JobEnd(2, "process", ("process", 1, config), JobState.CANCELLED, blocked_by=cause)
    reason = _stopped_reason(cause, end)
    assert reason == (
        f"Not processed: you cancelled preparing the model slowmodel. {reprocess} tries again."
    )
    for text in (note, refusal, reason):
        assert text.count("▸") == 1 and "Reprocess (" not in text and "All (" not in text


def test_errors_carry_their_kind(tmp_path: Path) -> None:
    """A front end tells failures apart by kind: each class has one, a raise may name a
    finer one, and the value is a stable string."""
    with pytest.raises(ModelError) as missing:
        local_spec(tmp_path / "gone.onnx")
    assert missing.value.kind is ErrorKind.MODEL_FILE_MISSING
    assert "File ▸" not in missing.value.app_message and "--model" not in missing.value.app_message
    with pytest.raises(ModelError) as ambiguous:
        guess_family(Signature((1, 3, 1024, 1024), ((1, 1, 1024, 1024),), "Sigmoid"))
    assert ambiguous.value.kind is ErrorKind.MODEL_FAMILY_AMBIGUOUS
    junk = tmp_path / "notes.png"
    junk.write_text("not a picture")
    with pytest.raises(ImageReadError) as unreadable:
        read_image(junk)
    assert unreadable.value.kind is ErrorKind.IMAGE_UNREADABLE == "image-unreadable"
    assert BgRemoverError("x").kind is ErrorKind.FAILURE
    assert len({k.value for k in ErrorKind}) == len(ErrorKind)
    # Without a kind of the app's own, the app shows the engine's advice as it is.
    assert app_message(unreadable.value) == unreadable.value.app_message
