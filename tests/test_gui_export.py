"""The Export panel: presets, backgrounds, framing and formats, and a preview that is
the file Save writes, pixel for pixel. Real widgets offscreen, the real worker threads
and u2netp."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("PySide6")
from PySide6.QtCore import QMimeData, QPointF, Qt, QTimer, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication, QMessageBox

from bgremover.export.output import FORMATS
from bgremover.export.presets import BUILTIN, load_presets, options_from
from bgremover.gui.imageconv import qimage_to_rgba
from bgremover.gui.questions import PresetNameDialog
from bgremover.gui.save_controller import export_problem
from bgremover.gui.settings import Settings, export_fields, load_settings, save_settings
from bgremover.gui.worker import output_pixels

from conftest import DATA, SAMPLE, is_job, make_window

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("isolated_settings")]
WAIT_MS = 300_000


@pytest.fixture(autouse=True)
def own_presets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """User presets in a folder of the test's own."""
    folder = tmp_path / "presets"
    monkeypatch.setenv("BGREMOVER_PRESETS", str(folder))
    return folder


def settle(qtbot, window, change) -> None:
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        change()
        window.jobs.check_settled()


def process(qtbot, window, *paths: Path) -> None:
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths(list(paths))


def choose_preset(window, name: str) -> None:
    """What picking ``name`` in the preset box does."""
    box = window.export_panel.preset_box
    index = box.findData(name)
    assert index >= 0, f"{name} is not offered"
    box.setCurrentIndex(index)
    box.activated.emit(index)


def save_and_wait(qtbot, window, path: Path) -> None:
    with qtbot.waitSignal(window.output.ended, timeout=WAIT_MS, check_params_cb=is_job("save")):
        assert window.saving.save_result(window.current_entry(), path) is not None


def decoded(path: Path, like: np.ndarray) -> np.ndarray:
    """The file's pixels in the layout of ``like`` (grey, RGB or RGBA)."""
    mode = "L" if like.ndim == 2 else "RGBA" if like.shape[2] == 4 else "RGB"
    with Image.open(path) as img:
        return np.asarray(img.convert(mode))


@pytest.mark.parametrize("name", list(BUILTIN))
def test_each_builtin_preset_saves_what_the_view_shows(qtbot, u2netp_path, tmp_path, name):
    window = make_window(qtbot)
    process(qtbot, window, SAMPLE)
    settle(qtbot, window, lambda: choose_preset(window, name))
    entry = window.current_entry()
    p = entry.processed
    expected, fmt = options_from(load_presets()[name].values)
    assert p.options == expected and p.fmt == fmt == window.settings.output_format
    assert window.settings.preset == name
    assert window.export_panel.preset_box.currentData() == name  # not "Custom"
    # The Result view shows this processed output.
    assert window.viewer._shown is not None and window.viewer._shown[0] == p.output.cacheKey()
    path = tmp_path / f"{name}{FORMATS[fmt].extension}"
    save_and_wait(qtbot, window, path)
    pixels = output_pixels(p.result, p.options, p.fmt)  # what the view was made from
    saved = decoded(path, pixels)
    assert saved.shape == pixels.shape
    assert np.array_equal(saved, pixels)  # exactly the pixels shown
    shown = qimage_to_rgba(window.viewer._item.pixmap().toImage())
    assert shown.shape[:2] == saved.shape[:2]
    if saved.ndim == 3 and saved.shape[2] == 3:  # opaque: the screen's pixels are exact
        assert np.array_equal(shown[..., :3], saved)
    if name == "product-white-square":
        assert saved.shape == (2000, 2000, 3)
        assert tuple(saved[5, 5]) == (255, 255, 255)
    h, w = entry.processed.result.mask.shape
    if expected.crop or expected.canvas:  # max_size never enlarges: the sample is small
        assert saved.shape[:2] != (h, w)


