"""The comparison view shows what people judge: each side as a cutout (the default), a
mask or the mask over the photo, side by side or in one wipe view with a divider the
user drags, the difference when asked for, and the places A and B differ most.

A synthetic pair with known differences: B drops a large bite of A's subject on its
right edge and a small one at its top.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor

from bgremover.compare.comparison import Comparison
from bgremover.compare.report import mask_difference
from bgremover.engine.pipeline import EngineConfig, Result
from bgremover.files.imaging import LoadedImage
from bgremover.gui.compare import ComparisonView
from bgremover.gui.worker import compared
from bgremover.mask.metrics import fidelity
from bgremover.network.store import ModelStore

W, H = 480, 360
CENTRE, RADIUS = (240.0, 180.0), 130.0
#: Where B differs from A: the large bite (right edge) and the small one (top edge).
BIG_BITE, SMALL_BITE = (CENTRE[0] + RADIUS - 8, CENTRE[1]), (CENTRE[0], CENTRE[1] - RADIUS + 4)
#: A point of the background, far from the subject.
BACKGROUND = (20.0, 20.0)
PHOTO_COLOUR = (30, 160, 60)


def disc(cx: float, cy: float, r: float) -> np.ndarray:
    yy, xx = np.ogrid[:H, :W]
    return ((yy - cy) ** 2 + (xx - cx) ** 2 <= r * r).astype(np.uint8) * 255


def result(mask: np.ndarray, rgb: np.ndarray, model: str, precision: str) -> Result:
    image = LoadedImage(rgb=rgb, alpha=None, source="synthetic", mode="RGB")
    return Result(
        image=image,
        mask=mask,
        alpha=mask,
        timings={"infer": 0.05},
        model=model,
        providers=("CPUExecutionProvider",),
        precision=precision,
        raw=mask.astype(np.float32) / 255,
    )


@pytest.fixture()
def pair():
    rgb = np.empty((H, W, 3), np.uint8)
    rgb[:] = PHOTO_COLOUR
    a = disc(*CENTRE, RADIUS)
    b = a.copy()
    b[disc(*BIG_BITE, 40) > 0] = 0
    b[disc(*SMALL_BITE, 14) > 0] = 0
    metrics = fidelity(a, b, a.astype(np.float32) / 255, b.astype(np.float32) / 255)
    metrics.update(
        verdict="u2netp int8 changes this photo materially",
        material=True,
        warning=True,
        infer_a_s=0.05,
        infer_b_s=0.02,
    )
    raw_a, raw_b = a.copy(), b.copy()
    c = Comparison(
        result(a, rgb, "u2netp", "fp32"),
        result(b, rgb, "u2netp", "int8"),
        "u2netp fp32",
        "u2netp int8",
        metrics,
        diff=mask_difference(a, b),
        raw_a=raw_a,
        raw_b=raw_b,
        raw_diff=mask_difference(raw_a, raw_b),
    )
    config = EngineConfig(model="u2netp")
    return compared(c, (config, config))


@pytest.fixture()
def view(qtbot, tmp_path: Path, pair, isolated_settings) -> ComparisonView:
    widget = ComparisonView(ModelStore(tmp_path))
    qtbot.addWidget(widget)
    widget.resize(1200, 760)
    widget.show()
    qtbot.waitExposed(widget)
    widget.set_result(pair)
    qtbot.wait(20)  # laid out for the result
    return widget


def seen(view_widget, x: float, y: float) -> QColor:
    """The colour on screen where image pixel (x, y) shows."""
    point = view_widget.mapFromScene(QPointF(x, y))
    return view_widget.viewport().grab().toImage().pixelColor(point)


def is_checkerboard(colour: QColor) -> bool:
    return colour.red() == colour.green() == colour.blue() and colour.red() in (204, 245)


def is_photo(colour: QColor) -> bool:
    return (colour.red(), colour.green(), colour.blue()) == PHOTO_COLOUR


def test_each_side_shows_its_cutout_by_default_then_its_mask_or_the_mask_over_the_photo(
    view,
) -> None:
    assert view.shown_views() == [view.a_view, view.b_view]  # no third pane unasked
    assert view.titles[0].text().startswith("A: u2netp fp32 cutout · ")
    assert view.titles[1].text().startswith("B: u2netp int8 cutout · ")
    # The cutout: the photo where a side keeps it, the checkerboard where it drops it.
    assert is_photo(seen(view.a_view, *BIG_BITE))
    assert is_checkerboard(seen(view.b_view, *BIG_BITE))
    assert is_checkerboard(seen(view.a_view, *BACKGROUND))

    view.show_box.setCurrentIndex(view.show_box.findData("mask"))
    assert view.titles[1].text().startswith("B: u2netp int8 mask · ")
    assert seen(view.a_view, *BIG_BITE).lightness() == 255
    assert seen(view.b_view, *BIG_BITE).lightness() == 0

    view.show_box.setCurrentIndex(view.show_box.findData("overlay"))
    assert view.titles[0].text().startswith("A: u2netp fp32 mask over the photo · ")
    assert is_photo(seen(view.a_view, *BIG_BITE))  # kept: as it is
    dropped = seen(view.b_view, *BIG_BITE)  # dropped: tinted
    assert dropped.red() > PHOTO_COLOUR[0] + 60 and dropped.green() < PHOTO_COLOUR[1]

    view.raw_toggle.setChecked(True)  # the raw outputs are masks: "show" has no say
    assert not view.show_box.isEnabled()
    assert view.titles[0].text().startswith("A: u2netp fp32 raw output · ")


def test_the_difference_is_a_third_pane_or_an_overlay_when_asked_for(qtbot, view) -> None:
    assert not view.panes[2].isVisible() and not view.legend.isVisible()
    view.heat_button.setChecked(True)
    assert view.shown_views() == [view.a_view, view.b_view, view.diff_view]
    assert view.panes[2].isVisible()
    qtbot.waitUntil(view.legend.isVisible)  # the tool bar lays it out
    assert view.diff_view.has_image()
    view.wipe_button.setChecked(True)
    assert view.shown_views() == [view.wipe_view] and view.wipe_view.overlay_shown()
    # Over the image, the heatmap is transparent where A and B agree.
    assert is_checkerboard(seen(view.wipe_view, *BACKGROUND))
    heat = seen(view.wipe_view, *BIG_BITE)
    assert not is_photo(heat) and not is_checkerboard(heat)
    view.heat_button.setChecked(False)
    assert not view.wipe_view.overlay_shown()


def test_the_wipe_view_shows_a_left_of_the_divider_and_b_right_of_it(qtbot, view) -> None:
    view.wipe_button.setChecked(True)
    wipe = view.wipe_view
    assert view.shown_views() == [wipe] and view.panes[3].isVisible()
    assert not view.a_view.isVisible()
    # The bite is right of the middle: B shows there (it dropped the bite).
    assert wipe.fraction == 0.5
    assert is_checkerboard(seen(wipe, *BIG_BITE))
    # The user drags the divider past the bite: A shows there.
    y = round(wipe.viewport().height() / 2)
    start = QPoint(round(wipe.divider_x()), y)
    end = wipe.mapFromScene(QPointF(BIG_BITE[0] + 30, BIG_BITE[1]))
    qtbot.mousePress(wipe.viewport(), Qt.MouseButton.LeftButton, pos=start)
    qtbot.mouseMove(wipe.viewport(), pos=QPoint(end.x(), y))
    qtbot.mouseRelease(wipe.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(end.x(), y))
    assert wipe.fraction == pytest.approx((BIG_BITE[0] + 30) / W, abs=0.01)
    assert is_photo(seen(wipe, *BIG_BITE))
    # Dragging elsewhere pans, as in every view: the divider stays.
    wipe.set_zoom(3.0)
    before = wipe.center_point()
    qtbot.mousePress(wipe.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(20, 20))
    qtbot.mouseMove(wipe.viewport(), pos=QPoint(60, 60))
    qtbot.mouseRelease(wipe.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(60, 60))
    assert wipe.fraction == pytest.approx((BIG_BITE[0] + 30) / W, abs=0.01)
    assert wipe.center_point() != before


@pytest.mark.parametrize("wipe", [False, True])
def test_biggest_difference_zooms_to_the_largest_then_the_next(qtbot, view, wipe: bool) -> None:
    view.wipe_button.setChecked(wipe)
    qtbot.wait(20)  # the panes are laid out again
    shown = view.shown_views()[0]
    fitted_zoom = shown.zoom

    def visible():
        return shown.mapToScene(shown.viewport().rect()).boundingRect()

    view.spot_button.click()
    assert shown.zoom > 1.5 * fitted_zoom
    assert visible().contains(QPointF(*BIG_BITE)) and not visible().contains(QPointF(*SMALL_BITE))
    assert view.spot_button.text() == "Next difference (1 of 2)"
    assert "Shown: difference 1 of 2, mean |Δα| " in view.spot_button.toolTip()
    if not wipe:  # the other side shows the same place
        assert view.b_view.zoom == pytest.approx(shown.zoom)
        a, b = shown.center_point(), view.b_view.center_point()
        assert abs(a.x() - b.x()) < 1 and abs(a.y() - b.y()) < 1
    view.spot_button.click()
    assert visible().contains(QPointF(*SMALL_BITE)) and not visible().contains(QPointF(*BIG_BITE))
    assert view.spot_button.text() == "Next difference (2 of 2)"
    view.spot_button.click()  # then the first again
    assert view.spot_button.text() == "Next difference (1 of 2)"
    view.fit_button.click()
    assert shown.zoom == pytest.approx(fitted_zoom)


def test_sides_that_agree_say_so_instead_of_zooming(
    qtbot, tmp_path: Path, pair, isolated_settings
) -> None:
    same = Comparison(
        pair.comparison.a,
        pair.comparison.a,
        "u2netp fp32",
        "u2netp int8",
        pair.comparison.metrics,
        diff=np.zeros((H, W), np.uint8),
        raw_a=pair.comparison.raw_a,
        raw_b=pair.comparison.raw_a,
        raw_diff=np.zeros((H, W), np.uint8),
    )
    view = ComparisonView(ModelStore(tmp_path))
    qtbot.addWidget(view)
    view.set_result(compared(same, pair.pair))
    zoom = view.a_view.zoom
    view.spot_button.click()
    assert view.spot_button.text() == "No difference on the edges"
    assert view.a_view.zoom == zoom


@pytest.mark.parametrize("size", [(1280, 800), (1024, 768)])
def test_the_panes_use_the_room_they_have(qtbot, view, size: tuple[int, int]) -> None:
    view.resize(*size)
    for wipe in (False, True):
        view.wipe_button.setChecked(wipe)
        qtbot.wait(10)
        area = view.pane_area
        shown = view.shown_views()
        # Side by side, each pane has half the area's width; the wipe view all of it.
        for pane_view in shown:
            pane = pane_view.parentWidget()
            assert pane.width() >= area.width() // len(shown) - area.SPACING
        # The photo fills its pane on one axis.
        port = shown[0].viewport().rect()
        on_screen = shown[0].mapFromScene(shown[0].sceneRect()).boundingRect()
        assert on_screen.width() >= port.width() - 6 or on_screen.height() >= port.height() - 6


def test_the_views_choices_are_kept_for_the_next_run(qtbot, view, tmp_path: Path) -> None:
    view.wipe_button.setChecked(True)
    view.show_box.setCurrentIndex(view.show_box.findData("mask"))
    view.heat_button.setChecked(True)
    again = ComparisonView(ModelStore(tmp_path))
    qtbot.addWidget(again)
    assert again.wipe_button.isChecked() and again.heat_button.isChecked()
    assert again.show_box.currentData() == "mask"


def test_only_the_views_shown_hold_pictures_and_a_switch_keeps_the_place(qtbot, view) -> None:
    assert view.a_view.has_image() and view.b_view.has_image()
    assert not view.diff_view.has_image() and not view.wipe_view.has_image()
    view.spot_button.click()  # zoomed into the large bite, side by side
    zoom, centre = view.a_view.zoom, view.a_view.center_point()
    view.wipe_button.setChecked(True)
    qtbot.wait(20)
    assert not view.a_view.has_image() and view.wipe_view.has_image()
    assert view.wipe_view.zoom == pytest.approx(zoom)
    moved = view.wipe_view.center_point() - centre
    assert abs(moved.x()) < 1 and abs(moved.y()) < 1
