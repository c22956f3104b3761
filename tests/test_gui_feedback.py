"""Touch-up's feedback in the app: markers where the clicks landed (a right-click on one
takes that click back, the rest replayed, as one undoable edit), an overlay tint that
stands out from the photo (or the user's, kept in the settings), a view that paints the
semi-transparent pixels, and the edge-aware brush shown on its buttons and cursor. Real
widgets offscreen, the real worker threads and u2netp."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

pytest.importorskip("PySide6")
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QColor, QMouseEvent
from PySide6.QtWidgets import QApplication, QGraphicsItem
from test_gui_edit import CAT, COFFEE, alpha_of, applied, drag, opened
from test_gui_first_hour import WAIT_MS

from bgremover.touchup.edit import Editor, Edits

from conftest import is_job, make_window

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("isolated_settings")]


def click(qtbot, window, tool: str, x: float, y: float) -> None:
    window.editing.set_tool(tool)
    drag(window, [(x, y)])
    applied(qtbot, window)


def right_click(window, scene_point: QPointF) -> None:
    viewer = window.viewer
    at = QPointF(viewer.mapFromScene(scene_point))
    viewport = viewer.viewport()
    right = Qt.MouseButton.RightButton
    event = QMouseEvent(
        QEvent.Type.MouseButtonPress,
        at,
        QPointF(viewport.mapToGlobal(at)),
        right,
        right,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(viewport, event)


def markers(window) -> list:
    return window.editing.markers.markers()


def replayed(window, ops) -> np.ndarray:
    """The mask the edits ``ops`` give, replayed from scratch on the image's base."""
    editor = window.current_entry().processed.editor
    return Editor(editor.rgb, editor.base, Edits(editor.size, tuple(ops))).alpha


def hue(color: QColor) -> float:
    return color.hsvHueF() * 360.0


def hue_distance(a: float, b: float) -> float:
    return abs((a - b + 180.0) % 360.0 - 180.0)


# -- click markers ---------------------------------------------------------------------


def test_markers_show_where_the_clicks_landed_at_one_size_and_follow_undo_and_reset(qtbot):
    from bgremover.gui.markers import DROP_COLOR, KEEP_COLOR, MARKER_RADIUS

    # Clicks that change a region: one that changes nothing is not kept (no marker).
    window = opened(qtbot, CAT)
    click(qtbot, window, "add", 40.5, 280.5)
    click(qtbot, window, "remove", 300.5, 200.5)
    shown = markers(window)
    assert [m.sign for m in shown] == ["+", "−"]
    for m, at in zip(shown, [(40.5, 280.5), (300.5, 200.5)], strict=True):
        assert (m.pos().x(), m.pos().y()) == pytest.approx(at, abs=1e-6)
        assert (m.pos().x(), m.pos().y()) == m.op.points[0]  # the click's own point
    assert [m.index for m in shown] == [0, 1]
    # The same size on screen at any zoom.
    sizes = []
    for zoom in (0.5, 1.0, 4.0):
        window.viewer.set_zoom(zoom)
        m = shown[1]
        assert m.flags() & QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations
        rect = m.deviceTransform(window.viewer.viewportTransform()).mapRect(m.boundingRect())
        sizes.append(round(rect.width(), 3))
    assert len(set(sizes)) == 1 and sizes[0] >= 2 * MARKER_RADIUS
    # Drawn on the view: a green disc with a white + over the cat, a red one with a −.
    window.viewer.set_zoom(2.0)

    def seen(scene_x: float, scene_y: float, dx: int, dy: int) -> QColor:
        window.viewer.centerOn(scene_x, scene_y)
        QApplication.processEvents()
        grab = window.viewer.viewport().grab().toImage()
        at = window.viewer.mapFromScene(QPointF(scene_x, scene_y))
        return grab.pixelColor(at.x() + dx, at.y() + dy)

    r = round(MARKER_RADIUS * 0.45)  # inside the disc, off the sign's arms
    assert seen(40.5, 280.5, r, r) == KEEP_COLOR  # the disc
    assert seen(40.5, 280.5, 0, -3).lightness() > 230  # the +'s upright arm
    assert seen(300.5, 200.5, r, r) == DROP_COLOR
    assert seen(300.5, 200.5, 0, -3) == DROP_COLOR  # a −: no upright arm
    # They follow Undo, Redo and Reset at once.
    window.touchup_menu.undo.trigger()
    assert [m.sign for m in markers(window)] == ["+"]
    window.touchup_menu.redo.trigger()
    assert [m.sign for m in markers(window)] == ["+", "−"]
    window.touchup_menu.reset.trigger()
    assert markers(window) == []
    window.touchup_menu.undo.trigger()
    assert len(markers(window)) == 2
    applied(qtbot, window)
    # A brush stroke is no click: no marker for it.
    window.editing.set_tool("erase")
    drag(window, [(300.5, 200.5), (320.5, 200.5)])
    applied(qtbot, window)
    assert len(markers(window)) == 2