def test_the_changed_signal_carries_the_preset_fields(qtbot, u2netp_path) -> None:
    window = make_window(qtbot)
    with qtbot.waitSignal(window.export_panel.changed, timeout=WAIT_MS) as signal:
        choose_preset(window, "product-white-square")
    changes = signal.args[0]
    assert changes["preset"] == "product-white-square"
    assert changes["output_format"] == "jpeg" and changes["quality"] == 92
    assert changes["background"] == "#ffffff" and changes["crop"] is True
    assert changes["canvas"] == "2000x2000" and changes["margin"] == "5%"
    assert changes["shadow"] is True
    # The fields the preset does not name are reset to their defaults.
    assert changes["outline"] == "" and changes["max_size"] == 0
    assert window.settings.canvas == "2000x2000"
    # A change by hand after it: the options are no preset's.
    window.export_panel.canvas_box.setCurrentIndex(window.export_panel.canvas_box.findData(""))
    window.export_panel.canvas_box.activated.emit(window.export_panel.canvas_box.currentIndex())
    assert window.settings.canvas == "" and window.settings.preset == ""
    assert window.export_panel.preset_box.currentText() == "Custom"


def test_jpeg_with_transparency_is_explained_and_not_saved(qtbot, u2netp_path, tmp_path):
    window = make_window(qtbot)
    process(qtbot, window, SAMPLE)
    panel = window.export_panel
    settle(
        qtbot, window, lambda: panel.format_box.setCurrentIndex(panel.format_box.findData("jpeg"))
    )
    assert window.settings.output_format == "jpeg" and window.settings.background == ""
    assert panel.problem_label.isVisible()
    assert "JPEG cannot keep transparency" in panel.problem_label.text()
    assert "background" in panel.problem_label.text()  # and what to do
    path = tmp_path / "out.jpg"
    assert window.saving.save_result(window.current_entry(), path) is None
    assert not path.exists()
    assert "Not saved" in window.statusBar().currentMessage()
    boxes = [b for b in window.findChildren(QMessageBox) if b.isVisible()]
    assert any("transparency" in b.text() for b in boxes)
    # A background makes it writable, and the problem goes.
    settle(qtbot, window, lambda: window.apply_settings(background="#ffffff"))
    assert not panel.problem_label.isVisible()
    save_and_wait(qtbot, window, path)
    assert path.exists()


