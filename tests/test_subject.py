"""The subject's box for crop and canvas: decided by alpha mass and connectivity, so that
faint remnants of the background and small flecks neither move the subject off-centre nor
show on the output; and the note when a canvas enlarges the subject so much that it will
look soft (the command line's line, the app's Export panel)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover.export.compose import (
    ComposeOptions,
    compose_array,
    enlargement,
    layout,
    placed_alpha,
)
from bgremover.export.options import Length, Shadow
from bgremover.export.presets import get_preset, options_from
from bgremover.mask.subject import find_subject, subject_box

from conftest import DATA, ROOT, cli, make_window

SHARED = ROOT.parent / "shared" / "data"
PORTRAIT = SHARED / "portraits" / "input" / "p_07141906.jpg"
PORTRAIT_REFERENCE = SHARED / "portraits" / "reference_alpha" / "p_07141906.png"
WHITE = (255, 255, 255, 255)
PRODUCT = ComposeOptions(
    background=WHITE, crop=True, canvas=(400, 400), margin=Length(5, True), shadow=Shadow()
)


def _subject(height: int = 240, width: int = 320) -> np.ndarray:
    """An alpha with a solid subject (x 60-140, y 40-200) with a soft 3-pixel edge."""
    alpha = np.zeros((height, width), np.uint8)
    alpha[40:200, 60:140] = 255
    for step, level in enumerate((160, 90, 30), start=1):
        ring = np.zeros_like(alpha)
        ring[40 - step : 200 + step, 60 - step : 140 + step] = level
        alpha = np.maximum(alpha, ring)
    return alpha


def test_faint_remnants_neither_widen_the_box_nor_show() -> None:
    """The ghost of a sign behind a person: faint alpha (0.25), beside the subject (a U of
    two legs on a base) and in the gap between its legs."""
    alpha = np.zeros((240, 320), np.uint8)
    alpha[40:200, 60:80] = alpha[40:200, 120:140] = alpha[180:200, 60:140] = 255
    alpha[60:120, 150:170] = 64  # beside it: it moved the subject off-centre
    alpha[60:120, 90:110] = 64  # between the legs: it showed, with its shadow
    assert subject_box(alpha) == (60, 40, 140, 200)
    rgb = np.full((*alpha.shape, 3), 120, np.uint8)
    out = compose_array(rgb, alpha, PRODUCT)
    placed = placed_alpha(alpha, PRODUCT)
    # Scaled 2.25 times (360 / 160), centred: its box is at 110-290 x 20-380.
    rows, cols = np.flatnonzero((placed > 25).any(axis=1)), np.flatnonzero((placed > 25).any(0))
    assert abs((rows[0] + rows[-1] + 1) / 2 - 200) <= 1
    assert abs((cols[0] + cols[-1] + 1) / 2 - 200) <= 1
    # Neither remnant, nor a shadow of it: white wherever the subject and its own shadow
    # (offset down and right by 1-2 %, blurred by 2 % of its height) are not.
    x0, y0, x1, y1 = cols[0], rows[0], cols[-1] + 1, rows[-1] + 1
    around = np.zeros(placed.shape, bool)
    around[max(0, y0 - 40) : y1 + 40, max(0, x0 - 40) : x1 + 40] = True
    assert (out[~around] == 255).all() and (placed[~around] == 0).all()
    # Between the legs, past the reach of their shadows.
    assert (placed[65:200, 178:223] == 0).all()
    assert (out[70:150, 190:215] == 255).all()


def test_a_small_fleck_outside_is_left_out_but_a_small_part_inside_the_box_is_kept() -> None:
    alpha = _subject()
    alpha[225:229, 300:304] = 255  # a fleck of the background, far from the subject
    alpha[110:114, 20:24] = 255  # another, on the other side
    alpha[100:110, 95:105] = 0  # a hole in the subject...
    alpha[103:107, 98:102] = 255  # ...and a small piece in it, apart from the rest
    subject = find_subject(alpha)
    assert subject.box == (57, 37, 143, 203)
    assert subject.leftover is not None and subject.leftover.sum() == 32
    assert subject.leftover[225:229, 300:304].all() and subject.leftover[110:114, 20:24].all()
    placed = placed_alpha(alpha, ComposeOptions(crop=True))
    assert placed.shape == (166, 86)
    assert (placed[103 - 37 : 107 - 37, 98 - 57 : 102 - 57] == 255).all()  # the piece stays


def test_parts_of_a_similar_mass_are_all_the_subject() -> None:
    """Two products side by side, a part of 6 % of their mass below them, a fleck of 3 %
    beside them, and a part as small inside their box."""
    alpha = np.zeros((200, 400), np.uint8)
    alpha[50:150, 20:120] = 255
    alpha[60:160, 260:360] = 255
    alpha[165:195, 150:176] = 200  # 780 pixels of alpha 200: 6 % of a product's mass
    alpha[10:42, 380:390] = 255  # 320 pixels: 3 %, apart: a fleck
    alpha[120:140, 180:196] = 255  # 320 pixels inside the products' box: kept
    subject = find_subject(alpha)
    assert subject.box == (20, 50, 360, 195)
    assert subject.leftover is not None and subject.leftover.sum() == 320
    assert subject.leftover[10:42, 380:390].all()


def test_a_faint_part_that_touches_the_subject_is_the_subject() -> None:
    """A dark coat the model is unsure of, below a face it is sure of: one part."""
    alpha = _subject()
    alpha[203:240, 40:160] = 70
    subject = find_subject(alpha)
    assert subject.box == (40, 37, 160, 240) and subject.leftover is None


def test_a_faint_subject_alone_is_still_the_subject() -> None:
    alpha = np.zeros((100, 100), np.uint8)
    alpha[20:80, 30:70] = 60  # a glass, say: nothing at half opacity
    alpha[5:7, 90:92] = 25  # and faint noise apart from it
    subject = find_subject(alpha)
    assert subject.box == (30, 20, 70, 80)
    assert subject.leftover is not None and subject.leftover.sum() == 4


def test_nothing_that_shows_is_no_subject() -> None:
    alpha = np.full((50, 60), 10, np.uint8)
    assert find_subject(alpha).box is None
    assert layout(alpha, ComposeOptions(crop=True)).size == (60, 50)  # the whole photo


def test_a_camera_sized_alpha_gets_the_exact_box_of_its_subject() -> None:
    """Found at a working size, the parts decide; the box is exact at full size."""
    alpha = np.zeros((3000, 4000), np.uint8)
    alpha[701:2403, 1203:2105] = 255
    alpha[701:2403, 1202] = 40  # a one-pixel soft edge at full size
    alpha[300:500, 2600:2900] = 50  # a faint remnant apart from it
    alpha[2900:2906, 100:106] = 255  # a fleck
    subject = find_subject(alpha)
    assert subject.box == (1202, 701, 2105, 2403)
    assert subject.leftover is not None
    assert subject.leftover[300:500, 2600:2900].all() and subject.leftover[2900:2906, 100:106].all()
    assert not subject.leftover[701:2403, 1202:2105].any()


def test_a_canvas_that_enlarges_more_than_twice_says_so_in_words() -> None:
    alpha = np.zeros((300, 300), np.uint8)
    alpha[100:200, 120:170] = 255  # 50 x 100 px
    options = ComposeOptions(crop=True, canvas=(2000, 2000), margin=Length(5, True))
    found = enlargement(alpha, options)
    assert found is not None
    assert found.scale == pytest.approx(18.0) and found.subject == (50, 100)
    words = found.words()
    assert "50x100 px" in words and "18.0x" in words and "2000x2000" in words
    assert "Use a larger photo, or a canvas of at most 222x222 px" in words
    # At twice or less, without a canvas, or with a ratio (never enlarged): nothing.
    assert enlargement(alpha, ComposeOptions(crop=True, canvas=(200, 200))) is None
    assert enlargement(alpha, ComposeOptions(crop=True)) is None
    assert enlargement(alpha, ComposeOptions(crop=True, aspect=(1, 1))) is None
    # Without crop the whole photo is enlarged.
    whole = enlargement(alpha, ComposeOptions(canvas=(1000, 1000)))
    assert whole is not None and whole.subject == (300, 300) and not whole.cropped
    assert whole.words().startswith("the photo is 300x300 px")


# -- the real model, as a user runs it ------------------------------------------------


def _reference_box(path: Path) -> tuple[int, int, int, int]:
    reference = np.asarray(Image.open(path).convert("L"))
    rows = np.flatnonzero((reference > 25).any(axis=1))
    cols = np.flatnonzero((reference > 25).any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


@pytest.mark.model
@pytest.mark.skipif(not PORTRAIT.is_file(), reason="needs the shared portraits (../shared/data)")
def test_product_preset_centres_the_person_without_the_sign_behind_him(
    tmp_path: Path, u2netp_remover
) -> None:
    """p_07141906: u2netp keeps faint remnants of a sign behind the man. On the white
    square they moved him off-centre, and showed as ghost text with a shadow."""
    out = tmp_path / "square.jpg"
    mask = tmp_path / "mask.png"
    proc = cli("remove", str(PORTRAIT), "-o", str(out), "--preset", "product-white-square")
    assert proc.returncode == 0, proc.stderr
    assert "is enlarged 2.1x to fill the 2000x2000 canvas" in proc.stderr  # 1080 px photo
    cli(
        "remove", str(PORTRAIT), "-o", str(mask), "--preset", "product-white-square",
        "--mask-only", "--format", "png", check=True,
    )  # fmt: skip
    placed = np.asarray(Image.open(mask))
    square = np.asarray(Image.open(out))
    assert placed.shape == (2000, 2000) and square.shape == (2000, 2000, 3)
    # Where the man is on the square: his box in the reference matte (P3M-Net's), put
    # where this photo's layout puts the photo.
    options, _ = options_from(get_preset("product-white-square").values)
    lay = layout(u2netp_remover.remove(PORTRAIT).alpha, options)
    x0, y0, x1, y1 = _reference_box(PORTRAIT_REFERENCE)
    (left, top), (right, bottom) = lay.to_output(x0, y0), lay.to_output(x1, y1)
    # Centred within 2 % of the canvas.
    assert abs((left + right) / 2 - 1000) <= 40 and abs((top + bottom) / 2 - 1000) <= 40
    # Nothing of the sign, which lay to his left (in the square's left 290 px): the mask
    # is below 0.1 there (with 2 % of the canvas of slack for the two models' outlines),
    # and the square is white (no ghost text, no shadow of it) but for his own shadow,
    # which fades out within a tenth of his height.
    assert placed[:, : round(left) - 40].max() < 26
    assert (square[:, : round(left - 0.1 * (bottom - top))] >= 250).all()


@pytest.mark.model
def test_the_command_line_says_when_a_subject_is_enlarged_past_twice(tmp_path: Path) -> None:
    photo = DATA / "skimage_coffee.png"  # 600 x 400: a cup of about 400 x 300 px
    out = tmp_path / "square.jpg"
    proc = cli("remove", str(photo), "-o", str(out), "--preset", "product-white-square")
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stderr.splitlines() if line.startswith("bgremover: note:")]
    assert len(notes) == 1, proc.stderr
    assert str(photo) in notes[0] and "is enlarged" in notes[0] and "2000x2000" in notes[0]
    assert "Use a larger photo, or a canvas of at most" in notes[0]
    assert out.is_file()
    # A canvas that enlarges it less: no note.
    proc = cli(
        "remove", str(photo), "-o", str(tmp_path / "small.jpg"),
        "--preset", "product-white-square", "--canvas", "400x400",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "bgremover: note:" not in proc.stderr


@pytest.mark.model
def test_the_export_panel_notes_an_enlarged_subject(
    qtbot, u2netp_path: Path, isolated_settings: Path, tmp_path: Path, monkeypatch
) -> None:
    pytest.importorskip("PySide6")
    monkeypatch.setenv("BGREMOVER_PRESETS", str(tmp_path / "presets"))
    window = make_window(qtbot)
    with qtbot.waitSignal(window.settled, timeout=300_000):
        window.add_paths([DATA / "skimage_coffee.png"])
    label = window.export_panel.enlarged_label
    assert label.isHidden()  # the photo's own frame: nothing enlarged
    panel = window.export_panel

    def choose(name: str) -> None:
        index = panel.preset_box.findData(name)
        with qtbot.waitSignal(window.settled, timeout=300_000):
            panel.preset_box.setCurrentIndex(index)
            panel.preset_box.activated.emit(index)
            window.jobs.check_settled()

    choose("product-white-square")
    assert not label.isHidden()
    text = label.text()
    assert text.startswith("Note: the subject is") and "enlarged" in text and "2000x2000" in text
    choose("sticker")  # cropped, never enlarged
    assert label.isHidden()
