"""Add / Remove clicks with a learned click model: the click selects the object under it.

The classical click (regions.py) finds the clicked region by colour alone. A click
model (a Segment Anything decoder, :mod:`bgremover.network.prompt`) knows objects: given
points it returns the object they select. :func:`learned_click` asks it for *the thing
the click is about*: for an Add click, what should be added (the click is its include
point, the Remove clicks since the last restart its exclude points); for a Remove
click, what should go (the click includes, the Add clicks exclude). Then:

1. the proposal is the connected part of the model's mask (logits > 0, in the model's
   working frame) that holds the click; nothing outside it changes, so a click never
   touches what it was not aimed at;
2. inside that part the mask moves towards 255 (Add) or 0 (Remove) by the model's own
   confidence (the logits upsampled to the photo's size, through a sigmoid), so the
   outline is the model's, soft over about one working pixel, at any photo size;
3. the changed pixels get the edge refinement the model's mask gets, held to the same
   rule (:func:`bgremover.touchup.regions.refine_change`).

When the model does not select the clicked pixel at all, selects almost the whole
photo (it found no object there), or a Remove would take away a place an Add click
asked to keep, ``None`` is returned and the caller uses the classical click.

The caller (the ``add`` / ``remove`` tools) also makes the classical click's result and
changes only what both results change (:func:`agreed`): the model is strong where the
network dropped a whole object and weak on fine structure (leaves, hair), the colour-based
click the other way round, and each does damage the other does not. A second click of the
same sign on what the model proposed for the click before it (:func:`proposed`) keeps the
better edge of the two whole instead. The box tool keeps whichever outline sits better on
the photo's edges (:func:`sharper`). Measured in docs/decisions/0010 and 0014.

What must stay true (as for the classical click): an Add never lowers a pixel and a
Remove never raises one; the clicked pixel becomes 255 / 0; nothing outside the
proposal's part changes; the inputs are never modified; the same clicks give the same
mask (the model is deterministic).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import cv2
import numpy as np

from .regions import Box, changed_box, changes_nothing, refine_change

__all__ = [
    "MAX_SHARE",
    "Prompter",
    "agreed",
    "box_mask",
    "confirms",
    "learned_click",
    "proposed",
    "sharper",
    "whole",
]

#: A proposal over more than this share of the photo is not an object: fall back.
MAX_SHARE = 0.9
#: Working-frame pixels of margin around the proposal for upsampling its logits.
_PAD = 2


class Prompter(Protocol):
    """The click model bound to the photo being edited (its embedding made once)."""

    def __call__(
        self,
        points: Sequence[tuple[float, float, int]],
        box: tuple[float, float, float, float] | None = None,
    ) -> np.ndarray:
        """The mask's logits (float32) in the model's working frame — the photo scaled
        to a fixed long side — for points (x, y, label: 1 include, 0 exclude) and an
        optional box (x0, y0, x1, y1), both in photo pixels."""
        ...


def _sigmoid(logits: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(logits, -30, 30))), np.float32)


def _at_photo(
    frame: np.ndarray, box: Box, scale: tuple[float, float], interpolation: int
) -> np.ndarray:
    """``frame`` (the working frame's pixels) sampled at the centres of the photo pixels
    of ``box``; ``scale`` is working-frame pixels per photo pixel (x, y)."""
    x0, y0, x1, y1 = box
    sx, sy = scale
    gx = ((np.arange(x0, x1, dtype=np.float32) + 0.5) * sx - 0.5)[None, :]
    gy = ((np.arange(y0, y1, dtype=np.float32) + 0.5) * sy - 0.5)[:, None]
    map_x = np.broadcast_to(gx, (y1 - y0, x1 - x0)).astype(np.float32)
    map_y = np.broadcast_to(gy, (y1 - y0, x1 - x0)).astype(np.float32)
    return np.asarray(
        cv2.remap(frame, map_x, map_y, interpolation, borderMode=cv2.BORDER_REPLICATE)
    )


def box_mask(
    shape: tuple[int, int],
    corners: tuple[float, float, float, float],
    crop: Box,
    prompt: Prompter,
) -> np.ndarray:
    """The click model's mask (uint8) of the object inside ``corners`` (a box drawn by the
    user, photo pixels), over the photo pixels of ``crop``; ``shape`` is the photo's."""
    logits = prompt((), box=corners)
    fh, fw = logits.shape
    scale = (fw / shape[1], fh / shape[0])
    return np.rint(_sigmoid(_at_photo(logits, crop, scale, cv2.INTER_LINEAR)) * 255).astype(
        np.uint8
    )


def _points(
    earlier: Sequence[tuple[float, float, bool]], point: tuple[float, float], add: bool
) -> list[tuple[float, float, int]]:
    """The prompt for "what this click is about": the click includes, the earlier clicks
    of the other sign exclude. Earlier clicks of its own sign are left out: they were
    applied already, and with them the decoder selects everything they and this one
    touch (two clicks on a cap's crown brought in the flagpole and a star above it)."""
    return [(point[0], point[1], 1)] + [(x, y, 0) for x, y, a in earlier if a != add]


