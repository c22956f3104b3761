"""The desktop app, offscreen, with real widgets, the real worker thread and u2netp."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("PySide6")
from PySide6.QtWidgets import QMessageBox

from bgremover.files.atomic import TEMP_SUFFIX
from bgremover.gui.jobs import JobState
from bgremover.gui.queue import Status

from conftest import DATA, SAMPLE, drop_files, is_job, row_icon, row_text, row_tooltip

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("isolated_settings")]
WAIT_MS = 300_000


def test_drop_leads_to_a_cutout(qtbot, window) -> None:
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        drop_files(window, [SAMPLE])
    entry = window.current_entry()
    assert entry is not None and entry.status is Status.DONE
    assert entry.processed.output.width() == 512 and entry.processed.output.height() == 600
    assert window.viewer.has_image()
    assert "done" in row_text(window, 0)
    assert not row_icon(window, 0).isNull()
    for mode in ("original", "mask", "output"):
        window.set_view_mode(mode)
        assert window.viewer.has_image()
    assert window.file_menu.save.isEnabled() and window.file_menu.copy.isEnabled()


def test_dropped_folder_is_walked(qtbot, window, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    shutil.copy(SAMPLE, tmp_path / "a.jpg")
    shutil.copy(DATA / "skimage_chelsea.png", tmp_path / "sub" / "b.png")
    (tmp_path / "notes.txt").write_text("not an image")
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        drop_files(window, [tmp_path])
    assert sorted(e.name for e in window.queue.entries()) == ["a.jpg", "b.png"]
    assert all(e.status is Status.DONE for e in window.queue.entries())


def test_comparison_view_shows_cutouts_heatmap_and_numbers(qtbot, window, u2netp_int8_path) -> None:
    window.tabs.setCurrentWidget(window.compare)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([DATA / "skimage_chelsea.png"])
    view = window.compare
    assert view.result is not None
    # The result shows the panes, A's and B's cutouts, and their difference when asked
    # for; a message (none now) would stand alone in their place.
    assert view.titles[0].text().startswith("A: u2netp fp32 cutout · ")
    assert view.pane_area.shown == view.panes[:2]
    view.heat_button.setChecked(True)
    assert view.pane_area.shown == view.panes[:3]
    for pane in (view.a_view, view.b_view, view.diff_view):
        assert pane.has_image()
    assert all(p.isVisible() for p in view.panes[:3]) and not view.placeholder.isVisible()
    numbers = {k: label.text() for k, label in view.numbers.items()}
    assert all(text != "–" for text in numbers.values()), numbers
    iou = float(numbers["iou"])
    assert 0.0 < iou < 0.98  # the cat's blanket: int8 (unguarded here) flips a region
    assert "CPU" in numbers["prov"]
    # ...and the view says so in words, as a warning, with what the int8 guard makes of it.
    verdict = view.verdict.text()
    assert verdict.startswith("⚠ u2netp int8 changes this photo materially")
    assert "The int8 guard catches it" in verdict and "bold" in view.verdict.styleSheet()
    # Zoom and pan are locked across the three panes.
    view.a_view.set_zoom(3.0)
    assert view.b_view.zoom == pytest.approx(3.0) and view.diff_view.zoom == pytest.approx(3.0)
    view.scale_box.setCurrentIndex(view.scale_box.findData(0.1))
    assert view.legend.full_scale == 0.1 and view.diff_view.has_image()
    view.raw_toggle.setChecked(True)
    assert view.titles[0].text().startswith("A: u2netp fp32 raw output · ")
    assert view.titles[1].text().startswith("B: u2netp int8 raw output · ")
    assert view.a_view.has_image() and view.diff_view.has_image()  # same output size
    view.clear()
    assert view.placeholder.isVisible() and not any(p.isVisible() for p in view.panes)


def test_corrupt_file_shows_error_and_app_goes_on(qtbot, window, tmp_path: Path) -> None:
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 definitely not a jpeg")
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([bad])
    entry = window.current_entry()
    assert entry.status is Status.FAILED and "broken.jpg" in entry.error
    assert "Failed" in window.detail.text()
    assert "broken.jpg" in row_tooltip(window, 0)
    assert not window.findChildren(QMessageBox)  # a bad file never opens a dialog
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([SAMPLE])
    assert [e.status for e in window.queue.entries()] == [Status.FAILED, Status.DONE]


def test_unexpected_error_shows_traceback_details(qtbot, window, monkeypatch) -> None:
    from bgremover.engine.pipeline import Remover

    def explode(self, image):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(Remover, "remove", explode)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([SAMPLE])
    boxes = [w for w in window.findChildren(QMessageBox)]
    assert boxes, "an error dialog should be open"
    assert "simulated bug" in boxes[-1].text()
    assert "Traceback" in boxes[-1].detailedText()


def test_save_cutout_and_mask(qtbot, window, tmp_path: Path) -> None:
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([SAMPLE])
    entry = window.current_entry()
    with qtbot.waitSignals([window.output.ended] * 2, timeout=WAIT_MS) as blocker:
        assert window.saving.save_result(entry, tmp_path / "cut.png")
        assert window.saving.save_result(entry, tmp_path / "mask.webp", mask_only=True)
    assert all(s.args[0].state is JobState.DONE for s in blocker.all_signals_and_args)
    assert Image.open(tmp_path / "cut.png").mode == "RGBA"
    assert Image.open(tmp_path / "mask.webp").size == (512, 600)
    assert not list(tmp_path.glob(f"*{TEMP_SUFFIX}"))


def test_settings_persist(qtbot, u2netp_path) -> None:
    from bgremover.gui.export_panel import select_data
    from bgremover.gui.window import MainWindow

    first = MainWindow()
    qtbot.addWidget(first)
    select_data(first.panel.precision_box, "int8")
    select_data(first.export_panel.format_box, "webp")
    first.panel.mask_only_box.setChecked(True)
    first.close()
    second = MainWindow()
    qtbot.addWidget(second)
    assert second.settings.precision == "int8"
    assert second.panel.precision_box.currentData() == "int8"
    assert second.settings.output_format == "webp" and second.settings.mask_only
    assert second.panel.mask_only_box.isChecked()


def test_batch_cancel_leaves_only_complete_files_and_resumes(qtbot, window, tmp_path) -> None:
    src = tmp_path / "in"
    (src / "nested").mkdir(parents=True)
    photos = [SAMPLE, DATA / "skimage_chelsea.png", DATA / "skimage_coffee.png"]
    for i in range(8):
        photo = photos[i % len(photos)]
        folder = src / "nested" if i % 2 else src
        shutil.copy(photo, folder / f"img{i}{photo.suffix}")
    out = tmp_path / "out"
    dialog = window.batches.open_batch(src)
    dialog.output_edit.setText(str(out))
    events: list = []
    window.engine.progress.connect(lambda job_id, p: events.append(p))

    with qtbot.waitSignal(
        window.engine.ended, check_params_cb=is_job("batch"), timeout=WAIT_MS
    ) as ended:
        dialog.start_button.click()
        qtbot.waitUntil(lambda: dialog.progress.value() >= 2, timeout=WAIT_MS)
        dialog.cancel_button.click()  # what the user does: Cancel, mid-batch
    assert ended.args[0].state is JobState.CANCELLED
    reported = {p.output for p in events if p.kind == "done"}
    written = {p for p in out.rglob("*") if p.is_file()}
    for path in written:
        assert not path.name.endswith(TEMP_SUFFIX)
        with Image.open(path) as img:
            img.load()  # complete, decodable files only
    # Every image reported done is on disk; beyond those, only the ones that were being
    # written when Cancel came (at most one per finishing thread and queue slot).
    assert reported <= written and len(written - reported) <= 3
    assert len(reported) < 8  # the cancel took effect: not every image was processed
    assert "Cancelled" in dialog.status.text() and dialog.start_button.isEnabled()

    events.clear()
    with qtbot.waitSignal(
        window.engine.ended, check_params_cb=is_job("batch"), timeout=WAIT_MS
    ) as ended:
        dialog.start_button.click()  # a rerun resumes
    final = ended.args[0].result
    assert ended.args[0].state is JobState.DONE
    assert final.kind == "finished" and final.skipped == len(written)
    assert final.done + final.skipped == 8
    assert {p.source for p in events if p.kind == "done"}.isdisjoint(
        {p.source for p in events if p.kind == "skipped"}
    )
    assert len([p for p in out.rglob("*") if p.is_file()]) == 8
    assert (out / "nested" / "img1.png").is_file()
    assert "Finished" in dialog.status.text()


def test_clipboard_paste(qtbot, window) -> None:
    from PySide6.QtGui import QGuiApplication

    from bgremover.gui.imageconv import to_qimage

    rgb = np.asarray(Image.open(SAMPLE).convert("RGB"))
    QGuiApplication.clipboard().setImage(to_qimage(rgb).copy())  # the clipboard keeps it
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.opening.paste()
    entry = window.current_entry()
    assert entry.name == "Pasted image 1" and entry.status is Status.DONE


def test_screenshot_mode(tmp_path: Path, u2netp_path) -> None:
    from conftest import run_gui

    shot = tmp_path / "shot.png"
    proc = run_gui(str(SAMPLE), "--screenshot", str(shot))
    assert proc.returncode == 0, proc.stderr
    img = Image.open(shot)
    assert img.size[0] >= 800 and img.size[1] >= 500
    bad = tmp_path / "bad.png"
    bad.write_text("nope")
    proc = run_gui(str(bad), "--screenshot", str(tmp_path / "bad_shot.png"))
    assert proc.returncode == 1 and "bad.png" in proc.stderr


def test_file_open_event_becomes_a_signal() -> None:
    """macOS sends files opened from the Finder as QFileOpenEvent; the app emits fileOpened.

    Run in a fresh process: pytest-qt's own QApplication is a plain one.
    """
    code = (
        "import sys\n"
        "from PySide6.QtGui import QFileOpenEvent\n"
        "from bgremover.gui.window import Application, application\n"
        "app = application()\n"
        "assert isinstance(app, Application)\n"
        "got = []\n"
        "app.fileOpened.connect(got.append)\n"
        "app.sendEvent(app, QFileOpenEvent(sys.argv[1]))\n"
        "print(got[0].name)\n"
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(SAMPLE)], capture_output=True, text=True, env=env,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "sample.jpg"


def test_queue_memory_is_bounded_and_dropped_results_come_back(
    qtbot, window, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bgremover.gui import queue as queue_module

    photos = [SAMPLE, *sorted(DATA.glob("*.png"))[:2]]
    # Room for about one of these photos: the others are dropped once done.
    monkeypatch.setattr(queue_module, "RESULT_CACHE_PIXELS", 400_000)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        drop_files(window, photos)
    entries = window.queue.entries()
    assert all(e.status is Status.DONE for e in entries)
    assert window.current_entry() is entries[0] and entries[0].processed is not None
    unloaded = [e for e in entries if e.processed is None]
    assert unloaded and all(e.unloaded for e in unloaded)
    assert all(not row_icon(window, i).isNull() for i in range(3))  # thumbnails stay
    from PIL import Image

    from bgremover.touchup.edit import Edits, History, Operation

    size = Image.open(entries[1].source).size
    kept = Edits(size, (Operation.stroke("restore", [(1, 1)], 2.0),))
    entries[1].editing.history = History.start(kept)  # the user's edits are never dropped
    target = unloaded[-1]
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.select(target)  # shown again: made again
    assert target.processed is not None and not target.unloaded
    assert window.viewer.has_image() and window.file_menu.save.isEnabled()
    assert "×" in window.detail.text()
    assert entries[1].edits == kept


def test_copy_puts_the_cutout_on_the_clipboard(qtbot, window) -> None:
    """Composed on the output thread; the clipboard's image owns its pixels, so it stays
    valid after the job and its arrays are gone."""
    import gc

    from PySide6.QtGui import QGuiApplication

    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([SAMPLE])
    expected = window.current_entry().processed.result.compose_array()
    with qtbot.waitSignal(window.output.ended, check_params_cb=is_job("copy"), timeout=WAIT_MS):
        window.saving.copy_cutout()
    qtbot.waitUntil(lambda: "copied" in window.statusBar().currentMessage(), timeout=WAIT_MS)
    gc.collect()
    clutter = [np.full_like(expected, 7) for _ in range(20)]  # reuse any freed memory
    from bgremover.gui.imageconv import qimage_to_rgba

    pasted = qimage_to_rgba(QGuiApplication.clipboard().image())
    assert len(clutter) == 20 and pasted.shape == expected.shape
    visible = expected[..., 3] == 255
    assert (pasted[visible] == expected[visible]).all()


def test_engine_log_lines_reach_the_status_bar(qtbot, window) -> None:
    """Engine code logs from its own threads; the window shows the line."""
    import logging
    import threading

    note = "Providers ['CUDAExecutionProvider'] failed to start; using CPU"
    thread = threading.Thread(
        target=lambda: logging.getLogger("bgremover.network.session").warning(note)
    )
    thread.start()
    thread.join()
    qtbot.waitUntil(lambda: window.statusBar().currentMessage() == note, timeout=WAIT_MS)
