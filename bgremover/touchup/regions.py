"""Add / Remove clicks: one click corrects the whole region it belongs to (Qt-free).

An *Add* click on a part the mask missed (or a *Remove* click on a part it wrongly
keeps) changes the region of the photo that the click belongs to, and nothing far
away. :func:`apply_click` does it with GrabCut (OpenCV), without the model, in two
passes on downscaled copies of the photo:

1. **Coarse**, the whole photo at ``COARSE_SIDE`` px long side, to find how far the
   clicked region reaches. The click says "the mask is wrong here", so GrabCut does
   not start from the mask as it is: the pixels of the clicked side (the mask's
   background for Add, its foreground for Remove) are split into ``CLUSTERS``
   colour clusters (k-means), and the pixels of the click's cluster that are
   connected to the click are moved to the other side. GrabCut then starts from
   that labelling. Hard constraints: the other side (``HOLD_OTHER_SIDE``), every
   click so far (``earlier`` and this one, as disks of ``SEED_RADIUS``), and every
   pixel of the clicked side further than ``BAND`` from the moved cluster, so that
   where colours do not separate the change cannot run away over the whole photo.
   The region is the connected part of GrabCut's change that holds the click.
2. **Fine**, the region's box plus ``MARGIN`` at ``FINE_SIDE`` px long side: GrabCut
   again, starting from the coarse region, draws its outline at a finer scale.

Both passes keep the change no deeper into the clicked side than ``DEPTH`` times the
click's own distance from the other side (at least ``BAND``). Then the click spreads
(:func:`_spread`, at ``SPREAD_SIDE``) along the rest of the mask's outline to the
pixels of the colours under it; a Remove's spread leaves what the model's own mask
holds at ``SURE`` or more.

The fine region is upsampled bilinearly to the photo, which gives it a soft edge
about one working pixel wide, and blended into the mask:
``alpha + (target - alpha) * weight`` with target 255 (Add) or 0 (Remove). Last, the
pixels the click changed get the edge refinement the model's mask gets (``REFINE``,
:func:`bgremover.mask.refine.refine_alpha`), held to the same rule.

What must stay true:

* An Add never lowers a pixel and a Remove never raises one; the clicked pixel itself
  always becomes 255 / 0.
* GrabCut only ever sees the downscaled copies, so a large photo adds only the
  full-size resampling, blending and refinement.
* Everything is deterministic: OpenCV's random generator (k-means, GrabCut's GMM
  initialisation) is seeded before each use, and the fixed +-1 grey-level dither
  added to GrabCut's input (without it, max-flow takes minutes on a flat colour)
  comes from a seeded generator.
* GrabCut only sees colour: where the missed part has the colours of the background
  around it, a click recovers only the part that differs, and edges finer than the
  spread's grid need the brushes.

Why each step and constant, and what they measured: docs/decisions/0001 to 0006.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from ..mask.refine import refine_alpha

__all__ = [
    "NO_CHANGE_SHARE",
    "Box",
    "apply_click",
    "changes_nothing",
    "refine_change",
    "seen_change",
    "too_few",
]

Box = tuple[int, int, int, int]  # x0, y0, x1, y1, half-open, pixel coordinates
Click = tuple[float, float, bool]

#: Long side of the whole-photo pass that finds how far the clicked region reaches.
COARSE_SIDE = 256
#: Long side of the pass over the region's box (plus margin) that draws its outline.
FINE_SIDE = 320
#: GrabCut iterations per pass.
ITERATIONS = 2
#: Colour clusters of the clicked side; the click's cluster is what it says is wrong.
CLUSTERS = 3
#: How far GrabCut may move the outline beyond the click's cluster, as a fraction of
#: the pass's long side.
BAND = 0.05
#: Radius of a click's hard constraint, as a fraction of the pass's long side.
SEED_RADIUS = 0.01
#: Margin around the coarse region's box for the fine pass, as a fraction of its size.
MARGIN = 0.25
#: The colours k-means and GrabCut see: "RGB" or "Lab".
COLOUR_SPACE = "RGB"
#: Whether the side the click does not concern is a hard constraint for GrabCut (True)
#: or only its starting label (False).
HOLD_OTHER_SIDE = True
#: Whether a click also corrects the rest of the mask's outline that has the colours
#: under the click (:func:`_spread`).
SPREAD = True
#: How deep into the clicked side a click's change may reach, as a multiple of the
#: click's own distance from the other side (at least ``BAND``); 0 for no limit.
DEPTH = 2.0
#: Long side of the whole-photo pass of :func:`_spread` (a photo up to this size is
#: seen at its own pixels): the outline it draws is this fine.
SPREAD_SIDE = 800
#: Histogram bins per colour channel of :func:`_spread`'s colour model.
SPREAD_BINS = 16
#: How much likelier a colour must be on the side the click asks for than on the
#: other, as a natural log (1.4: four to one), for :func:`_spread` to move a pixel.
SPREAD_ODDS = 1.4
#: A Remove click's spread leaves the pixels the model's own mask (``base``) put at
#: this much foreground or more.
SURE = 0.9
#: Whether the pixels a click changes get the edge refinement the model's mask gets
#: (:func:`bgremover.mask.refine.refine_alpha`), for an outline that follows the photo.
REFINE = True


@dataclass(frozen=True)
class _Grid:
    """A box of the photo sampled at ``size`` (w, h): work pixel (u, v) covers photo
    x in [x0 + u / sx, x0 + (u + 1) / sx), likewise y."""

    box: Box
    size: tuple[int, int]

    @classmethod
    def over(cls, box: Box, side: int) -> _Grid:
        w, h = box[2] - box[0], box[3] - box[1]
        scale = min(1.0, side / max(w, h))
        return cls(box, (max(1, round(w * scale)), max(1, round(h * scale))))

    @property
    def sx(self) -> float:
        return self.size[0] / (self.box[2] - self.box[0])

    @property
    def sy(self) -> float:
        return self.size[1] / (self.box[3] - self.box[1])

    def pixel(self, x: float, y: float) -> tuple[int, int]:
        u = int(np.floor((x - self.box[0]) * self.sx))
        v = int(np.floor((y - self.box[1]) * self.sy))
        return min(self.size[0] - 1, max(0, u)), min(self.size[1] - 1, max(0, v))

    def sample(self, img: np.ndarray) -> np.ndarray:
        x0, y0, x1, y1 = self.box
        crop = img[y0:y1, x0:x1]
        if (crop.shape[1], crop.shape[0]) == self.size:
            return np.ascontiguousarray(crop)
        return cv2.resize(crop, self.size, interpolation=cv2.INTER_AREA)

    def warp_from(self, values: np.ndarray, src: _Grid) -> np.ndarray:
        """``values`` (float32 on ``src``) resampled onto this grid, bilinearly."""
        ax, ay = src.sx / self.sx, src.sy / self.sy
        bx = (self.box[0] - src.box[0]) * src.sx + 0.5 * ax - 0.5
        by = (self.box[1] - src.box[1]) * src.sy + 0.5 * ay - 0.5
        matrix = np.array([[ax, 0.0, bx], [0.0, ay, by]], np.float64)
        return cv2.warpAffine(
            values,
            matrix,
            self.size,
            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
            borderMode=cv2.BORDER_REPLICATE,
        )


def _disk(radius: int) -> np.ndarray:
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))


def _dither(small: np.ndarray) -> np.ndarray:
    """``small`` plus a fixed pattern of +-1 grey-level noise: GrabCut's max-flow takes
    minutes on areas of one flat colour (zero colour variance); this costs nothing
    on photos (their own noise is larger) and keeps results deterministic."""
    noise = np.random.default_rng(0).integers(-1, 2, small.shape, dtype=np.int16)
    return np.clip(small.astype(np.int16) + noise, 0, 255).astype(np.uint8)


def _seeds(grid: _Grid, clicks: Sequence[Click]) -> np.ndarray:
    """GrabCut's hard labels for the clicks on ``grid``: GC_FGD / GC_BGD disks, 255
    elsewhere; a later click wins where disks overlap."""
    seeds = np.full((grid.size[1], grid.size[0]), 255, np.uint8)
    radius = max(1, round(SEED_RADIUS * max(grid.size)))
    for x, y, add in clicks:
        u = int(np.floor((x - grid.box[0]) * grid.sx))
        v = int(np.floor((y - grid.box[1]) * grid.sy))
        if -radius <= u < grid.size[0] + radius and -radius <= v < grid.size[1] + radius:
            cv2.circle(seeds, (u, v), radius, cv2.GC_FGD if add else cv2.GC_BGD, -1)
    return seeds


def _cluster_flip(
    small: np.ndarray, side: np.ndarray, mine: np.ndarray, where: tuple[int, int]
) -> np.ndarray:
    """The pixels of ``side`` (the clicked side: the mask's background for Add) in the
    click's colour cluster and connected to the click: what the click says is wrong."""
    pixels = small[side].astype(np.float32)
    if len(pixels) <= CLUSTERS:
        return side.copy()
    cv2.setRNGSeed(0)
    criteria = (cv2.TERM_CRITERIA_MAX_ITER + cv2.TERM_CRITERIA_EPS, 10, 1.0)
    _, labels, _ = cv2.kmeans(  # type: ignore[call-overload, unused-ignore]
        pixels, CLUSTERS, None, criteria, 1, cv2.KMEANS_PP_CENTERS
    )
    cluster = np.full(side.shape, -1, np.int32)
    cluster[side] = labels.ravel()
    votes = cluster[mine & side]
    candidate = mine.astype(np.uint8)
    if votes.size:
        candidate |= (cluster == int(np.bincount(votes).argmax())).astype(np.uint8)
    _, comp = cv2.connectedComponents(candidate, connectivity=8)
    return np.asarray(comp == comp[where[1], where[0]])


def _region(
    rgb: np.ndarray,
    alpha: np.ndarray,
    grid: _Grid,
    clicks: Sequence[Click],
    prior: np.ndarray | None = None,
    level: int = 128,
) -> np.ndarray | None:
    """The region the last click changes, on ``grid`` (bool), or None when GrabCut
    leaves the clicked pixel as it was.

    GrabCut starts from the mask with the pixels the click says are wrong (``prior``
    >= 0.5, else the click's colour cluster) moved to the other side; hard labels:
    the clicks, the other side, and the clicked side beyond ``BAND`` of the moved
    pixels. The region is the connected part of its change that holds the click.
    """
    x, y, add = clicks[-1]
    small = grid.sample(rgb)
    if COLOUR_SPACE == "Lab":
        small = cv2.cvtColor(small, cv2.COLOR_RGB2Lab)
    old = grid.sample(alpha) >= level
    seeds = _seeds(grid, clicks)
    where = grid.pixel(x, y)
    mine = seeds == (cv2.GC_FGD if add else cv2.GC_BGD)
    side = ~old if add else old
    # The fine pass flips every pixel the coarse region reaches, even partly: left as
    # they were, the rim pixels of a flat-coloured region would teach GrabCut that
    # its colour belongs to the side it is leaving, and it would keep the region.
    flip = (prior > 0.0) & side if prior is not None else _cluster_flip(small, side, mine, where)
    keep, move = (cv2.GC_BGD, cv2.GC_FGD) if add else (cv2.GC_FGD, cv2.GC_BGD)
    labels = np.where(old ^ flip, cv2.GC_PR_FGD, cv2.GC_PR_BGD).astype(np.uint8)
    if HOLD_OTHER_SIDE:
        labels[~side] = move
    else:
        labels[~side] = cv2.GC_PR_FGD if add else cv2.GC_PR_BGD
    near = cv2.dilate(flip.astype(np.uint8), _disk(max(1, round(BAND * max(grid.size)))))
    labels[side & (near == 0)] = keep
    labels = np.where(seeds != 255, seeds, labels).astype(np.uint8)
    fg = (labels == cv2.GC_FGD) | (labels == cv2.GC_PR_FGD)
    undecided = (labels == cv2.GC_PR_FGD) | (labels == cv2.GC_PR_BGD)
    if fg.any() and not fg.all() and undecided.any():
        cv2.setRNGSeed(0)
        small = _dither(small)
        bgd = np.zeros((1, 65), np.float64)
        fgd = np.zeros((1, 65), np.float64)
        # The rect is unused with GC_INIT_WITH_MASK.
        cv2.grabCut(small, labels, (0, 0, 0, 0), bgd, fgd, ITERATIONS, cv2.GC_INIT_WITH_MASK)
        fg = (labels == cv2.GC_FGD) | (labels == cv2.GC_PR_FGD)
    changed = (fg & ~old) if add else (old & ~fg)
    if not changed[where[1], where[0]]:
        return None
    if DEPTH:
        # Distance to the other side; the photo's frame is not the other side (where
        # there is no other side at all, every distance is huge and nothing is cut).
        depth = cv2.distanceTransform(side.astype(np.uint8), cv2.DIST_L2, 5)
        reach = DEPTH * float(depth[where[1], where[0]])
        if reach < max(grid.size):
            changed &= depth <= max(reach, BAND * max(grid.size))
    _, comp = cv2.connectedComponents(changed.astype(np.uint8), connectivity=8)
    return np.asarray(comp == comp[where[1], where[0]])


def _spread(
    rgb: np.ndarray,
    before: np.ndarray,
    after: np.ndarray,
    clicks: Sequence[Click],
    level: int,
    base: np.ndarray | None = None,
) -> np.ndarray:
    """``after`` with the rest of the outline corrected the way the last click asks.

    A click on a missed leaf says "this colour is the subject" about every leaf tip of
    that colour along the outline, not only the one clicked. So, on the whole photo
    at ``SPREAD_SIDE``: a colour model (``SPREAD_BINS`` per channel, foreground against
    background) is learnt from the mask's two sides near its outline (between
    ``BAND`` and three times ``BAND`` from it) and from every click's disk; then the
    pixels within ``BAND`` of the outline whose colour is one of the colours under
    the click (a disk of twice ``SEED_RADIUS``, on the side the click says is wrong)
    and that the model puts on the side the click asks for, ``SPREAD_ODDS`` to one or
    more, are moved there. Only in that direction: an Add click only adds, a Remove
    click only removes, and not what the model's own mask ``base`` put at ``SURE`` or
    more; earlier clicks stay as they are. A 3 x 3 median drops isolated pixels.
    Where the colours under the click are on both sides of the outline (a jacket
    before a wall of its colour) the model's odds stay low and nothing moves.
    """
    height, width = after.shape
    grid = _Grid.over((0, 0, width, height), SPREAD_SIDE)
    small = grid.sample(rgb)
    if COLOUR_SPACE == "Lab":
        small = cv2.cvtColor(small, cv2.COLOR_RGB2Lab)
    mask = grid.sample(after) >= 128
    x, y, add = clicks[-1]
    band_px = max(1, round(BAND * max(grid.size)))
    # Distances from the outline, each side (erosions and dilations by disks, in time
    # that does not grow with the radius).
    m8 = mask.astype(np.uint8)
    depth_in = cv2.distanceTransform(m8, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
    depth_out = cv2.distanceTransform(1 - m8, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
    inner = depth_in > band_px
    outer = depth_out <= band_px
    near = (depth_in <= 3 * band_px) & (depth_out <= 3 * band_px)
    seeds = _seeds(grid, clicks)
    free = seeds == 255
    fg = (inner & near & free) | (seeds == cv2.GC_FGD)
    bg = (~outer & near & free) | (seeds == cv2.GC_BGD)
    q = (small // (256 // SPREAD_BINS)).astype(np.int32)
    colour = (q[..., 0] * SPREAD_BINS + q[..., 1]) * SPREAD_BINS + q[..., 2]
    bins = SPREAD_BINS**3
    hist_fg = np.bincount(colour[fg], minlength=bins) + 0.5
    hist_bg = np.bincount(colour[bg], minlength=bins) + 0.5
    odds = np.log(hist_fg / hist_fg.sum()) - np.log(hist_bg / hist_bg.sum())
    under = np.zeros(mask.shape, np.uint8)
    cv2.circle(under, grid.pixel(x, y), max(1, round(2 * SEED_RADIUS * max(grid.size))), 1, -1)
    old = grid.sample(before) >= level
    wrong = under.astype(bool) & (~old if add else old)
    clicked = np.bincount(colour[wrong], minlength=bins) > 0
    # The pixels that may move: the side the click says is wrong, in the band, not under
    # an earlier click (this click's own disk may: left out, where the click's region
    # stopped short of it, the spread drew a ring around a hole at the click).
    unclicked = _seeds(grid, clicks[:-1]) == 255
    movable = (~mask if add else mask) & outer & ~inner & unclicked
    if base is not None and not add:
        # What the model itself was sure is the subject stays: u2netp's confident mistakes
        # are misses, about ten times as many pixels as what it keeps wrongly with the same
        # confidence (both scored folders), so a Remove spread leaves those pixels alone
        # (a Remove click on a flag's dark red stripe took the shadowed edge of a sleeve).
        movable &= grid.sample(base) < 255 * SURE
    move = movable & clicked[colour] & ((odds if add else -odds)[colour] > SPREAD_ODDS)
    if not move.any():
        return after
    # A 3 x 3 median over the band with the moved pixels drops the isolated ones and
    # fills one-pixel gaps between them and the mask, in the click's direction only.
    labels = (mask ^ move).astype(np.uint8) * 255
    moved = (cv2.medianBlur(labels, 3) > 0) != mask
    moved &= movable & (cv2.dilate(move.astype(np.uint8), _disk(1)) > 0)
    if not moved.any():
        return after
    x0, y0, x1, y1 = _bbox(moved)
    # One working pixel more on each side: the bilinear edge reaches that far.
    box: Box = (
        max(0, int((x0 - 1) / grid.sx)),
        max(0, int((y0 - 1) / grid.sy)),
        min(width, int(np.ceil((x1 + 1) / grid.sx))),
        min(height, int(np.ceil((y1 + 1) / grid.sy))),
    )
    # Bilinearly onto the photo's pixels in the box: a soft edge one working pixel wide.
    weight = _Grid(box, (box[2] - box[0], box[3] - box[1])).warp_from(
        moved.astype(np.float32), grid
    )
    out = after.copy()
    _blend(out, box, weight, add)
    return out


def _blend(alpha: np.ndarray, box: Box, weight: np.ndarray, add: bool) -> None:
    """``alpha`` in ``box`` moved towards 255 (``add``) or 0 by ``weight`` (0..1, the
    box's size), in place: an Add never lowers a pixel and a Remove never raises one."""
    x0, y0, x1, y1 = box
    part = alpha[y0:y1, x0:x1].astype(np.float32)
    target = 255.0 if add else 0.0
    alpha[y0:y1, x0:x1] = np.rint(part + (target - part) * weight).astype(np.uint8)


def refine_change(rgb: np.ndarray, before: np.ndarray, after: np.ndarray, add: bool) -> None:
    """The pixels ``after`` changed from ``before`` given the edge refinement of the
    model's mask, in place; still only raised by an Add and only lowered by a Remove.

    A click's outline is drawn on a grid of a few hundred pixels and upsampled, so along
    thin leaves and hair it is a blur about one working pixel wide; the refinement's
    colour line puts it where the photo's colours say, as it does for the model's mask.
    """
    changed = after != before
    if not changed.any():
        return
    x0, y0, x1, y1 = _bbox(changed)
    refined = refine_alpha(rgb, after, window=(x0, y0, x1, y1))
    old = before[y0:y1, x0:x1]
    bound = np.maximum(refined, old) if add else np.minimum(refined, old)
    np.copyto(after[y0:y1, x0:x1], bound, where=changed[y0:y1, x0:x1])


#: A change to fewer than this share of the photo's pixels is no change to the user (a
#: tenth of a percent: 1 200 pixels of a 1.2 MP photo). The app says so of a click that
#: made one and does not keep it; a classical click that made one found no region
#: (:func:`bgremover.touchup.learned.agreed`).
NO_CHANGE_SHARE = 0.001
#: A pixel counts as changed when its alpha moved by at least this much: a smaller move
#: does not show on the overlay or the cutout.
SEEN_STEP = 16


def seen_change(old: np.ndarray, new: np.ndarray, box: Box | None = None) -> int:
    """How many pixels ``new`` changed from ``old`` by at least :data:`SEEN_STEP`, within
    ``box`` (the box of the pixels that changed; None: none changed)."""
    if box is None:
        return 0
    x0, y0, x1, y1 = box
    moved = np.abs(new[y0:y1, x0:x1].astype(np.int16) - old[y0:y1, x0:x1].astype(np.int16))
    return int(np.count_nonzero(moved >= SEEN_STEP))


def too_few(changed: int, pixels: int) -> bool:
    """Whether ``changed`` pixels of a photo of ``pixels`` are fewer than
    :data:`NO_CHANGE_SHARE` of it: nothing the user can see."""
    return changed < NO_CHANGE_SHARE * pixels


def changes_nothing(old: np.ndarray, new: np.ndarray, box: Box | None = None) -> bool:
    """Whether what ``new`` changed from ``old`` (:func:`seen_change`) is too few pixels
    to see (:func:`too_few`)."""
    return too_few(seen_change(old, new, box), old.size)


def changed_box(old: np.ndarray, new: np.ndarray, box: Box | None = None) -> Box | None:
    """The tight box of pixels that differ, searched within ``box`` (default: all)."""
    if box is None:
        box = (0, 0, old.shape[1], old.shape[0])
    x0, y0, x1, y1 = box
    diff = old[y0:y1, x0:x1] != new[y0:y1, x0:x1]
    if not diff.any():
        return None
    bx0, by0, bx1, by1 = _bbox(diff)
    return x0 + bx0, y0 + by0, x0 + bx1, y0 + by1


def _bbox(mask: np.ndarray) -> Box:
    """The box of ``mask``'s true pixels (there must be one): from its rows and columns
    that hold one, without listing every pixel (a 12 MP mask has millions)."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def apply_click(
    rgb: np.ndarray,
    alpha: np.ndarray,
    point: tuple[float, float],
    add: bool,
    earlier: Sequence[tuple[float, float, bool]] = (),
    base: np.ndarray | None = None,
) -> tuple[np.ndarray, Box | None]:
    """Correct the region of ``alpha`` that the click at ``point`` belongs to.

    ``rgb`` is the photo (H x W x 3 uint8), ``alpha`` the current mask (H x W uint8),
    ``point`` the click (x, y) in pixel coordinates, ``add`` True to make the region
    foreground, False to remove it; ``earlier`` are the earlier clicks on this photo
    (x, y, add), oldest first, kept as hard constraints; ``base`` is the model's own
    mask, if known (a Remove click's spread leaves what it was sure of). It needs no
    model: see the module's docstring for the measurement that decided it.

    Returns the new alpha (a new array; the inputs are never modified) and the box
    of the pixels that changed (None if nothing changed). The clicked pixel itself
    always becomes 255 (Add) or 0 (Remove).
    """
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.shape[:2] != alpha.shape:
        raise ValueError(f"photo {rgb.shape} and mask {alpha.shape} do not match")
    height, width = alpha.shape
    x, y = float(point[0]), float(point[1])
    px = min(width - 1, max(0, int(np.floor(x))))
    py = min(height - 1, max(0, int(np.floor(y))))
    clicks: list[Click] = [(float(a), float(b), bool(c)) for a, b, c in earlier]
    clicks.append((x, y, bool(add)))
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    alpha = np.asarray(alpha, dtype=np.uint8)

    new = alpha.copy()
    coarse_grid = _Grid.over((0, 0, width, height), COARSE_SIDE)
    # The mask's two sides are split at 128, unless the click is on a see-through
    # leftover (a Remove click where alpha < 128, an Add click where it is >= 128):
    # then at half-way between the clicked pixel and the side the click asks for,
    # so that a faint remnant the user can see goes with its region too.
    a = int(alpha[py, px])
    if add:
        level = 128 if a < 128 else (a + 256) // 2
    else:
        level = 128 if a >= 128 else max(1, (a + 1) // 2)
    coarse = _region(rgb, alpha, coarse_grid, clicks, level=level)
    if coarse is not None:
        bx0, by0, bx1, by1 = _bbox(coarse)
        bx0, bx1 = int(bx0 / coarse_grid.sx), min(width, int(np.ceil(bx1 / coarse_grid.sx)))
        by0, by1 = int(by0 / coarse_grid.sy), min(height, int(np.ceil(by1 / coarse_grid.sy)))
        mx, my = int(MARGIN * (bx1 - bx0)) + 8, int(MARGIN * (by1 - by0)) + 8
        roi: Box = (max(0, bx0 - mx), max(0, by0 - my), min(width, bx1 + mx), min(height, by1 + my))
        fine_grid = _Grid.over(roi, FINE_SIDE)
        prior = fine_grid.warp_from(coarse.astype(np.float32), coarse_grid)
        fine = _region(rgb, alpha, fine_grid, clicks, prior, level)
        if fine is not None:
            x0, y0, x1, y1 = roi
            weight = fine.astype(np.float32)
            if fine_grid.size != (x1 - x0, y1 - y0):
                size = (x1 - x0, y1 - y0)
                weight = np.asarray(cv2.resize(weight, size, interpolation=cv2.INTER_LINEAR))
            _blend(new, roi, weight, add)
    if SPREAD:
        new = _spread(rgb, alpha, new, clicks, level, base)
    if REFINE:
        refine_change(rgb, alpha, new, add)
    new[py, px] = 255 if add else 0
    diff = new != alpha
    if not diff.any():
        return new, None
    return new, _bbox(diff)
