"""The comparison of any two sides (model, precision), and the model choice that says
each model's size and licence, and asks before a download."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from bgremover.gui.export_panel import select_data
from bgremover.network import models

from conftest import DATA, is_job, make_window

WAIT_MS = 300_000


def answer_download(button: str) -> list[str]:
    """Answer the next download question with ``button`` ("Download" or "Cancel"); the
    list gets the question's text and details when it is asked."""
    asked: list[str] = []

    def answer() -> None:
        box = QApplication.activeModalWidget()
        assert isinstance(box, QMessageBox), box
        asked.append(f"{box.windowTitle()}\n{box.text()}\n{box.informativeText()}")
        if button == "Cancel":
            box.button(QMessageBox.StandardButton.Cancel).click()
        else:
            next(b for b in box.buttons() if b.text() == button).click()

    QTimer.singleShot(0, answer)
    return asked


@pytest.fixture()
def empty_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_settings) -> Path:
    """A model cache with nothing in it (and no network to fill it)."""
    home = tmp_path / "empty-home"
    monkeypatch.setenv("BGREMOVER_HOME", str(home))
    for proxy in ("HTTPS_PROXY", "HTTP_PROXY"):
        monkeypatch.setenv(proxy, "http://127.0.0.1:9")
    return home


def test_the_model_box_shows_size_cache_licence_and_non_commercial(qtbot, empty_home) -> None:
    window = make_window(qtbot)
    box = window.panel.model_box
    text = {box.itemData(i): box.itemText(i) for i in range(box.count())}
    tip = {box.itemData(i): box.itemData(i, 3) for i in range(box.count())}  # ToolTipRole
    assert text["u2netp"] == "u2netp — 4.6 MB download"  # exact: no "about"
    assert text["birefnet-general"] == "birefnet-general — about 973 MB download"
    assert text["bria-rmbg"] == "bria-rmbg — about 1.0 GB download · non-commercial"
    assert all("non-commercial" not in t for name, t in text.items() if name != "bria-rmbg")
    bria = models.REGISTRY["bria-rmbg"]
    assert bria.licence in tip["bria-rmbg"] and bria.description in tip["bria-rmbg"]
    assert "Commercial use needs a licence from its owner" in tip["bria-rmbg"]
    assert models.REGISTRY["isnet-imgly"].licence in tip["isnet-imgly"]


def test_a_cached_model_says_so_with_its_size(qtbot, fresh_home, isolated_settings) -> None:
    window = make_window(qtbot)
    box = window.panel.model_box
    assert box.itemText(box.findData("u2netp")) == "u2netp — 4.6 MB, cached"


def test_an_uncached_non_commercial_model_is_asked_about_and_cancel_keeps_the_old(
    qtbot, empty_home
) -> None:
    window = make_window(qtbot)
    box = window.panel.model_box
    before = window.settings.model
    asked = answer_download("Cancel")
    select_data(box, "bria-rmbg")
    assert len(asked) == 1
    question = asked[0]
    assert "bria-rmbg is not downloaded yet: it is about 1.0 GB" in question
    assert models.REGISTRY["bria-rmbg"].licence in question
    assert "Non-commercial licence" in question and "needs a licence from its owner" in question
    assert window.settings.model == before and box.currentData() == before

    asked = answer_download("Download")
    select_data(box, "isnet-imgly")  # a commercial-friendly one: no warning, its size
    assert len(asked) == 1 and "isnet-imgly is not downloaded yet: it is 88 MB." in asked[0]
    assert "Non-commercial" not in asked[0]
    assert window.settings.model == "isnet-imgly"


def test_choosing_another_b_compares_again_with_new_numbers(
    qtbot, tiny_registered, isolated_settings
) -> None:
    window = make_window(qtbot)
    view = window.compare
    view.set_sides((None, "fp32"), (None, "fp32"))  # u2netp against itself: no int8 made
    window.tabs.setCurrentWidget(view)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([DATA / "skimage_chelsea.png"])
    assert view.result is not None
    assert float(view.numbers["iou"].text()) == 1.0
    assert view.titles[1].text().startswith("B: u2netp fp32 cutout · ")
    first = view.result

    # The user picks another model for B: cached, so nothing is asked; it runs as a job.
    with qtbot.waitSignal(window.engine.ended, check_params_cb=is_job("compare"), timeout=WAIT_MS):
        select_data(view.side_b.model_box, tiny_registered)
        assert view.result is None and "Comparing u2netp fp32 and tinymodel fp32" in (
            view.placeholder.text()
        )
    qtbot.waitUntil(lambda: view.result is not None, timeout=WAIT_MS)
    assert view.result is not first
    assert view.result.comparison.label_b == "tinymodel fp32"
    assert float(view.numbers["iou"].text()) < 0.9
    assert "tinymodel fp32" in view.numbers["t8"].text()
    assert view.titles[0].text().startswith("A: u2netp fp32 cutout · ")
    assert view.titles[1].text().startswith("B: tinymodel fp32 cutout · ")
    assert view.titles[1].text().endswith(" ms")
    view.heat_button.setChecked(True)  # the difference's pane too
    for pane in (view.a_view, view.b_view, view.diff_view):
        assert pane.has_image()
    # Raw outputs of 320² and 32²: no pixel-for-pixel difference, said so.
    view.raw_toggle.setChecked(True)
    assert view.titles[2].text() == "no |A − B| of raw outputs 320×320 and 32×32"
    assert not view.diff_view.has_image() and view.b_view.has_image()

    # Back to the default pair's precision on B: an uncached model is asked about first.
    asked = answer_download("Cancel")
    select_data(view.side_b.model_box, "bria-rmbg")
    assert asked and "Non-commercial licence" in asked[0]
    assert view.side_b.side() == (tiny_registered, "fp32")
    assert view.result is not None and window.current_entry().comparison.job is None


def test_int8_is_not_offered_for_a_model_without_it(qtbot, fresh_home, isolated_settings) -> None:
    shutil.rmtree(fresh_home / "models")  # nothing cached: the download is asked about
    window = make_window(qtbot)
    side = window.compare.side_b
    assert side.side() == (None, "int8")
    answer_download("Download")
    select_data(side.model_box, "u2net_cloth_seg")
    assert side.side() == ("u2net_cloth_seg", "fp32")
    int8 = side.precision_box.model().item(side.precision_box.findData("int8"))
    assert not int8.isEnabled()
