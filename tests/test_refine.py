"""Edge refinement and colour decontamination."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from PIL import Image

from bgremover import ComposeOptions, Remover
from bgremover.export.compose import compose
from bgremover.mask.metrics import mean_abs_diff
from bgremover.mask.refine import _ramp_trust, estimate_foreground, refine_alpha

from conftest import DATA


def soft_disc(size: int = 120, blur: int = 12) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A red disc on a blue background, its true alpha, and a blurred 'network' mask."""
    yy, xx = np.mgrid[0:size, 0:size]
    truth = ((yy - size / 2) ** 2 + (xx - size / 2) ** 2 <= (size / 3) ** 2).astype(np.float64)
    rgb = np.zeros((size, size, 3), np.uint8)
    rgb[..., 0] = (truth * 220).astype(np.uint8)
    rgb[..., 2] = ((1 - truth) * 200).astype(np.uint8)
    soft = cv2.GaussianBlur(truth, (0, 0), blur)
    return rgb, (truth * 255).astype(np.uint8), (soft * 255).astype(np.uint8)


def test_refine_recovers_a_sharp_edge_from_a_blurred_mask() -> None:
    rgb, truth, soft = soft_disc(blur=2)  # an outline's ramp: narrower than the band
    before = mean_abs_diff(soft, truth)
    refined = refine_alpha(rgb, soft)
    assert refined.shape == truth.shape and refined.dtype == np.uint8
    assert mean_abs_diff(refined, truth) < 0.5 * before
    # A band wide enough for a very blurred mask recovers its edge almost exactly too.
    rgb, truth, soft = soft_disc(blur=12)
    before = mean_abs_diff(soft, truth)
    assert mean_abs_diff(refine_alpha(rgb, soft, band=0.2), truth) < 0.05 * before


def test_refine_stays_out_where_the_networks_ramp_is_broad() -> None:
    """A ramp wider than twice the band is no outline but a broad uncertainty: however
    clear the colours, the network's values stay (only the sure parts are snapped)."""
    rgb, _, soft = soft_disc(blur=12)  # a ramp of about 20 px; the band is 2.4 px each side
    refined = refine_alpha(rgb, soft).astype(int)
    unsure = (soft > 2) & (soft < 243)
    assert unsure.sum() > 2000
    assert np.abs(refined[unsure] - soft[unsure]).max() <= 1
    assert (refined[soft >= 243] == 255).all() and (refined[soft <= 2] == 0).all()


def test_refine_leaves_uncertain_pixels_far_from_the_outline() -> None:
    rgb, _, soft = soft_disc(blur=2)
    mask = soft.copy()
    mask[5:15, 5:15] = 40  # a faint blob far from the subject's outline
    refined = refine_alpha(rgb, mask)
    assert (refined[5:15, 5:15] == 40).all()


