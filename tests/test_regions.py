"""Add / Remove clicks (bgremover.touchup.regions) on synthetic photos with known answers."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from bgremover.touchup import regions
from bgremover.touchup.regions import apply_click

H, W = 240, 320


def textured_background(seed: int = 0, height: int = H, width: int = W) -> np.ndarray:
    """Blue-grey stripes with noise: a background with texture, not one flat colour."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    stripes = 20.0 * np.sin((xx + 0.5 * yy) / 7.0)
    base = np.stack([90 + stripes, 110 + stripes, 150 + 0.5 * stripes], axis=2)
    return np.clip(base + rng.normal(0, 8, (height, width, 3)), 0, 255).astype(np.uint8)


def disk(cx: float, cy: float, r: float) -> np.ndarray:
    yy, xx = np.mgrid[0:H, 0:W]
    return (xx + 0.5 - cx) ** 2 + (yy + 0.5 - cy) ** 2 <= r * r


def paint(rgb: np.ndarray, where: np.ndarray, colour: tuple[int, int, int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    noise = rng.normal(0, 8, (int(where.sum()), 3))
    rgb[where] = np.clip(np.array(colour, np.float64) + noise, 0, 255).astype(np.uint8)


def iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / (a | b).sum())


@pytest.fixture()
def scene() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A photo with an orange disk (missed by the mask) and a green square (kept)."""
    rgb = textured_background()
    missed = disk(100, 120, 45)
    square = np.zeros((H, W), bool)
    square[60:180, 200:290] = True
    paint(rgb, missed, (220, 120, 40), seed=1)
    paint(rgb, square, (60, 170, 70), seed=2)
    alpha = np.where(square, 255, 0).astype(np.uint8)
    return rgb, alpha, missed


@pytest.mark.parametrize(("space", "hold"), [("RGB", True), ("Lab", True), ("RGB", False)])
def test_one_add_click_recovers_a_missed_disk(scene, space: str, hold: bool, monkeypatch) -> None:
    """With the settings and with each alternative the clicks benchmark compares them to."""
    monkeypatch.setattr(regions, "COLOUR_SPACE", space)
    monkeypatch.setattr(regions, "HOLD_OTHER_SIDE", hold)
    rgb, alpha, missed = scene
    new, box = apply_click(rgb, alpha, (100, 120), add=True)
    added = (new >= 128) & (alpha < 128)
    assert iou(added, missed) >= 0.95
    assert box is not None
    # The square the mask had right is left exactly as it was.
    square = alpha == 255
    assert np.array_equal(new[square], alpha[square])


def test_add_click_on_a_disk_alone_in_the_photo() -> None:
    rgb = textured_background(seed=3)
    subject = disk(160, 110, 50)
    paint(rgb, subject, (230, 200, 60), seed=4)
    alpha = np.zeros((H, W), np.uint8)
    new, _ = apply_click(rgb, alpha, (150, 120), add=True)
    assert iou(new >= 128, subject) >= 0.95


def test_one_remove_click_removes_a_wrongly_kept_blob_and_nothing_else(scene) -> None:
    rgb, _, _ = scene
    # The mask keeps the square (right) and a blob of background (wrong).
    blob = disk(60, 50, 25)
    square = np.zeros((H, W), bool)
    square[60:180, 200:290] = True
    alpha = np.where(square | blob, 255, 0).astype(np.uint8)
    new, box = apply_click(rgb, alpha, (60, 50), add=False)
    assert (new[blob] < 128).mean() >= 0.95
    assert np.array_equal(new[square], alpha[square])
    assert np.array_equal(new[~blob], alpha[~blob])
    assert box is not None
    x0, y0, x1, y1 = box
    assert x0 >= 30 and x1 <= 91 and y0 >= 20 and y1 <= 81


def test_inputs_are_not_modified_and_the_result_is_a_new_array(scene) -> None:
    rgb, alpha, _ = scene
    rgb_before, alpha_before = rgb.copy(), alpha.copy()
    earlier = [(250.0, 100.0, True)]
    new, _ = apply_click(rgb, alpha, (100, 120), add=True, earlier=earlier)
    assert np.array_equal(rgb, rgb_before)
    assert np.array_equal(alpha, alpha_before)
    assert earlier == [(250.0, 100.0, True)]
    assert new is not alpha and not np.shares_memory(new, alpha)


@pytest.mark.parametrize("add", [True, False])
def test_the_box_covers_exactly_the_changed_pixels(scene, add: bool) -> None:
    rgb, alpha, missed = scene
    if not add:
        alpha = np.where(missed, 255, alpha).astype(np.uint8)
    new, box = apply_click(rgb, alpha, (100, 120), add=add)
    changed = new != alpha
    assert box is not None
    ys, xs = np.nonzero(changed)
    assert box == (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)


def test_nothing_changes_when_the_click_is_already_right(scene) -> None:
    rgb, alpha, _ = scene
    new, box = apply_click(rgb, alpha, (240, 120), add=True)  # inside the kept square
    assert box is None
    assert np.array_equal(new, alpha)


def test_the_same_inputs_give_the_same_output_bit_for_bit(scene) -> None:
    rgb, alpha, _ = scene
    earlier = [(250.0, 100.0, True), (20.0, 20.0, False)]
    first = apply_click(rgb, alpha, (100, 120), add=True, earlier=earlier)
    second = apply_click(rgb.copy(), alpha.copy(), (100, 120), add=True, earlier=earlier)
    assert np.array_equal(first[0], second[0])
    assert first[1] == second[1]


@pytest.mark.parametrize("add", [True, False])
def test_the_clicked_pixel_always_changes_even_in_a_flat_photo(add: bool) -> None:
    rgb = np.full((H, W, 3), 128, np.uint8)
    alpha = np.full((H, W), 0 if add else 255, np.uint8)
    new, box = apply_click(rgb, alpha, (17.6, 33.2), add=add)
    assert new[33, 17] == (255 if add else 0)
    assert box is not None
    x0, y0, x1, y1 = box
    assert x0 <= 17 < x1 and y0 <= 33 < y1


def test_earlier_clicks_are_hard_constraints(scene) -> None:
    rgb, alpha, _ = scene
    added, _ = apply_click(rgb, alpha, (100, 120), add=True)
    # A Remove click elsewhere on the same disk must keep the earlier Add's pixel.
    earlier = [(100.0, 120.0, True)]
    removed, _ = apply_click(rgb, added, (120, 130), add=False, earlier=earlier)
    assert removed[120, 100] >= 128
    assert removed[130, 120] == 0


def test_a_click_never_changes_a_separate_region_of_the_same_colour() -> None:
    rgb = textured_background(seed=5)
    left, right = disk(70, 120, 35), disk(250, 120, 35)
    paint(rgb, left, (220, 120, 40), seed=6)
    paint(rgb, right, (220, 120, 40), seed=7)
    alpha = np.zeros((H, W), np.uint8)
    new, _ = apply_click(rgb, alpha, (70, 120), add=True)
    assert iou(new >= 128, left) >= 0.95
    assert not (new[right] > 0).any()


def test_photo_and_mask_of_different_sizes_are_refused(scene) -> None:
    rgb, alpha, _ = scene
    with pytest.raises(ValueError):
        apply_click(rgb, alpha[:-1], (10, 10), add=True)


@pytest.mark.model
def test_an_add_click_on_a_real_photo_fills_a_hole_cut_into_u2netps_mask(u2netp_remover) -> None:
    import cv2

    from conftest import SAMPLE

    result = u2netp_remover.remove(SAMPLE)
    rgb, alpha = result.image.rgb, result.alpha
    subject = alpha >= 128
    # A hole in the middle of the subject, as if the network had missed it.
    depth = cv2.distanceTransform(subject.astype(np.uint8), cv2.DIST_L2, 5)
    cy, cx = np.unravel_index(int(np.argmax(depth)), depth.shape)
    yy, xx = np.mgrid[0 : alpha.shape[0], 0 : alpha.shape[1]]
    hole = (xx - cx) ** 2 + (yy - cy) ** 2 <= (0.6 * depth[cy, cx]) ** 2
    holed = np.where(hole, 0, alpha).astype(np.uint8)

    new, box = apply_click(rgb, holed, (cx + 0.5, cy + 0.5), add=True)
    assert (new[hole] >= 128).mean() >= 0.85  # 0.91 measured
    assert iou(new >= 128, subject) >= 0.96  # 0.98 measured
    assert iou(new >= 128, subject) > iou(holed >= 128, subject) + 0.05
    assert box is not None


def test_an_add_click_also_adds_the_other_missed_tips_of_the_clicked_colour(monkeypatch) -> None:
    """Leaves on a plant: the mask keeps a green body but misses three green tips on its
    outline (within ``BAND`` of it); one Add click on one tip also adds the other two
    (the spread), and no background. Without the spread the other two stay out."""
    rgb = textured_background()
    body = disk(160, 120, 60)
    tips = [disk(160 + 64 * np.cos(t), 120 + 64 * np.sin(t), 10) & ~body for t in (0.3, 2.2, 4.1)]
    plant = body | tips[0] | tips[1] | tips[2]
    paint(rgb, plant, (60, 170, 70), seed=3)
    alpha = np.where(body, 255, 0).astype(np.uint8)
    x, y = 160 + 68 * np.cos(0.3), 120 + 68 * np.sin(0.3)
    new, _ = apply_click(rgb, alpha, (x, y), add=True)
    for tip in tips:
        assert (new[tip] >= 128).mean() >= 0.8
    assert (new[~plant] >= 128).mean() <= 0.005
    monkeypatch.setattr(regions, "SPREAD", False)
    alone, _ = apply_click(rgb, alpha, (x, y), add=True)
    assert (alone[tips[0]] >= 128).mean() >= 0.8
    assert (alone[tips[1]] >= 128).mean() <= 0.2


def test_the_spread_moves_nothing_where_the_clicked_colour_is_on_both_sides(monkeypatch) -> None:
    """A green subject before a background that is half green: an Add click on a missed
    green tip adds that tip only; the green background along the outline stays out."""
    rgb = textured_background()
    ground = np.zeros((H, W), bool)
    ground[:, 200:] = True
    body = disk(150, 120, 50)
    tip = disk(150 - 58, 120, 12) & ~body
    paint(rgb, ground & ~body, (60, 170, 70), seed=4)
    paint(rgb, body | tip, (60, 170, 70), seed=5)
    alpha = np.where(body, 255, 0).astype(np.uint8)
    spread: list[np.ndarray] = []
    real = regions._spread

    def watch(*args, **kwargs):
        out = real(*args, **kwargs)
        spread.append(out != args[2])
        return out

    monkeypatch.setattr(regions, "_spread", watch)
    apply_click(rgb, alpha, (150 - 60, 120), add=True)
    assert spread and not spread[0].any()


def test_a_remove_spread_leaves_what_the_model_was_sure_is_the_subject() -> None:
    """A green subject with a dark red shadow along its right edge, beside a dark red
    background; the mask wrongly keeps two dark red bumps on the outline that the model
    was unsure of. A Remove click on one bump spreads to the other, but not to the
    shadow, which the model's own mask holds at 255."""
    rgb = textured_background()
    body = disk(150, 120, 60)
    red_ground = np.zeros((H, W), bool)
    red_ground[:, :70] = True
    rows = np.zeros((H, W), bool)
    rows[85:155] = True
    shadow = body & ~disk(140, 120, 60) & rows
    bumps = [disk(150, 55, 10) & ~body, disk(150, 185, 10) & ~body]
    paint(rgb, red_ground, (120, 30, 35), seed=7)
    paint(rgb, body & ~shadow, (60, 170, 70), seed=8)
    paint(rgb, shadow | bumps[0] | bumps[1], (120, 30, 35), seed=9)
    alpha = np.where(body | bumps[0] | bumps[1], 255, 0).astype(np.uint8)
    base = np.where(body, 255, np.where(bumps[0] | bumps[1], 150, 0)).astype(np.uint8)
    new, _ = apply_click(rgb, alpha, (150, 50), add=False, base=base)
    assert (new[bumps[1]] < 128).mean() >= 0.8
    assert (new[shadow] >= 128).mean() >= 0.95
    # Without the model's mask the colour model takes the shadow for the red ground.
    blind, _ = apply_click(rgb, alpha, (150, 50), add=False)
    assert (blind[shadow] >= 128).mean() < 0.9


def test_a_clicks_outline_follows_the_photo_at_full_size(monkeypatch) -> None:
    """A 26 px orange bar missed beside a green body on a 1280 px photo is about five
    pixels wide on the click's working grids: upsampled, its outline is a blur. With the
    model's edge refinement on the changed pixels the added bar matches the photo."""
    height, width = 960, 1280
    rgb = textured_background(0, height, width)
    body = np.zeros((height, width), bool)
    body[300:700, 700:1000] = True
    bar = np.zeros((height, width), bool)
    bar[487:513, 380:700] = True
    paint(rgb, body, (60, 170, 70), seed=1)
    paint(rgb, bar, (220, 120, 40), seed=2)
    alpha = np.where(body, 255, 0).astype(np.uint8)
    truth = (body | bar).astype(np.float64)
    near = np.s_[440:560, 340:740]

    def error(refine: bool) -> tuple[float, float, np.ndarray]:
        monkeypatch.setattr(regions, "REFINE", refine)
        new, _ = apply_click(rgb, alpha, (500, 500), add=True)
        added = (new >= 128) & ~body
        sad = float(np.abs(new[near] / 255.0 - truth[near]).sum())
        return iou(added, bar), sad, new

    plain_iou, plain_sad, _ = error(False)
    refined_iou, refined_sad, new = error(True)
    assert refined_iou >= 0.95 > plain_iou
    assert refined_sad <= 0.5 * plain_sad
    # Only the clicked bar's surroundings change, and an Add lowers nothing.
    changed = new != alpha
    assert not changed[:440].any() and not changed[560:].any()
    assert (new >= alpha).all()


def test_the_spread_adds_needles_three_pixels_wide_on_an_800_pixel_photo(monkeypatch) -> None:
    """24 green needles 3 px wide missed around a green body on an 800 x 600 photo: one
    Add click on one needle adds nearly all of them, because the spread sees the photo at
    its own pixels. On a grid of 320 (what it used) a needle is about one cell wide and
    less than two thirds of them come in."""
    height, width = 600, 800
    rgb = textured_background(0, height, width)
    yy, xx = np.mgrid[0:height, 0:width]
    body = (xx + 0.5 - 400) ** 2 + (yy + 0.5 - 300) ** 2 <= 150**2
    lines = np.zeros((height, width), np.uint8)
    for t in np.linspace(0, 2 * np.pi, 24, endpoint=False):
        start = (int(400 + 148 * np.cos(t)), int(300 + 148 * np.sin(t)))
        end = (int(400 + 185 * np.cos(t)), int(300 + 185 * np.sin(t)))
        cv2.line(lines, start, end, 1, 3)
    needles = lines.astype(bool) & ~body
    plant = body | needles
    paint(rgb, plant, (60, 170, 70), seed=3)
    alpha = np.where(body, 255, 0).astype(np.uint8)

    def needles_added(side: int) -> tuple[float, int]:
        monkeypatch.setattr(regions, "SPREAD_SIDE", side)
        new, _ = apply_click(rgb, alpha, (575.5, 300.5), add=True)
        got = new >= 128
        return float((got & needles).sum() / needles.sum()), int((got & ~plant).sum())

    share, wrong = needles_added(regions.SPREAD_SIDE)
    assert width <= regions.SPREAD_SIDE
    assert share >= 0.9
    assert wrong <= 0.02 * needles.sum()
    coarse_share, _ = needles_added(320)
    assert coarse_share < 0.7


def test_the_spread_moves_the_clicked_pixels_too() -> None:
    """Where a click's own region stops short (here: none at all), the spread still takes
    the pixels around the click with the rest of their colour; it used to leave the
    click's disk out, a hole ringed by the pixels it moved."""
    rgb = textured_background()
    body = disk(160, 120, 60)
    tip = disk(160 + 64, 120, 12) & ~body
    paint(rgb, body | tip, (60, 170, 70), seed=3)
    alpha = np.where(body, 255, 0).astype(np.uint8)
    x, y = 160 + 70, 120
    new = regions._spread(rgb, alpha, alpha.copy(), [(x, y, True)], 128)
    around = disk(x, y, 3) & tip
    assert around.any()
    assert (new[around] >= 128).all()
    assert (new[tip] >= 128).mean() >= 0.8