def _framer(
    frame_shape: tuple[int, ...], photo_shape: tuple[int, int]
) -> Callable[[float, float], tuple[int, int]]:
    """Photo pixel (x, y) -> its (row, column) in the model's working frame."""
    fh, fw = frame_shape[:2]
    sx, sy = fw / photo_shape[1], fh / photo_shape[0]
    return lambda x, y: (min(fh - 1, int(y * sy)), min(fw - 1, int(x * sx)))


def _part(selected: np.ndarray, at: tuple[int, int]) -> np.ndarray:
    """The 8-connected part of ``selected`` (uint8, working frame) that holds ``at``."""
    _, labels = cv2.connectedComponents(selected, connectivity=8)
    return np.asarray(labels == labels[at])


def proposed(
    shape: tuple[int, int],
    click: tuple[float, float, bool],
    earlier: Sequence[tuple[float, float, bool]],
    point: tuple[float, float],
    prompt: Prompter,
) -> bool:
    """Whether the click model's part for ``click`` (x, y, add; with ``earlier``, the
    clicks before it, as :func:`learned_click` asks) holds ``point``: what the model
    proposed for that click, whether or not the click then took it. ``shape`` is the
    photo's (height, width)."""
    x, y, add = click
    logits = prompt(_points(earlier, (x, y), add))
    frame = _framer(logits.shape, shape)
    selected = (logits > 0).astype(np.uint8)
    if not selected[frame(x, y)]:
        return False
    return bool(_part(selected, frame(x, y))[frame(*point)])


def learned_click(
    rgb: np.ndarray,
    alpha: np.ndarray,
    point: tuple[float, float],
    add: bool,
    earlier: Sequence[tuple[float, float, bool]],
    prompt: Prompter,
) -> tuple[np.ndarray, Box | None] | None:
    """The mask after one click with the click model; None when the model finds no
    object at the click (the caller then uses the classical click).

    ``earlier`` are the clicks since the last restart (x, y, add), oldest first. Returns
    the new mask (a new array) and the box of the pixels that changed (None: none)."""
    height, width = alpha.shape
    x, y = float(point[0]), float(point[1])
    px = min(width - 1, max(0, int(np.floor(x))))
    py = min(height - 1, max(0, int(np.floor(y))))
    logits = prompt(_points(earlier, (x, y), add))
    fh, fw = logits.shape
    sx, sy = fw / width, fh / height
    frame = _framer(logits.shape, (height, width))

    selected = (logits > 0).astype(np.uint8)
    if not selected[frame(x, y)] or selected.mean() > MAX_SHARE:
        return None
    # What a Remove takes away never holds a place the user clicked to keep (the model
    # grouped the leftover with the subject): that click is the classical one.
    if not add and any(selected[frame(ax, ay)] for ax, ay, a in earlier if a):
        return None
    part = _part(selected, frame(x, y))
    ys, xs = np.nonzero(part)
    f0x, f0y = max(0, int(xs.min()) - _PAD), max(0, int(ys.min()) - _PAD)
    f1x, f1y = min(fw, int(xs.max()) + 1 + _PAD), min(fh, int(ys.max()) + 1 + _PAD)
    # The part's box in photo pixels, and the logits there at the photo's size.
    x0, y0 = int(np.floor(f0x / sx)), int(np.floor(f0y / sy))
    x1, y1 = min(width, int(np.ceil(f1x / sx))), min(height, int(np.ceil(f1y / sy)))
    up = _at_photo(logits, (x0, y0, x1, y1), (sx, sy), cv2.INTER_LINEAR)
    # Only the part's own pixels (and the soft rim, one working pixel, the logits give
    # them) may change.
    rim = cv2.dilate(part.astype(np.uint8), np.ones((3, 3), np.uint8))
    inside = _at_photo(rim, (x0, y0, x1, y1), (sx, sy), cv2.INTER_NEAREST) > 0
    weight = np.where(inside, _sigmoid(up), 0.0)
    before = np.asarray(alpha, np.uint8)
    new = before.copy()
    region = new[y0:y1, x0:x1].astype(np.float32)
    target = 255.0 if add else 0.0
    moved = np.rint(region + (target - region) * weight).astype(np.uint8)
    new[y0:y1, x0:x1] = (
        np.maximum(moved, before[y0:y1, x0:x1]) if add else np.minimum(moved, before[y0:y1, x0:x1])
    )
    refine_change(np.ascontiguousarray(rgb, np.uint8), before, new, add)
    new[py, px] = 255 if add else 0
    # Nothing outside the part's box changed (the refinement only touches changed pixels).
    return new, changed_box(before, new, (x0, y0, x1, y1))


#: :func:`sharper` looks at the changed box with at most this many pixels a side.
EDGE_SIDE = 1024


