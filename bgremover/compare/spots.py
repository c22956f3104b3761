"""Where two masks differ most along their outlines: the places the app's "Go to the
biggest difference" shows, largest first.

A difference that matters to people is at the edges (hair, fur, a sleeve): the pixels
within the edge band of either mask's outline. Each spot is the square window, a
fraction of the photo's long side, whose band pixels hold the largest summed |Δα|;
the next spot is the largest of what no spot has shown, in a window that is mostly
elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from ..mask.metrics import edge_band

#: The spots are found on a copy of the difference at most this long a side: the same
#: places at any photo size, in tens of milliseconds.
WORK_SIDE = 1024
#: A spot's window, as a fraction of the photo's long side.
WINDOW_FRACTION = 1 / 8
#: Windows whose band pixels differ by less than this on average are not spots.
MIN_MEAN = 2 / 255


@dataclass(frozen=True)
class Spot:
    """One place where A and B differ: a box in the photo's pixels and how much."""

    #: x0, y0, x1, y1 in the photo's pixels.
    box: tuple[int, int, int, int]
    #: The mean |Δα| (0..1) of the box's edge-band pixels.
    mean_abs: float


def difference_spots(
    diff: np.ndarray, mask_a: np.ndarray, mask_b: np.ndarray, count: int = 8
) -> list[Spot]:
    """Up to ``count`` spots, largest difference first, that do not overlap.

    ``diff`` is |Δα| as uint8 (255 = 1.0) and ``mask_a``/``mask_b`` the two masks, all of
    the photo's size (H, W)."""
    h, w = diff.shape
    shrink = min(1.0, WORK_SIDE / max(h, w))
    size = (max(1, round(w * shrink)), max(1, round(h * shrink)))

    def small(a: np.ndarray) -> np.ndarray:
        return a if shrink == 1.0 else cv2.resize(a, size, interpolation=cv2.INTER_AREA)

    a, b = small(mask_a), small(mask_b)
    band = (edge_band(a) | edge_band(b)).astype(np.float32)
    weight = small(diff).astype(np.float32) / 255 * band
    window = max(8, round(max(size) * WINDOW_FRACTION))
    kernel = (window, window)
    # Band pixels of the window centred on each pixel.
    pixels = cv2.boxFilter(band, -1, kernel, normalize=False, borderType=cv2.BORDER_CONSTANT)
    half = window // 2
    # Each connected difference: a spot covers those its window touches (a bite larger
    # than the window is one place, not two), up to a window more on each side.
    _n, labels, stats, _c = cv2.connectedComponentsWithStats(
        (weight >= MIN_MEAN).astype(np.uint8), connectivity=8
    )
    taken: list[tuple[int, int, int, int]] = []
    spots: list[Spot] = []
    for _ in range(3 * count):  # a few windows are passed over (below)
        if len(spots) == count:
            break
        # Summed |Δα| of the window centred on each pixel, of what no spot has shown.
        total = cv2.boxFilter(weight, -1, kernel, normalize=False, borderType=cv2.BORDER_CONSTANT)
        y, x = np.unravel_index(int(np.argmax(total)), total.shape)
        if total[y, x] <= 1e-6:
            break
        mean = float(total[y, x] / max(pixels[y, x], 1.0))
        x0, y0 = max(0, x - half), max(0, y - half)
        x1, y1 = min(size[0], x0 + window), min(size[1], y0 + window)
        for label in np.unique(labels[y0:y1, x0:x1]):
            if label:
                left, top, width, height = stats[label, :4]
                x0 = max(min(x0, left), x - half - window, 0)
                y0 = max(min(y0, top), y - half - window, 0)
                x1 = min(max(x1, left + width), x + half + window, size[0])
                y1 = min(max(y1, top + height), y + half + window, size[1])
        weight[y0:y1, x0:x1] = 0
        # What is left of a place already shown (beside its window) is not another place.
        if mean < MIN_MEAN or any(_overlap((x0, y0, x1, y1), box) > 0.25 for box in taken):
            continue
        taken.append((x0, y0, x1, y1))
        box = (
            int(x0 / shrink),
            int(y0 / shrink),
            min(w, round(x1 / shrink)),
            min(h, round(y1 / shrink)),
        )
        spots.append(Spot(box, mean))
    return spots


def _overlap(box: tuple[int, int, int, int], other: tuple[int, int, int, int]) -> float:
    """The fraction of ``box``'s area inside ``other``."""
    w = min(box[2], other[2]) - max(box[0], other[0])
    h = min(box[3], other[3]) - max(box[1], other[1])
    area = (box[2] - box[0]) * (box[3] - box[1])
    return max(0, w) * max(0, h) / max(area, 1)