def test_the_ring_of_re_estimated_pixels_has_no_edge_of_its_own() -> None:
    """Where the colour model and the network disagree across the ring's edge (here a
    faint rim the network keeps at 0.4 around a disc, on the background's own colour),
    the colour model's weight fades out instead of stopping: no line where the ring
    ends (at stepped lines across a shoulder or a wall, #14)."""
    size, radius, rim = 400, 100, 12  # the band: 0.02 x 400 = 8 px each side
    yy, xx = np.mgrid[0:size, 0:size]
    dist = np.hypot(yy - size / 2, xx - size / 2)
    rgb = np.zeros((size, size, 3), np.uint8)
    rgb[dist <= radius] = (220, 0, 0)
    rgb[dist > radius] = (0, 0, 200)
    mask = np.zeros((size, size), np.uint8)
    mask[dist <= radius + rim] = 102  # a narrow ramp, so the ramp's trust is 1
    mask[dist <= radius] = 255
    refined = refine_alpha(rgb, mask).astype(int)
    row = refined[size // 2, size // 2 + radius + 1 : size // 2 + radius + rim]
    assert row[0] < 20  # near the outline the colours decide: background
    assert row[-1] == 102  # beyond the ring the network's value stays
    assert np.abs(np.diff(row)).max() <= 40  # and between them no step


def test_refine_leaves_colours_that_are_no_mix_of_the_two_sides() -> None:
    """A pixel of the outline whose colour lies far off the line from the foreground's
    colour to the background's (green between red and blue: a shadow, a third object)
    is no mix of them: it keeps the network's value, while the rest of the outline is
    re-estimated from its colours."""
    size = 100
    truth = np.zeros((size, size), np.uint8)
    truth[:, : size // 2] = 255
    rgb = np.where(truth[..., None] > 0, (220, 0, 0), (0, 0, 200)).astype(np.uint8)
    mask = cv2.GaussianBlur(truth.astype(np.float64), (0, 0), 1.5).round().astype(np.uint8)
    unsure = (mask > 2) & (mask < 243)
    green = np.zeros_like(unsure)
    green[40:60] = True
    green &= unsure  # only the outline: the two sides keep their own colours
    rgb[green] = (0, 200, 0)
    patch, line = green, ~green & unsure
    assert patch.sum() >= 40 and line.sum() >= 40
    refined = refine_alpha(rgb, mask).astype(int)
    assert np.abs(refined[patch] - mask[patch]).max() <= 3
    error = np.abs(refined[line] - truth[line].astype(int)).mean()
    assert error < 0.5 * np.abs(mask[line].astype(int) - truth[line].astype(int)).mean()
    # Without the check the colour line would have re-estimated the green pixels too.
    unchecked = refine_alpha(rgb, mask, residual=None).astype(int)
    assert np.abs(unchecked[patch] - mask[patch]).max() >= 30


def test_refine_edge_cases() -> None:
    rgb = np.full((10, 10, 3), 128, np.uint8)
    assert (refine_alpha(rgb, np.zeros((10, 10), np.uint8)) == 0).all()
    assert (refine_alpha(rgb, np.full((10, 10), 255, np.uint8)) == 255).all()
    flat = np.full((10, 10), 128, np.uint8)  # only "unknown": kept as is
    assert (refine_alpha(rgb, flat) == 128).all()
    with pytest.raises(ValueError):
        refine_alpha(rgb, np.zeros((5, 5), np.uint8))


def test_estimate_foreground_removes_background_tint() -> None:
    """A see-through strip (half red subject, half blue background) gets redder, less blue."""
    rgb = np.zeros((100, 200, 3), np.uint8)
    rgb[:, :90] = [220, 0, 0]
    rgb[:, 110:] = [0, 0, 200]
    rgb[:, 90:110] = [110, 0, 100]  # what the camera saw: a 50/50 mix
    alpha = np.zeros((100, 200), np.uint8)
    alpha[:, :90] = 255
    alpha[:, 90:110] = 128
    fg = estimate_foreground(rgb, alpha)
    strip = fg[:, 90:110].reshape(-1, 3).astype(int)
    assert strip[:, 0].mean() > 110 + 30 and strip[:, 2].mean() < 100 - 30
    assert (fg[:, :90] == rgb[:, :90]).all()  # opaque pixels keep their colour


def test_decontaminate_option_changes_only_colour() -> None:
    rgb, _, soft = soft_disc()
    plain = np.asarray(compose(rgb, soft, ComposeOptions()))
    clean = np.asarray(compose(rgb, soft, ComposeOptions(decontaminate=True)))
    assert (plain[..., 3] == clean[..., 3]).all()


@pytest.mark.model
def test_refined_alpha_differs_from_mask_only_at_edges(u2netp_path) -> None:
    photo = DATA / "skimage_chelsea.png"
    refined = Remover("u2netp").remove(photo)
    plain = Remover("u2netp", refine=False).remove(photo)
    assert (plain.alpha == plain.mask).all()
    assert (refined.mask == plain.mask).all()  # the network's mask is untouched
    # Confident pixels snap to exactly opaque / transparent; the rest is re-estimated.
    assert (refined.alpha[refined.mask >= 243] == 255).all()
    assert (refined.alpha[refined.mask <= 2] == 0).all()
    band = (refined.mask > 2) & (refined.mask < 243)
    # The rest is re-estimated along the cat's outline, where the network's ramp is narrow;
    # the blanket, which the network half takes for the cat (a broad ramp), keeps its values.
    trust = _ramp_trust(refined.mask, 0.02)
    height, width = refined.mask.shape
    trust = cv2.resize(trust, (width, height), interpolation=cv2.INTER_NEAREST)
    outline, broad = band & (trust == 1), band & (trust == 0)
    assert outline.sum() > 1000 and broad.sum() > 1000
    assert (refined.alpha[outline] != refined.mask[outline]).mean() > 0.5
    kept = np.abs(refined.alpha[broad].astype(int) - refined.mask[broad])
    assert (kept <= 1).mean() > 0.99  # bilinear trust: a pixel next to a fade may move
    assert refined.timings["refine"] > 0
    Image.fromarray(refined.alpha)  # a valid 8-bit mask


def test_a_window_is_refined_as_the_whole_photo_refines_it(u2netp_path) -> None:
    """A touch-up refines only what a click changed: each pixel of the window gets what
    refining the whole photo gives it, bit for bit, at the photo's edges too."""
    photo = DATA / "skimage_chelsea.png"
    result = Remover("u2netp", refine=False).remove(photo)
    rgb, mask = result.image.rgb, result.mask
    whole = refine_alpha(rgb, mask)
    height, width = mask.shape
    for window in ((0, 0, width, height), (37, 51, 290, 203), (width - 5, 0, width, height),
                   (0, height - 1, width, height), (10, 10, 10, 40)):  # fmt: skip
        x0, y0, x1, y1 = window
        part = refine_alpha(rgb, mask, window=window)
        assert part.shape == (y1 - y0, x1 - x0)
        assert np.array_equal(part, whole[y0:y1, x0:x1]), window
    with pytest.raises(ValueError, match="not inside"):
        refine_alpha(rgb, mask, window=(0, 0, width + 1, height))