def test_a_right_click_on_a_marker_takes_that_click_back_as_one_undoable_edit(qtbot):
    window = opened(qtbot, CAT)
    click(qtbot, window, "remove", 300.5, 200.5)
    click(qtbot, window, "add", 40.5, 280.5)
    window.editing.set_tool("erase")
    drag(window, [(60.5, 200.5), (120.5, 210.5)])
    click(qtbot, window, "remove", 380.5, 60.5)
    entry = window.current_entry()
    ops = entry.edits.operations
    both = alpha_of(window).copy()
    assert np.array_equal(both, replayed(window, ops))
    first = markers(window)[0]
    assert first.index == 0 and "right-click" in first.toolTip()
    right_click(window, first.pos())
    # A job, off the GUI thread; the marker goes at once.
    assert window.jobs.edits_busy(entry)
    assert [m.index for m in markers(window)] == [0, 2]
    applied(qtbot, window)
    rest = ops[1:]
    assert entry.edits.operations == rest
    # Byte for byte the edits without that click, the later clicks constrained anew.
    assert np.array_equal(alpha_of(window), replayed(window, rest))
    assert not np.array_equal(alpha_of(window), both)
    assert "Undo puts it back" in window.statusBar().currentMessage()
    # One step: Undo puts the click back, exactly; Redo takes it out again.
    window.touchup_menu.undo.trigger()
    applied(qtbot, window)
    assert entry.edits.operations == ops
    assert np.array_equal(alpha_of(window), both)
    assert len(markers(window)) == 3
    window.touchup_menu.redo.trigger()
    applied(qtbot, window)
    assert np.array_equal(alpha_of(window), replayed(window, rest))
    # A right-click beside the markers takes nothing back.
    right_click(window, QPointF(300.5, 250.5))
    assert not window.jobs.edits_busy(entry) and entry.edits.operations == rest
    # The edits file says what is in effect: the click taken back is not in it.
    assert Edits.from_json(entry.edits.to_json()).operations == rest


@pytest.mark.slow
def test_undo_and_redo_of_a_removal_hold_on_a_result_made_again(qtbot, monkeypatch):
    """The memory policy drops the result (and its editor's history); made again, the
    edits are replayed without it, and Undo still puts the click back, Redo takes it out."""
    from test_gui_first_hour import settle

    from bgremover.gui import queue as queue_module

    window = opened(qtbot, CAT, COFFEE)
    cat, coffee = window.queue.entries()
    click(qtbot, window, "remove", 300.5, 200.5)
    click(qtbot, window, "add", 40.5, 280.5)
    click(qtbot, window, "remove", 380.5, 60.5)
    ops = cat.edits.operations
    right_click(window, markers(window)[1].pos())
    right_click(window, markers(window)[0].pos())  # two removals, two steps
    applied(qtbot, window)
    assert cat.edits.operations == (ops[2],)
    monkeypatch.setattr(queue_module, "RESULT_CACHE_PIXELS", 1)
    settle(qtbot, window, lambda: window.select(coffee))
    assert cat.processed is None
    settle(qtbot, window, lambda: window.select(cat))  # made again, the edits replayed
    assert [m.index for m in markers(window)] == [0]
    window.touchup_menu.undo.trigger()
    applied(qtbot, window)
    assert cat.edits.operations == (ops[0], ops[2])
    assert np.array_equal(alpha_of(window), replayed(window, (ops[0], ops[2])))
    window.touchup_menu.undo.trigger()
    applied(qtbot, window)
    assert cat.edits.operations == ops
    assert np.array_equal(alpha_of(window), replayed(window, ops))
    assert len(markers(window)) == 3
    window.touchup_menu.redo.trigger()
    applied(qtbot, window)
    assert cat.edits.operations == (ops[0], ops[2])
    assert np.array_equal(alpha_of(window), replayed(window, (ops[0], ops[2])))


def test_a_removal_that_replays_a_box_runs_on_the_engine_thread(qtbot):
    from bgremover.engine.pipeline import Remover

    window = opened(qtbot, CAT)
    click(qtbot, window, "remove", 300.5, 200.5)
    window.editing.set_tool("box")
    drag(window, [(120.5, 40.5), (330.5, 290.5)])
    applied(qtbot, window)
    entry = window.current_entry()
    rest = entry.edits.operations[1:]
    with qtbot.waitSignal(window.engine.ended, check_params_cb=is_job("edit"), timeout=WAIT_MS):
        right_click(window, markers(window)[0].pos())
    applied(qtbot, window)
    editor = entry.processed.editor
    remover = Remover.from_config(window.settings.engine())
    expected = Editor(editor.rgb, editor.base, Edits(editor.size, rest), remover.segment)
    assert entry.edits.operations == rest
    assert np.array_equal(alpha_of(window), expected.alpha)