def sharper(
    rgb: np.ndarray,
    before: np.ndarray,
    first: tuple[np.ndarray, Box | None],
    second: tuple[np.ndarray, Box | None],
) -> tuple[np.ndarray, Box | None]:
    """Of two results of one edit on ``before`` (mask, changed box), the one whose
    outline sits better on the photo's edges: over the box either changed, the mean
    colour gradient (Lab, Sobel) along each result's outline (alpha 128). A result that
    changed nothing loses; ties go to ``first``. A large box is looked at with a stride,
    so that the choice costs the same at any photo size."""
    if first[1] is None or second[1] is None:
        return second if second[1] is not None and first[1] is None else first
    h, w = before.shape
    ux0, uy0, ux1, uy1 = _union(first[1], second[1])
    x0, y0, x1, y1 = max(0, ux0 - 2), max(0, uy0 - 2), min(w, ux1 + 2), min(h, uy1 + 2)
    step = max(1, -(-max(x1 - x0, y1 - y0) // EDGE_SIDE))
    window = np.s_[y0:y1:step, x0:x1:step]
    lab = cv2.cvtColor(np.ascontiguousarray(rgb[window]), cv2.COLOR_RGB2Lab).astype(np.float32)
    gx = cv2.Sobel(lab, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(lab, cv2.CV_32F, 0, 1, ksize=3)
    mag = np.sqrt((gx * gx + gy * gy).sum(axis=2))
    ring = np.ones((3, 3), np.uint8)

    def score(mask: np.ndarray) -> float:
        outline = cv2.morphologyEx((mask[window] >= 128).astype(np.uint8), cv2.MORPH_GRADIENT, ring)
        on = outline > 0
        return float(mag[on].mean()) if on.any() else 0.0

    return second if score(second[0]) > score(first[0]) else first


def _union(a: Box, b: Box) -> Box:
    """The smallest box holding boxes ``a`` and ``b``."""
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


def whole(
    rgb: np.ndarray,
    before: np.ndarray,
    model: tuple[np.ndarray, Box | None],
    colour: tuple[np.ndarray, Box | None],
) -> tuple[np.ndarray, Box | None]:
    """Of the click model's result and the classical click's for one click on ``before``
    (mask, changed box), one kept whole: the model's when the classical click found no
    region (it changed nothing the user can see,
    :func:`~bgremover.touchup.regions.changes_nothing`) and the model's result changed
    something; otherwise the one whose outline sits better on the photo's edges
    (:func:`sharper`).

    Where the missed part has the colours of the background around it (a blurred face
    before a grey wall), the classical click, by colour alone, moves only the pixels at
    the click, and an edge comparison would keep that (the old outline along textured
    hair has stronger edges than a blurred face's): the click then changed nothing. Not
    the other way round: a model's result that changes little may say the mask already
    holds the object, which the classical click's region does not make wrong."""
    if not changes_nothing(before, *model) and changes_nothing(before, *colour):
        return model
    return sharper(rgb, before, model, colour)


def agreed(
    rgb: np.ndarray,
    before: np.ndarray,
    first: tuple[np.ndarray, Box | None],
    second: tuple[np.ndarray, Box | None],
    add: bool,
    point: tuple[float, float],
) -> tuple[np.ndarray, Box | None]:
    """Of the click model's result (``first``) and the classical click's (``second``) for
    one Add / Remove click on ``before`` (mask, changed box), what both change: an Add
    raises each pixel to the lower of the two, a Remove lowers it to the higher, so a
    pixel only one of them moved stays as it was. Where they agree on nothing but the
    clicked pixel (neither side, cut at 128, moves anywhere else), or the classical click
    found no region, the click still does something: one of them whole (:func:`whole`)."""
    if first[1] is None or second[1] is None or changes_nothing(before, *second):
        return whole(rgb, before, first, second)
    both = np.minimum(first[0], second[0]) if add else np.maximum(first[0], second[0])
    box = _union(first[1], second[1])
    x0, y0, x1, y1 = box
    flipped = (before[y0:y1, x0:x1] >= 128) != (both[y0:y1, x0:x1] >= 128)
    px, py = int(point[0]) - x0, int(point[1]) - y0
    if 0 <= py < flipped.shape[0] and 0 <= px < flipped.shape[1]:
        flipped[py, px] = False
    if not flipped.any():
        return whole(rgb, before, first, second)
    return both, changed_box(before, both, box)


def confirms(
    alpha: np.ndarray,
    point: tuple[float, float],
    add: bool,
    clicks: Sequence[tuple[float, float, bool]],
    prompt: Prompter,
) -> bool:
    """Whether a click asks again for what the click before it left out: that click was
    of the same sign, the click model proposed the pixel now clicked for it
    (:func:`proposed`), and the pixel is still on the side the click would change.
    :func:`agreed` took only what the model and the classical click both changed; a second
    click there says the model was right, so that click keeps the better edge of the two
    whole (docs/decisions/0014)."""
    if not clicks or clicks[-1][2] != add:
        return False
    height, width = alpha.shape
    px = min(width - 1, max(0, int(np.floor(point[0]))))
    py = min(height - 1, max(0, int(np.floor(point[1]))))
    if (alpha[py, px] >= 128) == add:
        return False
    return proposed((height, width), clicks[-1], clicks[:-1], point, prompt)