def test_an_image_dropped_on_the_panel_becomes_the_background(qtbot, u2netp_path, tmp_path):
    window = make_window(qtbot)
    backdrop = tmp_path / "backdrop.png"
    Image.new("RGB", (64, 48), (10, 200, 30)).save(backdrop)
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(backdrop))])
    event = QDropEvent(
        QPointF(20, 20),
        Qt.DropAction.CopyAction,
        data,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    window.export_panel.dropEvent(event)
    assert event.isAccepted()
    assert window.settings.background_image == str(backdrop.resolve())
    assert window.settings.compose().background_image == str(backdrop.resolve())
    assert window.export_panel.background_box.currentText() == "Image: backdrop.png"
    assert len(window.queue) == 0  # the image is the background, not a photo to open
    process(qtbot, window, SAMPLE)
    p = window.current_entry().processed
    corner = output_pixels(p.result, p.options, p.fmt)[0, 0]
    assert tuple(corner[:3]) == (10, 200, 30)  # the sample's corner is background


def test_a_preset_saved_in_the_panel_is_a_user_preset(qtbot, u2netp_path, own_presets):
    window = make_window(qtbot)
    window.apply_settings(background="#000000", crop=True, margin="20px", output_format="webp")
    path = window.export_panel.save_as_preset("dark-crop")
    assert path is not None and path.parent == own_presets
    presets = load_presets()
    assert "dark-crop" in presets
    options, fmt = options_from(presets["dark-crop"].values)
    assert options == window.settings.compose() and fmt == "webp"
    assert window.export_panel.preset_box.findData("dark-crop") >= 0
    assert window.settings.preset == "dark-crop"
    assert window.export_panel.preset_box.currentData() == "dark-crop"


def answer_next_question(button: str) -> list[str]:
    """Click ``button`` in the next modal question; the list gets its text when asked."""
    asked: list[str] = []

    def answer() -> None:
        box = QApplication.activeModalWidget()
        assert isinstance(box, QMessageBox), box
        asked.append(box.text())
        next(b for b in box.buttons() if b.text() == button).click()

    QTimer.singleShot(0, answer)
    return asked


def test_saving_under_a_builtins_name_asks_and_the_builtin_comes_back(
    qtbot, own_presets: Path
) -> None:
    window = make_window(qtbot)
    panel = window.export_panel
    choose_preset(window, "portrait-blur")
    dialog = PresetNameDialog(panel, panel._suggested_name())
    qtbot.addWidget(dialog)
    # The name offered is no preset's, and the title is not cut.
    assert dialog.name_edit.text() == "my-portrait-blur"
    assert dialog.minimumWidth() > dialog.fontMetrics().horizontalAdvance("Save as Preset") * 2
    window.apply_settings(background="#000000")

    asked = answer_next_question("Cancel")
    assert panel.save_as_preset("portrait-blur") is None
    assert "is a built-in preset" in asked[0]
    assert not own_presets.exists() or not any(own_presets.iterdir())  # nothing saved

    asked = answer_next_question("Use Mine Instead")
    path = panel.save_as_preset("portrait-blur")
    assert asked and path == own_presets / "portrait-blur.toml"
    mine = load_presets()["portrait-blur"]
    assert mine.shadows_builtin and mine.values["background"] == "#000000ff"
    assert panel.preset_box.currentData() == "portrait-blur"
    assert panel.remove_preset_button.isEnabled()

    asked = answer_next_question("Replace")  # now one of the user's: replacing asks too
    window.apply_settings(background="#ffffff")
    assert panel.save_as_preset("portrait-blur") == path
    assert "already have a preset" in asked[0]
    assert load_presets()["portrait-blur"].values["background"] == "#ffffffff"

    asked = answer_next_question("Remove")
    assert panel.remove_chosen_preset()
    assert "built-in preset of this name is used again" in asked[0]
    assert not path.exists() and load_presets()["portrait-blur"].builtin
    assert not panel.remove_preset_button.isEnabled()  # a built-in cannot be removed


def test_the_formats_own_quality_reads_the_same_for_every_preset(qtbot) -> None:
    window = make_window(qtbot)
    spin = window.export_panel.quality_spin
    shown = []
    for name in ("product-white-square", "portrait-blur"):  # quality=92 named, and not
        choose_preset(window, name)
        shown.append(spin.text())
    assert shown == ["92 (default)", "92 (default)"]
    window.apply_settings(quality=80)
    assert spin.text() == "80"


def test_edit_mode_shows_the_photo_frame_and_the_export_returns(qtbot, u2netp_path) -> None:
    window = make_window(qtbot)
    process(qtbot, window, SAMPLE)
    settle(qtbot, window, lambda: choose_preset(window, "product-white-square"))
    p = window.current_entry().processed
    h, w = p.result.mask.shape
    assert window.viewer.sceneRect().size().toSize().width() == 2000
    window.touchup_menu.overlay.setChecked(False)
    window.editing.set_edit_mode(True)
    rect = window.viewer.sceneRect()
    assert (round(rect.width()), round(rect.height())) == (w, h)  # the tools' coordinates
    assert p.edit_output is not None and window.viewer._shown[0] == p.edit_output.cacheKey()
    window.editing.set_edit_mode(False)
    assert window.viewer._shown[0] == p.output.cacheKey()
    assert round(window.viewer.sceneRect().width()) == 2000


def test_bad_stored_export_values_fall_back(qtbot) -> None:
    save_settings(Settings())
    from bgremover.gui.settings import qsettings

    store = qsettings()
    store.setValue("settings/canvas", "big")
    store.setValue("settings/background_image", "/nowhere/at/all.png")
    store.setValue("settings/output_format", "gif")
    store.setValue("settings/crop", "true")
    store.setValue("settings/margin", "lots")
    store.sync()
    loaded = load_settings()
    assert loaded.canvas == "" and loaded.background_image == ""
    assert loaded.output_format == "png" and loaded.margin == ""
    assert loaded.crop is True  # the good ones are kept
    assert loaded.compose().crop


def test_preset_fields_round_trip() -> None:
    for name, values in BUILTIN.items():
        fields = export_fields({k: v for k, v in values.items() if k != "description"})
        settings = Settings(**fields)
        assert (
            options_from(settings.values())[0]
            == options_from({k: v for k, v in values.items() if k != "description"})[0]
        ), name


def test_an_unreadable_background_image_is_refused_in_words(qtbot, u2netp_path, tmp_path):
    window = make_window(qtbot)
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"this is no picture")
    window.export_panel.use_background_image(bad)
    assert window.settings.background_image == ""  # not taken
    boxes = [b for b in window.findChildren(QMessageBox) if b.isVisible()]
    assert any("broken.png cannot be read" in b.text() for b in boxes)
    # One remembered from before (the file broke since): the colour alone, and why.
    window.apply_settings(background="#ffffff", background_image=str(bad))
    options = window.settings.compose()
    assert options.background_image is None and options.background == (255, 255, 255, 255)
    assert "broken.png cannot be read" in window.export_panel.problem_label.text()
    assert "broken.png" in export_problem(window.settings, "png")  # Save refuses it, saying why


