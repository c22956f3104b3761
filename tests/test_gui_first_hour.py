"""A new user's first hour with the app: what you see is what you save, settings that
apply at once, the selection following what you add, saving, quitting, and the words
and labels on screen. Real widgets offscreen, the real worker threads and u2netp."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("PySide6")
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QColor, QKeyEvent, QPalette
from PySide6.QtWidgets import QApplication, QFileDialog, QLineEdit, QMessageBox
from test_gui_compare_models import answer_download

from bgremover.engine.pipeline import EngineConfig, Remover
from bgremover.gui.export_panel import select_data
from bgremover.gui.imageconv import qimage_to_rgba, to_qimage
from bgremover.gui.model_choice import model_label
from bgremover.gui.queue import Status
from bgremover.gui.results import Preparing
from bgremover.gui.settings_panel import APPLIES_TO
from bgremover.gui.status import PreparationBar
from bgremover.network import models

from conftest import DATA, SAMPLE, build_tiny_model, is_job, make_window, served_model

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("isolated_settings")]
WAIT_MS = 300_000


def shown_pixels(window) -> np.ndarray:
    """What the Result view draws, as RGBA."""
    return qimage_to_rgba(window.viewer._item.pixmap().toImage())


def process(qtbot, window, *paths: Path) -> None:
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths(list(paths))


def settle(qtbot, window, change) -> None:
    """Make a change and wait for the work it starts (the window reports it settled)."""
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        change()
        window.jobs.check_settled()


def save_and_wait(qtbot, window, path: Path, mask_only: bool = False) -> None:
    with qtbot.waitSignal(window.output.ended, timeout=WAIT_MS, check_params_cb=is_job("save")):
        assert window.saving.save_result(window.current_entry(), path, mask_only) is not None


def inferences(window) -> list:
    return [job for job in window.engine.jobs() if job.kind == "process"]


# -- what you see is what you save ---------------------------------------------------


def test_the_preview_is_the_saved_file_with_a_background(qtbot, u2netp_path, tmp_path) -> None:
    window = make_window(qtbot)
    process(qtbot, window, SAMPLE)
    settle(qtbot, window, lambda: window.apply_settings(background="#00ff00"))
    entry = window.current_entry()
    assert entry.processed.options.background == (0, 255, 0, 255)
    save_and_wait(qtbot, window, tmp_path / "out.png")
    saved = np.asarray(Image.open(tmp_path / "out.png").convert("RGBA"))
    shown = shown_pixels(window)
    assert shown.shape == saved.shape
    assert np.array_equal(shown, saved)  # exactly the pixels written, green included
    corner = saved[0, 0]
    assert tuple(corner) == (0, 255, 0, 255)  # the background of the sample's corner


def test_the_preview_is_the_saved_mask_with_mask_only(qtbot, u2netp_path, tmp_path) -> None:
    window = make_window(qtbot)
    process(qtbot, window, SAMPLE)
    settle(qtbot, window, lambda: window.panel.mask_only_box.setChecked(True))
    save_and_wait(qtbot, window, tmp_path / "mask.png")
    saved = np.asarray(Image.open(tmp_path / "mask.png"))
    assert saved.ndim == 2  # a greyscale file
    assert np.array_equal(shown_pixels(window)[..., 0], saved)
    assert np.array_equal(saved, window.current_entry().processed.result.alpha)


def test_the_transparent_preview_is_the_saved_cutout(qtbot, u2netp_path, tmp_path) -> None:
    window = make_window(qtbot)
    process(qtbot, window, SAMPLE)
    save_and_wait(qtbot, window, tmp_path / "cut.png")
    saved = np.asarray(Image.open(tmp_path / "cut.png"))
    shown = shown_pixels(window)  # drawn premultiplied: colour exact where opaque
    assert np.array_equal(shown[..., 3], saved[..., 3])
    opaque = saved[..., 3] == 255
    assert opaque.any() and np.array_equal(shown[opaque], saved[opaque])


# -- settings apply at once, re-running only what they affect ------------------------


def test_a_look_change_recomposes_without_running_the_model(qtbot, u2netp_path) -> None:
    window = make_window(qtbot)
    process(qtbot, window, SAMPLE)
    entry = window.current_entry()
    result = entry.processed.result
    with qtbot.waitSignal(window.output.ended, timeout=WAIT_MS, check_params_cb=is_job("restage")):
        window.apply_settings(background="#ffffff")
        assert not inferences(window)  # no Ctrl+R, and no inference either
    assert entry.processed.result is result  # the same mask and alpha: composed again only
    assert tuple(shown_pixels(window)[0, 0]) == (255, 255, 255, 255)
    assert "Applying" not in window.detail.text()


def test_refinement_is_redone_from_the_mask_without_inference(qtbot, u2netp_path) -> None:
    window = make_window(qtbot)
    process(qtbot, window, DATA / "skimage_chelsea.png")
    entry = window.current_entry()
    before = entry.processed.result
    assert entry.processed.config.refine is True
    settle(qtbot, window, lambda: window.panel.refine_box.setChecked(False))
    after = entry.processed.result
    assert after.raw is before.raw  # the network's output, not run again
    assert after.timings["infer"] == before.timings["infer"]
    assert np.array_equal(after.alpha, after.mask)  # refinement off: the mask as it is,
    unrefined = Remover("u2netp", providers="cpu", refine=False).remove(entry.source)
    assert np.array_equal(after.mask, unrefined.mask)  # upscaled as rembg does, as the CLI's
    assert not np.array_equal(after.alpha, before.alpha)
    assert entry.processed.config.refine is False


def test_a_precision_change_runs_the_shown_image_again(
    qtbot, u2netp_path, u2netp_int8_path
) -> None:
    window = make_window(qtbot)
    process(qtbot, window, SAMPLE, DATA / "skimage_chelsea.png")
    window.select(window.queue.entries()[0])
    settle(qtbot, window, lambda: select_data(window.panel.precision_box, "int8"))
    shown, other = window.queue.entries()
    assert shown.processed.result.precision == "int8"  # applied at once, no Ctrl+R
    assert "int8" in window.provider_label.text()
    assert other.processed is None or other.processed.result.precision == "fp32"
    settle(qtbot, window, lambda: window.select(other))  # shown: brought up to the settings
    assert other.processed.config.precision == "int8"
    # int8 is unsure of the cat's blanket: the guard made it in fp32, and the app says so.
    assert other.processed.result.guard.ran_fp32
    assert "int8 was unsure of this photo" in window.detail.text()
    assert "u2netp fp32 (int8 was unsure of it)" in window.provider_label.text()
    assert APPLIES_TO in window.panel.applies_label.text()


def test_the_int8_guard_is_a_setting_of_int8(qtbot, u2netp_path, u2netp_int8_path) -> None:
    window = make_window(qtbot)
    box = window.panel.guard_box
    assert box.isChecked() and not box.isVisible()  # on by default; fp32 has no guard
    process(qtbot, window, DATA / "skimage_chelsea.png")
    settle(qtbot, window, lambda: select_data(window.panel.precision_box, "int8"))
    assert box.isVisible() and box.isEnabled()
    entry = window.current_entry()
    assert entry.processed.result.guard.ran_fp32
    settle(qtbot, window, lambda: box.setChecked(False))  # applied at once: int8 as it is
    assert window.settings.int8_guard is False
    result = entry.processed.result
    assert result.precision == "int8" and not result.guard.ran_fp32
    assert "int8 is unsure of this photo" in window.detail.text()
    assert "u2netp int8 on" in window.provider_label.text()


# -- what you add is what you see --------------------------------------------------


def test_added_images_are_selected_and_shown(qtbot, u2netp_path) -> None:
    window = make_window(qtbot)
    process(qtbot, window, SAMPLE)
    process(qtbot, window, DATA / "skimage_chelsea.png", DATA / "skimage_coffee.png")
    assert window.current_entry().name == "skimage_chelsea.png"  # the first of the new ones
    page = window.result_page
    assert window.viewer.has_image() and page.view_stack.currentWidget() is window.viewer
    assert window.windowTitle().startswith("skimage_chelsea.png")
    rgb = np.asarray(Image.open(SAMPLE).convert("RGB"))
    QApplication.clipboard().setImage(to_qimage(rgb).copy())
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.opening.paste()  # Ctrl+V
    assert window.current_entry().name == "Pasted image 1"
    assert window.viewer.has_image()


def test_a_failed_first_image_gives_way_to_the_next_good_one(qtbot, u2netp_path, tmp_path):
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a jpeg at all")
    window = make_window(qtbot)
    process(qtbot, window, broken, SAMPLE)
    assert window.queue.entries()[0].status is Status.FAILED
    assert window.current_entry().name == "sample.jpg"
    assert window.viewer.has_image()


def test_a_failed_image_shows_why_in_the_viewer(qtbot, u2netp_path, tmp_path) -> None:
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a jpeg at all")
    window = make_window(qtbot)
    process(qtbot, window, broken)
    assert window.result_page.view_stack.currentWidget() is window.drop_zone
    assert "could not be processed" in window.drop_zone.title.text()
    assert "damaged" in window.drop_zone.text.text() or "not an image" in (
        window.drop_zone.text.text()
    )
    assert "Pillow" not in window.drop_zone.text.text()


def test_an_empty_window_invites_a_drop(qtbot, u2netp_path) -> None:
    window = make_window(qtbot)
    assert window.result_page.view_stack.currentWidget() is window.drop_zone
    assert "Drop photos or folders here" in window.drop_zone.title.text()
    assert window.drop_zone.open_files.isVisibleTo(window)
    assert window.drop_zone.open_folder.isVisibleTo(window)
    assert window.windowTitle() == "bgremover"
    page = window.result_page
    assert not page.before_button.isEnabled() and page.zoom_label.text() == ""


def test_save_with_nothing_to_save_says_why(qtbot, u2netp_path) -> None:
    window = make_window(qtbot)
    window.file_menu.save.trigger()
    assert "Nothing to save" in window.statusBar().currentMessage()


# -- saving ------------------------------------------------------------------------


def test_the_default_save_name_is_never_the_photo(qtbot, u2netp_path, tmp_path) -> None:
    photo = tmp_path / "holiday.png"
    shutil.copy(DATA / "skimage_chelsea.png", photo)
    window = make_window(qtbot)
    process(qtbot, window, photo)
    entry = window.current_entry()
    assert window.saving.default_save_path(entry, False) == tmp_path / "holiday-cutout.png"
    assert window.saving.default_save_path(entry, True) == tmp_path / "holiday-mask.png"
    out = tmp_path / "out"
    out.mkdir()
    save_and_wait(qtbot, window, out / "first.png")
    saving = window.saving
    assert saving.default_save_path(entry, False) == out / "holiday-cutout.png"  # last folder
    window.apply_settings(last_output_folder=str(tmp_path / "batch-out"))  # what a batch sets
    assert saving.default_save_path(entry, False) == out / "holiday-cutout.png"  # still Save's


@pytest.fixture()
def answer_dialogs():
    """Answers the modal dialogs that open next, as a user would: each answer is a path
    to type into a file dialog (None: Cancel), or the button to press in a message box.
    ``answer_dialogs(answers)`` returns the texts of the message boxes answered. Whatever
    is left unanswered stops with the test."""
    state: dict = {"live": True, "answered": []}

    def start(answers: list) -> list[str]:
        seen: list[str] = []
        todo = list(answers)

        def step() -> None:
            if not state["live"] or not todo:
                return
            widget = QApplication.activeModalWidget()
            if widget is None or any(widget is w for w in state["answered"]):
                QTimer.singleShot(50, step)
                return
            state["answered"].append(widget)
            answer = todo.pop(0)
            if isinstance(widget, QFileDialog):
                if answer is None:
                    widget.reject()
                else:  # typed into the file name box, as a user does
                    widget.setDirectory(str(Path(answer).parent))
                    widget.findChild(QLineEdit, "fileNameEdit").setText(Path(answer).name)
                    widget.accept()
            elif isinstance(widget, QMessageBox):
                seen.append(widget.text())
                widget.button(answer).click()
            QTimer.singleShot(50, step)

        QTimer.singleShot(50, step)
        return seen

    yield start
    state["live"] = False


def test_the_save_dialog_refuses_the_original_before_any_replace_question(
    qtbot, u2netp_path, tmp_path, monkeypatch, answer_dialogs
) -> None:
    photo = tmp_path / "photo.png"
    shutil.copy(DATA / "skimage_chelsea.png", photo)
    before = photo.read_bytes()
    window = make_window(qtbot)
    process(qtbot, window, photo)
    monkeypatch.setattr(QFileDialog, "getSaveFileName", _qt_save_dialog)
    seen = answer_dialogs([photo, QMessageBox.StandardButton.Ok, None])
    window.saving.save_cutout()
    assert photo.read_bytes() == before  # the original is untouched
    assert len(seen) == 1 and "is the original photo" in seen[0]
    assert "Replace" not in seen[0]


def _qt_save_dialog(parent, caption, start, filters, selectedFilter="", options=None):
    """QFileDialog.getSaveFileName with Qt's own dialog (the platform's cannot be driven
    offscreen), passing the same options."""
    dialog = QFileDialog(parent, caption, start, filters)
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
    dialog.setOption(QFileDialog.Option.DontUseNativeDialog)
    if options is not None:
        dialog.setOptions(dialog.options() | options)
    if dialog.exec():
        return dialog.selectedFiles()[0], dialog.selectedNameFilter()
    return "", ""


# -- leaving -----------------------------------------------------------------------


def test_quitting_with_an_unsaved_cutout_asks_first(
    qtbot, u2netp_path, tmp_path, answer_dialogs
) -> None:
    window = make_window(qtbot)
    process(qtbot, window, SAMPLE)
    assert window.isWindowModified()
    window.confirm_quit = True
    try:
        seen = answer_dialogs([QMessageBox.StandardButton.Cancel])
        window.close()
        assert seen and "has not been saved" in seen[0]
        assert window.isVisible()  # Cancel keeps the window and its cutout
        save_and_wait(qtbot, window, tmp_path / "kept.png")
        assert not window.isWindowModified()
        assert window._quit_question() == ""  # saved: quitting asks nothing
        settle(qtbot, window, lambda: window.apply_settings(background="#ffffff"))
        assert window.isWindowModified()  # what was saved is no longer what it shows
        save_and_wait(qtbot, window, tmp_path / "kept.png")
        window.close()
        assert not window.isVisible()
    finally:
        window.confirm_quit = False  # whatever happened, the test's end closes it


# -- the rest of the window --------------------------------------------------------


def test_recent_files_are_offered_and_forgotten_when_gone(qtbot, u2netp_path, tmp_path) -> None:
    photo = tmp_path / "recent.png"
    shutil.copy(DATA / "skimage_chelsea.png", photo)
    window = make_window(qtbot)
    process(qtbot, window, photo)
    tips = [a.statusTip() for a in window.opening.recent_menu.actions()]  # the full path
    assert str(photo) in tips
    assert "Clear Menu" in [a.text() for a in window.opening.recent_menu.actions()]
    later = make_window(qtbot)  # remembered between runs
    assert str(photo) in [a.statusTip() for a in later.opening.recent_menu.actions()]
    photo.unlink()
    later.opening.open_recent(str(photo))
    assert "no longer there" in later.statusBar().currentMessage()
    assert str(photo) not in [a.statusTip() for a in later.opening.recent_menu.actions()]


def test_a_file_that_fails_is_not_offered_again_in_open_recent(
    qtbot, u2netp_path, tmp_path
) -> None:
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    good = tmp_path / "good.png"
    shutil.copy(DATA / "skimage_chelsea.png", good)
    window = make_window(qtbot)
    process(qtbot, window, broken, good)
    ended = (Status.DONE, Status.FAILED)
    qtbot.waitUntil(lambda: all(e.status in ended for e in window.queue.entries()), timeout=WAIT_MS)
    tips = [a.statusTip() for a in window.opening.recent_menu.actions()]
    assert str(good) in tips and str(broken) not in tips


def test_edit_mode_needs_an_image_with_a_cutout(qtbot, u2netp_path, tmp_path) -> None:
    window = make_window(qtbot)
    assert not window.touchup_menu.edit_mode.isEnabled()
    window.editing.set_edit_mode(True)  # the E key's slot, called directly: refused in words
    assert not window.editing.edit_mode and "nothing to edit" in window.statusBar().currentMessage()
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    process(qtbot, window, broken)
    qtbot.waitUntil(lambda: window.current_entry().status is Status.FAILED, timeout=WAIT_MS)
    assert not window.touchup_menu.edit_mode.isEnabled()
    process(qtbot, window, SAMPLE)
    window.select(window.queue.entries()[-1])
    assert window.touchup_menu.edit_mode.isEnabled()
    window.touchup_menu.edit_mode.trigger()
    assert window.editing.edit_mode
    window.select(window.queue.entries()[0])  # the failed one: edit mode can still be left
    assert window.touchup_menu.edit_mode.isEnabled()
    window.touchup_menu.edit_mode.trigger()
    assert not window.editing.edit_mode and not window.touchup_menu.edit_mode.isEnabled()


def test_the_title_mark_is_the_image_shown(qtbot, u2netp_path, tmp_path) -> None:
    window = make_window(qtbot)
    process(qtbot, window, SAMPLE, DATA / "skimage_chelsea.png")
    window.select(window.queue.entries()[0])
    assert window.isWindowModified()
    save_and_wait(qtbot, window, tmp_path / "first.png")
    assert not window.isWindowModified()  # the other is unsaved: the quit question says so
    assert window.unsaved_entries() == [window.queue.entries()[1]]
    window.select(window.queue.entries()[1])
    assert window.isWindowModified()


def test_zoom_readout_and_holding_for_the_original(qtbot, u2netp_path) -> None:
    window = make_window(qtbot)
    process(qtbot, window, SAMPLE)
    assert window.result_page.before_button.isEnabled()
    window.viewer.actual_size()
    assert window.result_page.zoom_label.text() == "100 %"
    window.viewer.zoom_by(2)
    assert window.result_page.zoom_label.text() == "200 %"
    output = shown_pixels(window)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    key = Qt.Key.Key_Backslash
    for kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease):
        event = QKeyEvent(kind, key, Qt.KeyboardModifier.NoModifier, "\\")
        QApplication.sendEvent(window.queue_view, event)  # wherever the focus is
        if kind is QEvent.Type.KeyPress:
            original = shown_pixels(window)
            assert (original[..., 3] == 255).all()  # the photo: opaque everywhere
            assert not np.array_equal(original, output)
    assert np.array_equal(shown_pixels(window), output)  # released: the output again
    window.result_page.before_button.pressed.emit()
    assert (shown_pixels(window)[..., 3] == 255).all()
    window.result_page.before_button.released.emit()
    assert np.array_equal(shown_pixels(window), output)


def test_the_view_follows_a_dark_palette(qtbot, u2netp_path) -> None:
    window = make_window(qtbot)
    dark = QPalette(QApplication.palette())
    dark.setColor(QPalette.ColorRole.Window, QColor(30, 30, 30))
    old = QApplication.palette()
    try:
        QApplication.setPalette(dark)
        QApplication.processEvents()
        assert window.viewer.backgroundBrush().color() == QColor(30, 30, 30)
    finally:
        QApplication.setPalette(old)


def test_the_about_box_shows_the_app_icon(qtbot, u2netp_path) -> None:
    window = make_window(qtbot)
    box = window.help_menu.about()
    assert box.icon() == QMessageBox.Icon.NoIcon and not box.iconPixmap().isNull()
    box.close()


def test_status_tips_have_no_ampersands(qtbot, u2netp_path) -> None:
    window = make_window(qtbot)
    actions = [a for menu in window.menuBar().actions() for a in menu.menu().actions()]
    assert actions and all("&" not in a.statusTip() for a in actions)


def test_model_labels_say_what_there_is_to_download(qtbot, u2netp_path) -> None:
    assert model_label("u2netp", 4_574_861, cached=False) == "u2netp — 4.6 MB download"
    assert (
        model_label("u2net_human_seg", 176_000_000, False, exact=False)
        == "u2net_human_seg — about 176 MB download"
    )
    assert model_label("u2netp", 4_574_861, cached=True) == "u2netp — 4.6 MB, cached"
    window = make_window(qtbot)
    box = window.panel.model_box
    assert box.itemText(box.findData("u2netp")) == "u2netp — 4.6 MB, cached"  # no download
    wide = max(box.fontMetrics().horizontalAdvance(box.itemText(i)) for i in range(box.count()))
    assert box.view().minimumWidth() >= wide  # the list shows each label whole


def test_a_downloaded_model_no_longer_offers_a_download(
    qtbot, tmp_path, model_server, monkeypatch, fresh_home
) -> None:
    blob = build_tiny_model(tmp_path / "tiny.onnx", padding_bytes=300_000).read_bytes()
    spec = served_model(model_server, "tinymodel", blob)
    monkeypatch.setitem(models.REGISTRY, spec.name, spec)
    window = make_window(qtbot)
    box = window.panel.model_box
    assert box.itemText(box.findData("tinymodel")).startswith("tinymodel — 0.3 MB download")
    asked = answer_download("Download")
    select_data(box, "tinymodel")
    assert asked and "tinymodel is not downloaded yet" in asked[0]
    process(qtbot, window, SAMPLE)
    assert model_server.requests["/tinymodel.onnx"] == 1
    assert box.itemText(box.findData("tinymodel")).startswith("tinymodel — 0.3 MB, cached")


def test_the_int8_preparation_shows_its_steps_and_time_left(qtbot) -> None:
    bar = PreparationBar()
    qtbot.addWidget(bar)
    now = [1000.0]
    bar.pace.clock = lambda: now[0]  # a fake clock: no waiting
    config = EngineConfig(precision="int8")
    bar.show_progress(7, Preparing(config, "quantize", 0, 60))
    assert "0 of 60 steps" in bar.label.text() and "left" not in bar.label.text()
    now[0] += 10  # ten seconds later, at step 20
    bar.show_progress(7, Preparing(config, "quantize", 20, 60))
    assert "20 of 60 steps, about 0:2" in bar.label.text()  # 20 s more at this pace
    assert "half a minute" not in bar.label.text()


def test_background_choices_are_one_box(qtbot, u2netp_path) -> None:
    window = make_window(qtbot)
    box = window.export_panel.background_box
    labels = [box.itemText(i) for i in range(box.count())]
    assert labels == [
        "Transparent", "White", "Black", "Other colour…", "Blur of the photo", "Image…"
    ]  # fmt: skip
    window.apply_settings(background="#12345680")
    assert box.currentText() == "#12345680" and box.count() == 7
    window.apply_settings(background="")
    assert box.currentText() == "Transparent"
