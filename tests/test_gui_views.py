"""How the app's views look: the queue's rows, the comparison's panes, the batch dialog.

Real widgets offscreen, the real worker thread and u2netp (int8 for the comparison).
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
from PySide6.QtCore import QObject, QPoint, QRect, QSize, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices, QGuiApplication, QImage
from PySide6.QtWidgets import QStyleOptionViewItem

from bgremover.gui.queue import ICON_SIZE, Status
from bgremover.gui.queue_view import QueueView

from conftest import DATA, SAMPLE, drop_files, is_job, row_icon, row_tooltip

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("isolated_settings")]
WAIT_MS = 300_000
LONG_NAME = "a very long file name of a cat photo taken in the garden at noon 2024-05-01.png"


def queue_view_of(window) -> QueueView:
    """The queue's list as the app draws it, over the window's own model."""
    view = QueueView()
    view.setModel(window.queue)
    view.resize(240, 420)
    view.show()
    return view


def option_for(view: QueueView, row: int) -> QStyleOptionViewItem:
    option = QStyleOptionViewItem()
    view.initViewItemOption(option)
    option.rect = view.visualRect(view.model().index(row, 0))
    return option


def ink_columns(image: QImage, top: int, bottom: int, left: int, right: int) -> list[int]:
    """Columns in [left, right] where a pixel between rows top and bottom differs from the
    background (taken at the row's left end, beside the icon)."""
    background = image.pixelColor(left, (top + bottom) // 2)
    found = []
    for x in range(left, right + 1):
        for y in range(top, bottom + 1):
            c = image.pixelColor(x, y)
            if abs(c.lightness() - background.lightness()) > 60:
                found.append(x)
                break
    return found


def test_queue_rows_have_even_icons_and_aligned_text(qtbot, window, tmp_path: Path) -> None:
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    view = queue_view_of(window)
    qtbot.addWidget(view)
    square = QSize(ICON_SIZE, ICON_SIZE)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        # A portrait photo, a landscape one and a bad file: three kinds of icon.
        drop_files(window, [SAMPLE, DATA / "skimage_chelsea.png", bad])
        waiting = [row_icon(window, row) for row in range(3)]
        heights_waiting = [view.visualRect(window.queue.index(r, 0)).height() for r in range(3)]
    assert all(icon is not None and icon.availableSizes() == [square] for icon in waiting)
    assert [e.status for e in window.queue.entries()] == [Status.DONE, Status.DONE, Status.FAILED]
    icons = [row_icon(window, row) for row in range(3)]
    assert all(icon.availableSizes() == [square] for icon in icons)
    heights = [view.visualRect(window.queue.index(r, 0)).height() for r in range(3)]
    assert len(set(heights)) == 1 and heights == heights_waiting  # no row grows on arrival
    assert heights[0] >= ICON_SIZE

    # The portrait thumbnail is letterboxed: the tile shows at its sides, the photo between.
    portrait = icons[0].pixmap(square).toImage()
    side_alpha = portrait.pixelColor(1, ICON_SIZE // 2).alpha()
    assert side_alpha < 100 < portrait.pixelColor(ICON_SIZE // 2, ICON_SIZE // 2).alpha()

    # Every row's name and status start in one column, right of the icon column.
    assert not view.selectionModel().hasSelection()  # plain rows: one background
    shot = view.viewport().grab().toImage()
    delegate = view.itemDelegate()
    starts = set()
    for row in range(3):
        icon_rect, name_rect, status_rect = delegate.layout(option_for(view, row))
        assert status_rect.left() == name_rect.left()
        for line in (name_rect, status_rect):
            ink = ink_columns(shot, line.top(), line.bottom(), icon_rect.right() + 2, line.right())
            assert ink, f"row {row}: no text drawn"
            starts.add(ink[0])
    assert max(starts) - min(starts) <= 2, starts  # the first letters line up


def test_long_names_are_shortened_in_the_middle_and_never_scroll_sideways(
    qtbot, window, tmp_path: Path
) -> None:
    long_file = tmp_path / LONG_NAME
    shutil.copy(DATA / "skimage_chelsea.png", long_file)
    view = queue_view_of(window)
    qtbot.addWidget(view)
    view.resize(220, 300)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([long_file])
    shown = view.itemDelegate().name_text(option_for(view, 0), window.queue.index(0, 0))
    head, _, tail = shown.partition("…")
    assert tail and LONG_NAME.startswith(head) and LONG_NAME.endswith(tail)
    assert tail.endswith(".png") and len(head) >= 4  # both ends of the name stay
    assert str(long_file) in row_tooltip(window, 0)
    assert view.horizontalScrollBar().maximum() == 0
    assert not view.horizontalScrollBar().isVisible()


def displayed(view) -> tuple[int, int, float]:
    """(width, height, share of the viewport covered) of the image as drawn."""
    rect = view.mapFromScene(view.sceneRect()).boundingRect()
    port = view.viewport().rect()
    shown = rect.intersected(port)
    share = shown.width() * shown.height() / (port.width() * port.height())
    return rect.width(), rect.height(), share


def fitted(view) -> bool:
    """The image spans the viewport on one axis (less Qt's few pixels of margin) and stays
    inside it on the other."""
    w, h, _ = displayed(view)
    port = view.viewport().rect()
    return (abs(w - port.width()) <= 6 and h <= port.height()) or (
        abs(h - port.height()) <= 6 and w <= port.width()
    )


def panes(view) -> tuple:
    """The three panes side by side: A, B and their difference (asked for)."""
    view.heat_button.setChecked(True)
    assert view.shown_views() == [view.a_view, view.b_view, view.diff_view]
    return view.a_view, view.b_view, view.diff_view


def test_comparison_fits_the_panes_and_keeps_fitting_until_zoomed(
    qtbot, window, u2netp_int8_path
) -> None:
    window.resize(1280, 800)
    window.tabs.setCurrentWidget(window.compare)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([DATA / "skimage_chelsea.png"])  # a landscape photo, 451 × 300
    view = window.compare
    qtbot.waitUntil(lambda: all(fitted(v) for v in panes(view)), timeout=WAIT_MS)
    for pane in panes(view):
        assert displayed(pane)[2] > 0.6, displayed(pane)  # the photo fills most of its pane
    first_width = displayed(view.a_view)[0]

    window.resize(1500, 950)  # the panes grow, one after the other: each fits again
    qtbot.waitUntil(
        lambda: all(fitted(v) and displayed(v)[0] > first_width + 20 for v in panes(view)),
        timeout=WAIT_MS,
    )

    view.actual_button.click()
    assert all(v.zoom == pytest.approx(1.0) for v in panes(view))
    window.resize(1300, 820)
    qtbot.waitUntil(lambda: view.a_view.viewport().width() < 400, timeout=WAIT_MS)
    assert all(v.zoom == pytest.approx(1.0) for v in panes(view))  # the user's zoom stays

    view.fit_button.click()
    assert all(fitted(v) for v in panes(view))
    zoom = view.a_view.zoom
    assert zoom != pytest.approx(1.0)
    assert view.b_view.zoom == pytest.approx(zoom) and view.diff_view.zoom == pytest.approx(zoom)


def test_comparison_layout_does_not_move_when_the_result_arrives(
    qtbot, window, u2netp_int8_path
) -> None:
    window.resize(1280, 800)
    window.tabs.setCurrentWidget(window.compare)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([SAMPLE])
    view = window.compare

    def geometry() -> list[QRect]:
        widgets = (*panes(view), view.numbers["mean"].parentWidget())
        return [QRect(w.mapTo(view, QPoint(0, 0)), w.size()) for w in widgets]

    with_result = geometry()
    with qtbot.waitSignal(window.engine.ended, check_params_cb=is_job("compare"), timeout=WAIT_MS):
        window.reprocess()  # the comparison is made again: the placeholder shows meanwhile
        assert view.result is None and view.placeholder.isVisible()
        qtbot.wait(50)
        waiting = geometry()
    qtbot.waitUntil(lambda: view.result is not None, timeout=WAIT_MS)
    qtbot.wait(50)
    assert not view.placeholder.isVisible()
    assert waiting == with_result == geometry()


def test_heat_legend_title_is_clear_of_the_colour_bar(qtbot, window, u2netp_int8_path) -> None:
    window.tabs.setCurrentWidget(window.compare)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([DATA / "skimage_chelsea.png"])
    legend = window.compare.legend
    window.compare.heat_button.setChecked(True)  # the legend shows with the heatmap
    window.compare.raw_toggle.setChecked(True)
    assert legend.title == "|Δraw|"
    legend.resize(legend.minimumSizeHint())  # the tightest it is ever laid out
    title_width = legend.fontMetrics().horizontalAdvance(legend.title)
    bar = legend.bar_rect()
    assert bar.left() > title_width + 2 and bar.width() >= 60
    shot = legend.grab().toImage()
    # Between the title's last stroke and the bar: only background.
    gap = ink_columns(shot, bar.top(), bar.bottom(), title_width + 1, bar.left() - 1)
    assert gap == []
    assert ink_columns(shot, bar.top(), bar.bottom(), 0, title_width)  # the title is drawn


class UrlCatcher(QObject):
    """Where QDesktopServices sends file: URLs during a test, instead of a file manager."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[QUrl] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.urls.append(url)


def test_batch_dialog_shows_its_settings_lists_failures_and_opens_the_output(
    qtbot, window, tmp_path: Path
) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    (src / "nested").mkdir(parents=True)
    shutil.copy(SAMPLE, src / "photo.jpg")
    broken = src / "nested" / "broken.jpg"
    broken.write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    dialog = window.batches.open_batch(src)
    dialog.output_edit.setText(str(out))
    dialog.show_settings(window.settings)
    shown = dialog.settings_label.text()
    assert "u2netp" in shown and "fp32" in shown and "PNG" in shown
    assert "transparent" in shown
    masks = replace(window.settings, mask_only=True, output_format="webp", precision="int8")
    dialog.show_settings(masks)
    assert all(word in dialog.settings_label.text() for word in ("int8", "WebP", "masks only"))
    assert "int8 (fp32 where int8 is unsure)" in dialog.settings_label.text()  # the guard
    dialog.show_settings(replace(masks, int8_guard=False))
    plain = dialog.settings_label.text()
    assert "· int8 ·" in plain and "unsure" not in plain
    dialog.show_settings(window.settings)
    assert not dialog.open_button.isVisible()

    with qtbot.waitSignal(window.engine.ended, check_params_cb=is_job("batch"), timeout=WAIT_MS):
        dialog.start_button.click()
        window.panel.mask_only_box.setChecked(True)  # changed while it runs: the running
        assert dialog.settings_label.text() == shown  # batch's settings stay shown
    qtbot.waitUntil(lambda: not dialog.running, timeout=WAIT_MS)
    assert "masks only" in dialog.settings_label.text()  # and the new ones once it has ended

    failures = dialog.failures
    assert failures.isVisible() and failures.topLevelItemCount() == 1
    item = failures.topLevelItem(0)
    assert item.text(0) == str(Path("nested") / "broken.jpg")
    assert item.toolTip(0) == str(broken)
    assert item.text(1) and str(broken) not in item.text(1)
    failures.setFocus()
    item.setSelected(True)
    qtbot.keyClick(failures, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QGuiApplication.clipboard().text() == f"{broken}\t{item.text(1)}"

    catcher = UrlCatcher()
    QDesktopServices.setUrlHandler("file", catcher, "open")
    try:
        assert dialog.open_button.isVisible()
        dialog.open_button.click()
    finally:
        QDesktopServices.unsetUrlHandler("file")
    assert catcher.urls == [QUrl.fromLocalFile(str(out))]
    assert (out / "photo.png").is_file()
    # Where no file manager can be started (here: the offscreen platform has none), the
    # dialog says so and gives the path instead of doing nothing visible.
    assert not dialog.open_output_folder()
    assert "No file manager could be started" in dialog.status.text()
    assert str(out) in dialog.status.text() and QGuiApplication.clipboard().text() == str(out)


def test_the_settings_and_the_edit_bar_look_like_what_they_are(qtbot, isolated_settings) -> None:
    from conftest import make_window

    window = make_window(qtbot)
    # Every background choice has an icon of a swatch's size, so the names line up.
    box = window.export_panel.background_box
    assert all(not box.itemIcon(i).isNull() for i in range(box.count()))
    # The note under the settings is text to read, not a switched-off control.
    assert window.panel.applies_label.isEnabled()
    # Every tool of the edit bar is drawn as a button, not only the one chosen.
    touchup = window.touchup_menu
    buttons = touchup.edit_bar.buttons()
    assert len(buttons) >= len(touchup.tool_actions) and not any(b.autoRaise() for b in buttons)


def test_the_window_fits_a_1024_by_768_screen(qtbot, isolated_settings) -> None:
    from conftest import make_window

    window = make_window(qtbot)
    hint = window.minimumSizeHint()
    assert hint.width() <= 1024 - 16 and hint.height() <= 768 - 64  # room for a frame
    window.resize(1024, 700)
    assert window.width() <= 1024


def test_a_size_row_does_not_give_the_settings_a_scroll_bar(qtbot, isolated_settings) -> None:
    """At the default 1280 x 800 the settings pane fits without scrolling, also when the
    canvas's Size row appears: rows of what is off (the guard in fp32, the outline's
    style without one) are not shown."""
    from conftest import make_window

    window = make_window(qtbot)
    window.resize(1280, 800)
    window.apply_settings(canvas="2000x2000")
    QGuiApplication.processEvents()
    panel = window.export_panel
    assert panel.form.isRowVisible(panel._size_row)
    assert not panel.form.isRowVisible(panel._outline_row)
    scroll = window.panel.parentWidget().parentWidget()  # the dock's scroll area
    assert not scroll.verticalScrollBar().isVisible()
    window.apply_settings(outline="8:white")
    assert panel.form.isRowVisible(panel._outline_row)


def test_a_models_preparation_has_the_status_bars_room(qtbot, isolated_settings) -> None:
    """During a download the bar's long line ends in "…" (whole in its tooltip) and the
    provider's label gives way, so two messages never run over each other."""
    from bgremover.engine.pipeline import EngineConfig
    from bgremover.gui.jobs import JobEnd, JobState
    from bgremover.gui.results import Preparing

    from conftest import make_window

    window = make_window(qtbot)
    window.resize(1024, 700)
    window.provider_label.setText("This image: u2netp fp32 on CPU")
    config = EngineConfig(model="isnet-imgly-with-a-name-long-enough-to-be-cut-in-the-bar")
    window.jobs.preparing.emit(7, Preparing(config, "download", 12_300_000, 88_188_479))
    label = window.preparation.label
    assert window.preparation.isVisible() and not window.provider_label.isVisible()
    assert label.text().startswith("Downloading the model isnet-imgly-with-a-name")
    assert label.toolTip() == label.text()
    assert label.width() <= label.maximumWidth()
    # The download job's end, as the engine reports it (a job id no queue entry has).
    window.engine.ended.emit(JobEnd(7, "prepare", ("prepare", config), JobState.CANCELLED))
    assert window.provider_label.isVisible() and not window.preparation.isVisible()