def test_a_recompose_that_fails_is_reported_once_and_not_retried(
    qtbot, u2netp_path, monkeypatch
) -> None:
    """Composing again can fail for want of memory: the user hears it once, the app
    settles (no retry loop on the same settings), and the next change tries again."""
    import bgremover.gui.worker as worker_module

    window = make_window(qtbot)
    process(qtbot, window, SAMPLE)
    real = worker_module.output_images
    calls = []

    def out_of_memory(*args, **kwargs):
        calls.append(args)
        raise MemoryError("no memory left to compose the output")

    monkeypatch.setattr(worker_module, "output_images", out_of_memory)
    with qtbot.waitSignal(window.jobs.failed, timeout=WAIT_MS):
        settle(qtbot, window, lambda: window.apply_settings(shadow=True))
    window.jobs.update(window.current_entry())  # the window asking again changes nothing
    window.jobs.check_settled()
    assert len(calls) == 1
    assert window.current_entry().cutout.restage_failed is not None
    monkeypatch.setattr(worker_module, "output_images", real)
    settle(qtbot, window, lambda: window.apply_settings(background="#000000"))
    entry = window.current_entry()
    assert entry.cutout.restage_failed is None and entry.processed.options.shadow is not None


@pytest.mark.parametrize("size", [None, (1024, 768)], ids=["default size", "1024x768"])
def test_the_canvas_note_is_whole_and_in_view(qtbot, u2netp_path, size) -> None:
    """Issue #53: the note that a canvas enlarges the photo was cut off at the bottom of
    the settings pane. It wraps, and it is whole in the pane as it opens, by the canvas
    rows that caused it, at the window's default size and at 1024×768."""
    from PySide6.QtCore import QPoint, QRect
    from PySide6.QtWidgets import QScrollArea

    window = make_window(qtbot)
    if size is not None:
        window.resize(*size)
    process(qtbot, window, DATA / "skimage_chelsea.png")
    settle(qtbot, window, lambda: window.apply_settings(canvas="4000x4000", crop=True))
    label = window.export_panel.enlarged_label
    assert label.isVisible() and "enlarged 9.9x to fill the 4000x4000 canvas" in label.text()
    pane = window.panel.parentWidget().parentWidget()
    assert isinstance(pane, QScrollArea)
    pane.verticalScrollBar().setValue(0)  # the pane as it opens
    QApplication.processEvents()  # the layout's pass for the new text
    assert label.wordWrap() and label.height() >= label.heightForWidth(label.width())
    shown = QRect(label.mapTo(pane.viewport(), QPoint(0, 0)), label.size())
    assert pane.viewport().rect().contains(shown), (shown, pane.viewport().rect())
    # ...and not clipped by the panels it is in
    for parent in (window.export_panel, window.panel):
        assert parent.rect().contains(QRect(label.mapTo(parent, QPoint(0, 0)), label.size()))