def test_the_markers_go_when_leaving_edit_mode_or_switching_images(qtbot):
    window = opened(qtbot, CAT, COFFEE)
    click(qtbot, window, "add", 40.5, 280.5)
    assert len(markers(window)) == 1
    window.touchup_menu.edit_mode.trigger()  # leave
    assert markers(window) == []
    window.touchup_menu.edit_mode.trigger()  # back
    assert len(markers(window)) == 1
    window.select(window.queue.entries()[1])
    assert markers(window) == []
    window.select(window.queue.entries()[0])
    assert len(markers(window)) == 1


# -- the overlay's colour ------------------------------------------------------------


def red_photo(path: Path) -> Path:
    """A red subject (a disk, shaded) on a dark red ground: a photo a red tint hides in."""
    rgb = np.zeros((240, 320, 3), np.uint8)
    rgb[:] = (110, 20, 25)
    cv2.circle(rgb, (160, 120), 80, (230, 40, 40), -1)
    noise = np.random.default_rng(0).normal(0, 8, rgb.shape)
    Image.fromarray(np.clip(rgb + noise, 0, 255).astype(np.uint8)).save(path)
    return path


def overlay_color_at(window, x: int, y: int) -> QColor:
    return window.viewer._overlay.pixmap().toImage().pixelColor(x, y)


def test_the_automatic_tint_stands_out_from_a_red_photo(qtbot, tmp_path):
    from bgremover.gui.overlay import TINTS, contrasting

    rgb = np.asarray(Image.open(red_photo(tmp_path / "red.png")))
    assert hue_distance(hue(QColor(*contrasting(rgb))), 0.0) > 90
    # On a green photo, not green; on a grey one, the first tint (red).
    green = np.zeros((50, 50, 3), np.uint8)
    green[:] = (30, 180, 40)
    assert hue_distance(hue(QColor(*contrasting(green))), 125.0) > 90
    assert contrasting(np.full((50, 50, 3), 128, np.uint8)) == TINTS["red"]
    # In the app: the removed part of the red photo tinted far from red.
    window = opened(qtbot, tmp_path / "red.png")
    alpha = alpha_of(window)
    ys, xs = np.nonzero(alpha == 0)
    tint = overlay_color_at(window, int(xs[0]), int(ys[0]))
    assert tint.alpha() > 100 and hue_distance(hue(tint), 0.0) > 90
    assert window.touchup_menu.color_actions[""].isChecked()  # Automatic


def test_the_overlay_colour_chosen_is_kept_in_the_settings(qtbot, tmp_path):
    from bgremover.gui.overlay import TINTS
    from bgremover.gui.settings import load_settings

    window = opened(qtbot, CAT)
    alpha = alpha_of(window)
    ys, xs = np.nonzero(alpha == 0)
    at = int(xs[0]), int(ys[0])
    window.touchup_menu.color_actions["blue"].trigger()
    assert window.settings.overlay_color == "blue"
    shown = overlay_color_at(window, *at)
    assert shown.alpha() > 100  # premultiplied: each channel within a step or two
    assert all(abs(a - b) <= 2 for a, b in zip(shown.getRgb()[:3], TINTS["blue"], strict=True))
    assert load_settings().overlay_color == "blue"
    # On the edit bar too: a button that opens the same choices.
    bar = window.touchup_menu.edit_bar
    button = bar.widgetForAction(window.touchup_menu.color_menu.menuAction())
    assert button is not None and button.isVisible()
    assert button.defaultAction().menu() is window.touchup_menu.color_menu
    assert button.popupMode() == button.ToolButtonPopupMode.InstantPopup
    again = make_window(qtbot)
    assert again.settings.overlay_color == "blue"
    assert again.touchup_menu.color_actions["blue"].isChecked()
    window.touchup_menu.color_actions[""].trigger()
    assert load_settings().overlay_color == ""


# -- the semi-transparent view ---------------------------------------------------------


