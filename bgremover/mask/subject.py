"""What of an alpha is the subject, for crop and canvas: its box, and the leftovers of
the background that neither widen the box nor show (see :func:`find_subject`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

#: Alpha (0-255) above which a pixel shows at all: noise of a few levels is nothing.
SUBJECT_THRESHOLD = 10
#: The subject's parts are the connected regions of alpha that shows. A part belongs to the
#: subject when it holds at least this share of the largest part's alpha mass (the sum of
#: its alpha), or lies inside the box of the parts that do and is solid somewhere (alpha
#: at SOLID or more); any other part is a leftover of the background (a fleck, the faint
#: remnant of a sign behind a person).
PART_SHARE = 0.05
#: Alpha at or above which a pixel is more subject than background.
SOLID = 128
#: The long side, in pixels, at which the parts are found (the box itself is exact): a
#: part smaller than a pixel there decides no framing.
SUBJECT_WORK = 1024


@dataclass(frozen=True)
class Subject:
    """What of an alpha is the subject, for crop and canvas (see :func:`find_subject`)."""

    #: x0, y0, x1, y1 (exclusive ends) in the alpha's pixels; None when nothing shows.
    box: tuple[int, int, int, int] | None
    #: The pixels that show but are no part of the subject (the alpha's size); None when
    #: there are none. A crop clears them, so what the box leaves out does not show.
    leftover: np.ndarray | None = None


def _bounds(mask: np.ndarray) -> tuple[int, int, int, int] | None:
    rows = np.flatnonzero(mask.any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero(mask[rows[0] : rows[-1] + 1].any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def find_subject(alpha: np.ndarray) -> Subject:
    """The subject's box and its leftovers, by alpha mass and connectivity.

    The parts are the connected regions of alpha above SUBJECT_THRESHOLD, each weighed by
    its alpha mass. The subject is the parts that hold PART_SHARE of the largest one's
    mass, and the solid ones inside their box (a detached piece): a soft edge, hair or a
    faint part stays with the part it touches, however faint. The other parts are
    leftovers: they do not widen the box and (as :func:`placed_alpha` clears them) do not
    show on a cropped output.
    """
    visible = alpha > SUBJECT_THRESHOLD
    plain = _bounds(visible)
    if plain is None:
        return Subject(None)
    height, width = alpha.shape
    factor = min(1.0, SUBJECT_WORK / max(width, height))
    small = alpha
    if factor < 1.0:
        size = (max(1, round(width * factor)), max(1, round(height * factor)))
        small = cv2.resize(alpha, size, interpolation=cv2.INTER_AREA)
    shows = (small > SUBJECT_THRESHOLD).view(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(shows, connectivity=8)
    if count <= 2:  # one part, or one smaller than a working pixel: all of it
        return Subject(plain)
    mass = np.bincount(labels.ravel(), weights=small.ravel(), minlength=count)
    mass[0] = 0.0
    big = mass >= PART_SHARE * mass.max()
    big[0] = False
    x, y = stats[:, cv2.CC_STAT_LEFT], stats[:, cv2.CC_STAT_TOP]
    x1, y1 = x + stats[:, cv2.CC_STAT_WIDTH], y + stats[:, cv2.CC_STAT_HEIGHT]
    kx0, ky0, kx1, ky1 = x[big].min(), y[big].min(), x1[big].max(), y1[big].max()
    solid = np.bincount(labels[small >= SOLID], minlength=count) > 0
    kept = big | (solid & (x >= kx0) & (y >= ky0) & (x1 <= kx1) & (y1 <= ky1))
    kept[0] = True  # where nothing shows: no leftover
    if kept.all():
        return Subject(plain)  # every part is the subject (most photos)
    parts = kept[labels]
    parts &= shows.view(bool)
    stray = ~kept[labels]
    # At full size, where the answer lies: the box, exact; the leftovers with one working
    # pixel more (a stray part's rim at full size lies in it).
    box = _bounds_at(visible, parts, (int(kx0), int(ky0), int(kx1), int(ky1)))
    grown = cv2.dilate(stray.view(np.uint8), np.ones((3, 3), np.uint8)).view(bool)
    around = _bounds(grown)
    assert around is not None
    win = _window(around, grown.shape, alpha.shape)
    rows, cols = slice(win[1], win[3]), slice(win[0], win[2])
    leftover = np.zeros(alpha.shape, bool)
    leftover[rows, cols] = _upsized(grown, win, alpha.shape) & visible[rows, cols]
    found = leftover if leftover.any() else None
    if box is None:  # the parts vanished at full size (rounding): the plain box
        return Subject(plain, found)
    return Subject(box, found)


def _window(
    box: tuple[int, int, int, int], small: tuple[int, ...], full: tuple[int, ...]
) -> tuple[int, int, int, int]:
    """A box at the working size (``small``: its shape) at full size, one working pixel
    wider on each side (the same box when the sizes are one)."""
    if small == full:
        return box
    (sh, sw), (height, width) = small[:2], full[:2]
    x0, y0, x1, y1 = box
    return (
        max(0, math.floor((x0 - 1) * width / sw)),
        max(0, math.floor((y0 - 1) * height / sh)),
        min(width, math.ceil((x1 + 1) * width / sw)),
        min(height, math.ceil((y1 + 1) * height / sh)),
    )


def _upsized(
    mask: np.ndarray, window: tuple[int, int, int, int], full: tuple[int, ...]
) -> np.ndarray:
    """The full-size pixels ``window`` of a working-size mask, each the working pixel it
    lies in."""
    x0, y0, x1, y1 = window
    (sh, sw), (height, width) = mask.shape[:2], full[:2]
    if (sh, sw) == (height, width):
        return mask[y0:y1, x0:x1]
    rows = np.minimum(np.arange(y0, y1) * sh // height, sh - 1)
    cols = np.minimum(np.arange(x0, x1) * sw // width, sw - 1)
    return mask[rows[:, None], cols[None, :]]


def _bounds_at(
    visible: np.ndarray, keep: np.ndarray, window: tuple[int, int, int, int]
) -> tuple[int, int, int, int] | None:
    """The full-size box of the pixels that show where the working-size ``keep`` is set,
    looked for in the full-size pixels of its ``window``."""
    x0, y0, x1, y1 = _window(window, keep.shape, visible.shape)
    found = _bounds(visible[y0:y1, x0:x1] & _upsized(keep, (x0, y0, x1, y1), visible.shape))
    if found is None:
        return None
    return found[0] + x0, found[1] + y0, found[2] + x0, found[3] + y0


def visible_box(alpha: np.ndarray) -> tuple[int, int, int, int] | None:
    """The box of all the alpha that shows (above SUBJECT_THRESHOLD), leftovers and all:
    what is not transparent on an output that is not cropped."""
    return _bounds(alpha > SUBJECT_THRESHOLD)


def subject_box(alpha: np.ndarray) -> tuple[int, int, int, int] | None:
    """The subject's bounding box (x0, y0, x1, y1; exclusive ends): see :func:`find_subject`."""
    return find_subject(alpha).box
