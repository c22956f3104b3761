"""The places "Go to the biggest difference" shows: found where the masks differ most
along their outlines, largest first, at any photo size."""

from __future__ import annotations

import numpy as np
import pytest

from bgremover.compare.report import mask_difference
from bgremover.compare.spots import difference_spots


def disc(h: int, w: int, cy: float, cx: float, r: float) -> np.ndarray:
    yy, xx = np.ogrid[:h, :w]
    return (((yy - cy) ** 2 + (xx - cx) ** 2) <= r * r).astype(np.uint8) * 255


def inside(box: tuple[int, int, int, int], x: float, y: float) -> bool:
    x0, y0, x1, y1 = box
    return x0 <= x < x1 and y0 <= y < y1


@pytest.mark.parametrize("scale", [1, 4])  # a 1024-px photo and a 4096-px one
def test_the_largest_difference_comes_first_then_the_next(scale: int) -> None:
    h, w = 768 * scale, 1024 * scale
    a = disc(h, w, h / 2, w / 2, 300 * scale)
    b = a.copy()
    # B loses a large bite on the disc's right edge and a small one at its top.
    b[disc(h, w, h / 2, w / 2 + 300 * scale, 60 * scale) > 0] = 0
    b[disc(h, w, h / 2 - 300 * scale, w / 2, 20 * scale) > 0] = 0
    spots = difference_spots(mask_difference(a, b), a, b)
    assert len(spots) == 2, spots
    first, second = spots
    assert inside(first.box, w / 2 + 290 * scale, h / 2)  # the large bite
    assert inside(second.box, w / 2, h / 2 - 290 * scale)  # then the small one
    assert first.mean_abs > 0.1 and second.mean_abs > 0.01
    for spot in spots:  # boxes in the photo's pixels, a fraction of its size
        x0, y0, x1, y1 = spot.box
        assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
        assert (x1 - x0) <= w // 4


def test_masks_that_agree_have_no_spot() -> None:
    a = disc(300, 400, 150, 200, 100)
    assert difference_spots(mask_difference(a, a), a, a) == []


def test_a_difference_away_from_both_outlines_is_not_a_spot() -> None:
    # Faint speckle inside the subject, far from either outline, is not what the button
    # is for: the edges are.
    a = disc(400, 400, 200, 200, 150)
    b = a.copy()
    b[195:205, 195:205] = 250
    assert difference_spots(mask_difference(a, b), a, b) == []
