"""Never losing the user's work: removing, clearing and quitting ask first when they
would drop a cutout not saved or the user's edits, in the same words; several images
selected in the queue, or all of them, are saved into one folder in one go, named as
a batch names them, written atomically with the record of their photo, on a job with
progress and Cancel. Real widgets offscreen, the real worker threads and u2netp."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("PySide6")
import test_gui_first_hour
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QFileDialog, QMessageBox
from test_gui_edit import erase_line, opened
from test_gui_first_hour import WAIT_MS, process, save_and_wait

from bgremover.export.output import SourceRecord, format_for_path
from bgremover.files.atomic import TEMP_SUFFIX
from bgremover.gui.imageconv import to_qimage
from bgremover.gui.jobs import JobState
from bgremover.gui.queue import Status
from bgremover.gui.save_many import SaveEvent

from conftest import DATA, SAMPLE, is_job, make_window

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("isolated_settings")]
answer_dialogs = test_gui_first_hour.answer_dialogs
CAT = DATA / "skimage_chelsea.png"
COFFEE = DATA / "skimage_coffee.png"
CANCEL, GO_AHEAD = QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Discard


def click_row(window, row: int, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    """A click on a row of the queue, as the user makes it (Ctrl held: added to the
    selection)."""
    view = window.queue_view
    centre = view.visualRect(window.queue.index(row)).center()
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, modifier, centre)


def _qt_folder_dialog(parent, caption="", start="", options=None):
    """QFileDialog.getExistingDirectory with Qt's own dialog (the platform's cannot be
    driven offscreen)."""
    dialog = QFileDialog(parent, caption, start)
    dialog.setFileMode(QFileDialog.FileMode.Directory)
    dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
    dialog.setOption(QFileDialog.Option.DontUseNativeDialog, True)
    return dialog.selectedFiles()[0] if dialog.exec() else ""


def files_in(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


# -- item 1: nothing unsaved is dropped without a question -----------------------------


def test_delete_and_clear_ask_before_dropping_edits_and_cancel_keeps_them(
    qtbot, u2netp_path, tmp_path, answer_dialogs
) -> None:
    window = opened(qtbot, CAT, COFFEE)
    erase_line(qtbot, window)  # the cat: "✎ edited (1 edit)"
    cat, coffee = window.queue.entries()
    edits = cat.edits
    assert cat.edited and cat.unsaved and coffee.unsaved and not coffee.edited
    window.confirm_quit = True
    try:
        seen = answer_dialogs([CANCEL])
        window.edit_menu.remove.trigger()  # Delete, on the cat shown
        assert seen == ["The cutout of skimage_chelsea.png, with your edits, has not been saved."]
        assert window.queue.entries() == [cat, coffee] and cat.edits is edits  # kept
        seen = answer_dialogs([CANCEL])
        window.edit_menu.clear.trigger()  # Ctrl+Shift+Del
        assert seen == ["2 cutouts have not been saved, 1 of them with your edits."]
        assert window.queue.entries() == [cat, coffee] and cat.edits is edits

        # A saved image goes without a question; the edited one only when the user says so.
        window.select(coffee)
        save_and_wait(qtbot, window, tmp_path / "coffee.png")
        seen = answer_dialogs([GO_AHEAD])  # were it asked, the coffee would still go
        window.edit_menu.remove.trigger()
        assert seen == [] and window.queue.entries() == [cat]
        window.edit_menu.clear.trigger()  # the question this answer is for
        assert len(seen) == 1 and "with your edits" in seen[0]
        assert len(window.queue) == 0
    finally:
        window.confirm_quit = False


def test_the_quit_question_says_how_many_carry_edits(qtbot, u2netp_path, answer_dialogs) -> None:
    window = opened(qtbot, CAT, COFFEE, SAMPLE)
    erase_line(qtbot, window)
    expected = "3 cutouts have not been saved, 1 of them with your edits."
    assert window._quit_question() == expected
    window.confirm_quit = True
    try:
        seen = answer_dialogs([CANCEL])
        window.close()
        assert seen == [expected] and window.isVisible()
    finally:
        window.confirm_quit = False


# -- item 7: several images, or all, saved into a folder in one go ---------------------


def test_save_selected_names_like_a_batch_writes_the_edits_and_keeps_what_is_there(
    qtbot, u2netp_path, tmp_path, monkeypatch, answer_dialogs
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a_cat, b_cat = tmp_path / "a" / "cat.png", tmp_path / "b" / "cat.jpg"
    shutil.copy(CAT, a_cat)
    Image.open(COFFEE).convert("RGB").save(b_cat, quality=92)  # another photo, same stem
    photos = {p: p.read_bytes() for p in (a_cat, b_cat)}
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(SAMPLE, out / "cat.png")  # already there: never replaced
    kept = (out / "cat.png").read_bytes()

    window = make_window(qtbot)
    process(qtbot, window, a_cat, b_cat, SAMPLE)
    rgb = np.asarray(Image.open(SAMPLE).convert("RGB"))
    QGuiApplication.clipboard().setImage(to_qimage(rgb).copy())
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.opening.paste()
    first, second, sample, pasted = window.queue.entries()
    window.select(first)
    window.editing.set_edit_mode(True)
    erase_line(qtbot, window)
    window.editing.set_edit_mode(False)
    edited_alpha = first.processed.result.alpha.copy()

    # Several rows selected by clicks; the actions on one image act on the last clicked.
    click_row(window, 0)
    click_row(window, 1, Qt.KeyboardModifier.ControlModifier)
    click_row(window, 3, Qt.KeyboardModifier.ControlModifier)
    assert window.selected_entries() == [first, second, pasted]
    assert window.current_entry() is pasted
    assert window.file_menu.save_selected.isEnabled() and window.file_menu.save_all.isEnabled()

    monkeypatch.setattr(QFileDialog, "getExistingDirectory", _qt_folder_dialog)
    with qtbot.waitSignal(
        window.engine.ended, check_params_cb=is_job("save-many"), timeout=WAIT_MS
    ) as ended:
        answer_dialogs([out])  # the folder, asked for once
        window.file_menu.save_selected.trigger()
        assert not window.file_menu.save_selected.isEnabled()  # one such save at a time
    assert ended.args[0].state is JobState.DONE
    # Named as a batch names them: the name taken in the folder is kept, the two cats
    # get their photo's extension; nothing half-written, no claim left behind.
    assert files_in(out) == {"cat.png", "cat_png.png", "cat_jpg.png", "Pasted image 1.png"}
    assert (out / "cat.png").read_bytes() == kept
    assert not any(name.endswith(TEMP_SUFFIX) for name in files_in(out))
    assert all(p.read_bytes() == data for p, data in photos.items())  # inputs untouched

    # The edited cat is written with its edits, as the Result view shows it.
    saved = np.asarray(Image.open(out / "cat_png.png"))
    assert saved.shape == (*edited_alpha.shape, 4)
    assert np.array_equal(saved[..., 3], edited_alpha)
    assert saved[150, 200, 3] == 0  # under the erase stroke
    # Each file records its photo (a batch over the folder knows it); a pasted image has
    # none to record.
    for name, photo in (("cat_png.png", a_cat), ("cat_jpg.png", b_cat)):
        record = format_for_path(out / name).record(out / name)
        assert record is not None and record.same_photo(SourceRecord.of(photo))
    pasted_file = out / "Pasted image 1.png"
    assert format_for_path(pasted_file).record(pasted_file) is None

    # Saved: quitting would lose only the image not selected.
    assert not first.unsaved and not second.unsaved and not pasted.unsaved and sample.unsaved
    assert first.last_save.path == out / "cat_png.png"
    assert window._quit_question() == "The cutout of sample.jpg has not been saved."
    assert "Saved 3 of 3 cutouts to" in window.statusBar().currentMessage()

    # Saved again into the same folder: new names, what is there is never replaced.
    with qtbot.waitSignal(
        window.engine.ended, check_params_cb=is_job("save-many"), timeout=WAIT_MS
    ):
        assert window.save_many.save_to(window.selected_entries(), out) is not None
    assert {"cat_png_2.png", "cat_jpg_2.png", "Pasted image 1_noext.png"} <= files_in(out)
    assert len(files_in(out)) == 7

    # Delete removes every image selected.
    click_row(window, 0)
    click_row(window, 1, Qt.KeyboardModifier.ControlModifier)
    window.edit_menu.remove.trigger()
    assert window.queue.entries() == [sample, pasted]


def test_save_all_makes_queued_images_and_reports_those_it_cannot_save(
    qtbot, u2netp_path, tmp_path
) -> None:
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8\xff\xe0 not a jpeg at all")
    window = make_window(qtbot)
    process(qtbot, window, broken, CAT)
    window.add_paths([COFFEE])  # still queued when Save All comes: made by the save
    assert window.queue.entries()[2].status in (Status.QUEUED, Status.PROCESSING)
    out = tmp_path / "out"
    with qtbot.waitSignal(
        window.engine.ended, check_params_cb=is_job("save-many"), timeout=WAIT_MS
    ) as ended:
        assert window.save_many.save_to(window.queue.entries(), out) is not None
    assert ended.args[0].state is JobState.DONE
    assert files_in(out) == {"skimage_chelsea.png", "skimage_coffee.png"}
    for name in files_in(out):
        with Image.open(out / name) as img:
            assert img.mode == "RGBA"
    boxes = [b for b in window.findChildren(QMessageBox) if b.isVisible()]
    assert len(boxes) == 1 and boxes[0].windowTitle() == "Some cutouts were not saved"
    text = boxes[0].text()
    assert text.startswith(f"1 of 3 cutouts were not saved to {out}:")
    assert "broken.jpg: it could not be processed (" in text
    assert "Saved 2 of 3 cutouts to" in window.statusBar().currentMessage()


def test_cancel_stops_between_files_and_leaves_only_whole_ones(
    qtbot, u2netp_path, tmp_path
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    photos = [CAT, COFFEE, SAMPLE]
    for i in range(6):
        shutil.copy(photos[i % 3], src / f"img{i}{photos[i % 3].suffix}")
    window = make_window(qtbot)
    process(qtbot, window, src)
    out = tmp_path / "out"
    events: list[SaveEvent] = []

    def on_progress(job_id: int, payload: object) -> None:
        if isinstance(payload, SaveEvent):
            events.append(payload)
            if len(events) == 1:
                window.save_many.bar.cancel_button.click()  # what the user does: Cancel

    window.engine.progress.connect(on_progress)
    with qtbot.waitSignal(
        window.engine.ended, check_params_cb=is_job("save-many"), timeout=WAIT_MS
    ) as ended:
        window.save_many.save_to(window.queue.entries(), out)
        assert window.save_many.bar.isVisible()  # progress and Cancel in the status bar
    assert ended.args[0].state is JobState.CANCELLED
    written = files_in(out)
    assert 1 <= len(written) < 6
    assert {e.item.output.name for e in events if e.kind == "saved"} == written
    for name in written:
        with Image.open(out / name) as img:
            img.load()  # whole files only
    assert sum(not e.unsaved for e in window.queue.entries()) == len(written)
    assert not window.save_many.bar.isVisible() and window.file_menu.save_all.isEnabled()
    assert "stopped as you asked" in window.statusBar().currentMessage()