def test_show_semi_transparent_paints_alpha_1_to_254_and_nothing_else(qtbot, tmp_path):
    window = opened(qtbot, CAT)
    mask = np.zeros((300, 451), np.uint8)
    mask[:, 150:300] = 10  # a faint leftover
    mask[:, 300:] = 255
    mask[100:110, 300:310] = 254
    Image.fromarray(mask).save(tmp_path / "faint.png")
    window.editing.load_mask_from(tmp_path / "faint.png")
    qtbot.waitUntil(lambda: window.current_entry().edited, timeout=WAIT_MS)
    applied(qtbot, window)
    assert alpha_of(window)[50, 200] == 10
    tint = overlay_color_at(window, 200, 50)
    assert tint.alpha() < 160  # the tint hardly tells alpha 10 from 0
    window.touchup_menu.semi.trigger()
    assert window.touchup_menu.semi.isChecked()
    _, semi = window.editing.overlay_colors(window.current_entry().processed)
    strong = QColor(*semi)
    assert overlay_color_at(window, 200, 50).rgba() == strong.rgba()  # alpha 10
    assert overlay_color_at(window, 305, 105).rgba() == strong.rgba()  # alpha 254
    assert overlay_color_at(window, 50, 50).rgba() != strong.rgba()  # alpha 0: tinted
    assert overlay_color_at(window, 50, 50).alpha() > 100
    assert overlay_color_at(window, 400, 50).alpha() == 0  # alpha 255: clear
    # A colour of its own, not the tint's.
    tint_rgb, _ = window.editing.overlay_colors(window.current_entry().processed)
    assert hue_distance(hue(QColor(*tint_rgb)), hue(strong)) > 40
    # With the tint off, over the output: still the semi-transparent pixels alone.
    window.touchup_menu.overlay.trigger()
    assert window.viewer.overlay_shown()
    assert overlay_color_at(window, 200, 50).rgba() == strong.rgba()
    assert overlay_color_at(window, 50, 50).alpha() == 0
    # Drawn on screen in that colour.
    window.viewer.actual_size()
    window.viewer.centerOn(200, 50)
    QApplication.processEvents()
    at = window.viewer.mapFromScene(QPointF(200.5, 50.5))
    assert window.viewer.viewport().grab().toImage().pixelColor(at).rgb() == strong.rgb()
    window.touchup_menu.semi.trigger()
    assert not window.viewer.overlay_shown()


# -- the edge-aware brush, visible on the tool ---------------------------------------


def test_the_edge_aware_brush_shows_on_its_buttons_and_cursor_and_stays_for_other_images(
    qtbot,
):
    window = opened(qtbot, CAT, COFFEE)
    menu = window.touchup_menu
    bar = menu.edit_bar
    restore = bar.widgetForAction(menu.tool_actions["restore"])
    erase = bar.widgetForAction(menu.tool_actions["erase"])
    add = bar.widgetForAction(menu.tool_actions["add"])
    assert restore.text() == "Restore" and erase.text() == "Erase"
    tools = window.editing.tools
    window.editing.set_tool("erase")
    assert tools._cursor[1].pen().style() == Qt.PenStyle.SolidLine
    menu.edge_aware.trigger()  # G
    assert menu.edge_aware.isChecked() and tools.edge_aware
    assert restore.text() == "Restore (edge-aware)" and erase.text() == "Erase (edge-aware)"
    assert "edge-aware" in erase.toolTip() and add.text() == "Add Click"
    assert tools._cursor[1].pen().style() == Qt.PenStyle.DashLine
    assert bar.widgetForAction(menu.edge_aware).isChecked()
    # A tool option: it stays on for the next image, and says so there.
    window.select(window.queue.entries()[1])
    assert tools.edge_aware and erase.text() == "Erase (edge-aware)"
    drag(window, [(100.5, 100.5), (140.5, 100.5)])
    applied(qtbot, window)
    assert window.current_entry().edits.operations[-1].edge_aware
    menu.edge_aware.trigger()
    assert erase.text() == "Erase" and tools._cursor[1].pen().style() == Qt.PenStyle.SolidLine
    drag(window, [(100.5, 150.5), (140.5, 150.5)])
    applied(qtbot, window)
    assert not window.current_entry().edits.operations[-1].edge_aware


def test_undo_asks_the_one_history_even_with_no_edit_in_effect(qtbot):
    """Taking back the only click leaves no edit in effect, yet Undo puts it back: the
    menu asks the image's one history, which the editor applying it holds too."""
    window = opened(qtbot, CAT)
    click(qtbot, window, "remove", 300.5, 200.5)
    entry = window.current_entry()
    (op,) = entry.edits.operations
    right_click(window, markers(window)[0].pos())
    applied(qtbot, window)
    assert not entry.edits.operations and not entry.edited
    assert window.touchup_menu.undo.isEnabled() and not window.touchup_menu.redo.isEnabled()
    assert entry.processed.editor.history is entry.editing.history
    window.touchup_menu.undo.trigger()
    applied(qtbot, window)
    assert entry.edits.operations == (op,)
    assert entry.processed.editor.history is entry.editing.history
    assert np.array_equal(alpha_of(window), replayed(window, (op,)))
    assert window.touchup_menu.redo.isEnabled()
