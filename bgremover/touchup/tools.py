"""The touch-up tools: one record per tool, and the operation a use of one makes.

Every tool is one :class:`Tool` in :data:`TOOLS`: its name (what an edits file
says), its key, label and tip (the app's menu, edit bar and hints), its
:class:`Kind` (what the user gives it: a stroke, a click, a box, nothing, a mask),
whether it runs the model, whether it starts over from a mask of its own, how the
app previews it while it is applied, and its apply function. The engine
(:mod:`bgremover.touchup.edit`: validating, reading, writing and replaying operations) and
the app (its Touch Up menu, edit bar and hints) read this table and nothing else, so
a new tool is one record plus its apply function, and a name not in the table is an
error wherever it turns up.

The tools:

* ``restore`` / ``erase``: brush strokes (a polyline with a radius and a
  hardness) that paint the mask opaque / transparent. With ``edge_aware`` the
  stroke follows the photo's edges inside the brush: the confident mask around
  the brush gives colour samples of the subject and of the background (the
  colours under the stroke's centre line stand for the side it paints when the
  mask has too few), and every pixel under the brush gets the alpha a colour
  model of the two sides expects (subject, background, a mix of a pair, or a
  colour neither explains). It departs from the plain brush only where the model
  is sure a pixel is not the side the stroke paints, and not where it refuses
  nearly all of the stroke's centre line (docs/decisions/0011). An edge-aware
  erase only lowers the alpha and a restore only raises it, so one rough erase
  along hair drops the background between the strands and keeps the strands.
* ``add`` / ``remove``: one click changes the whole region it belongs to (see
  regions.py); all clicks since the last reset or load are hard constraints. With the
  click model, only what its object and the classical click's region both change
  (``learned.agreed``), unless the click asks again for what the model proposed for the
  click before it (docs/decisions/0014).
* ``box``: the network runs again on the crop of a rectangle, with a tenth of
  context around it (the subject then fills the model's input, so detail
  improves), and its mask replaces the mask inside the box, blended over a few
  pixels at the box's border.
* ``reset``: back to the model's mask.
* ``largest``: the largest opaque part of the mask is kept, with what is joined to
  it; every other part (stray specks, islands of background) goes.
* ``load``: the whole mask replaced by one from a file (a mask, or a cutout's
  alpha), resized to the image.

One module because it is the tools' one definition: each
record sits with the apply function it names, brushes' colour model included.

An apply function takes the operation (already at the image's scale), the mask and
the :class:`ToolContext`, never modifies its inputs, and returns the new mask and
the box of the pixels it changed (None: nothing changed).

Why the click and box tools work as they do, and what they measured:
docs/decisions/0001 to 0007.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

import cv2
import numpy as np
from PIL import Image

from ..errors import EditsError
from ..mask.refine import refine_alpha
from .learned import Prompter, agreed, box_mask, confirms, learned_click, sharper, whole
from .regions import Box, apply_click, changed_box

__all__ = [
    "TOOLS",
    "Box",
    "Kind",
    "Operation",
    "Prompter",
    "Restart",
    "Segmenter",
    "Tool",
    "ToolContext",
    "apply_box",
    "apply_stroke",
    "keep_largest",
    "mask_from_image",
    "stroke_coverage",
    "tool_named",
]

#: Runs the network on an RGB crop; returns the mask (uint8) at the crop's size.
Segmenter = Callable[[np.ndarray], np.ndarray]


class Kind(Enum):
    """What a tool is given, which says how the app gathers it and what an operation
    of the tool must hold."""

    #: A stroke painted with the mouse: points, a radius, a hardness, edge-aware or not.
    BRUSH = "brush"
    #: One click: one point.
    CLICK = "click"
    #: A rectangle dragged with the mouse: two corners.
    BOX = "box"
    #: Nothing: the tool works on the whole mask at once (a menu action).
    WHOLE = "whole"
    #: A mask, carried by the operation (PNG): the app asks for a file.
    MASK = "mask"

    @property
    def drawn(self) -> bool:
        """Whether the user gives it with the mouse on the photo (a tool to pick)."""
        return self in (Kind.BRUSH, Kind.CLICK, Kind.BOX)


class Restart(Enum):
    """Whether an operation's result depends on what came before it."""

    #: It changes the mask as it is.
    NO = "no"
    #: Its result is the model's mask: it and everything before it are moot.
    TO_BASE = "base"
    #: Its result is a mask of its own: everything before it is moot.
    OWN_MASK = "own"


@dataclass
class ToolContext:
    """What applying an operation needs besides the mask."""

    #: The photo (H x W x 3 uint8) the mask belongs to.
    rgb: np.ndarray
    #: The mask the edits start from (the model's).
    base: np.ndarray
    #: The model, for the tools that need it (None where it is not loaded).
    segment: Segmenter | None = None
    #: Clicks since the last restart: (x, y, add), oldest first.
    clicks: list[tuple[float, float, bool]] = field(default_factory=list)
    #: The click model bound to this photo, for clicks made with it (None: not loaded).
    prompt: Prompter | None = None


#: A tool's apply function: (operation, mask, context) -> (new mask, changed box).
Apply = Callable[["Operation", np.ndarray, ToolContext], tuple[np.ndarray, Box | None]]


@dataclass(frozen=True)
class Tool:
    """One touch-up tool, as the engine and the app know it."""

    #: What an operation and an edits file call it.
    name: str
    #: The app's shortcut (a key sequence's text; unique among the tools).
    key: str
    #: The menu's text (``&`` before the mnemonic).
    label: str
    #: What it does, in plain words (tooltip and status tip).
    tip: str
    kind: Kind
    apply: Apply = field(repr=False)
    #: Whether applying it runs the model (the app then waits for the model's session).
    needs_model: bool = False
    restart: Restart = Restart.NO
    #: The colour (RGBA) of what the app draws while the operation is being applied: a
    #: brush's stroke, a click's marker, a box's fill. None: nothing is drawn.
    preview: tuple[int, int, int, int] | None = None
    #: The edit bar's word for it ("": the label).
    short: str = ""
    #: Whether what it is given marks the subject (True: what it paints or clicks is
    #: kept) or the background (False: removed); None for tools that mark neither. The
    #: app draws a click's marker (+ or −) and a brush's cursor by it.
    keeps: bool | None = None

    @property
    def word(self) -> str:
        """The tool's short name, without the mnemonic's ``&`` or an ellipsis."""
        return (self.short or self.label).replace("&", "").replace("…", "")


def _registry(tools: Iterable[Tool]) -> Mapping[str, Tool]:
    table: dict[str, Tool] = {}
    keys: dict[str, str] = {}
    for t in tools:
        if t.name in table or t.key.lower() in keys:
            raise ValueError(f"Edit tool {t.name!r}: its name or its key {t.key!r} is taken.")
        table[t.name] = t
        keys[t.key.lower()] = t.name
    return table


def tool_named(name: str) -> Tool:
    """The tool called ``name``; an :class:`EditsError` that says what to do if none is."""
    try:
        return TOOLS[name]
    except KeyError:
        raise EditsError(
            f"Unknown edit tool {name!r}: this version of bgremover has no tool of that name, "
            "so it cannot replay the edit.",
            fix=f"The tools are {', '.join(TOOLS)}. Edits saved by a newer bgremover need that "
            "version; otherwise correct the tool's name in the edits file.",
        ) from None


@dataclass(frozen=True)
class Operation:
    """One use of a tool. Coordinates are continuous pixel coordinates of the image the
    edits were made on: pixel (i, j) spans x in [i, i+1) and y in [j, j+1)."""

    #: The tool's name (a key of :data:`TOOLS`).
    tool: str
    #: Brushes: the stroke's polyline; clicks: one point; box: two corners.
    points: tuple[tuple[float, float], ...] = ()
    #: Brushes: the radius in pixels.
    radius: float = 0.0
    #: Brushes: 1 = a hard edge, 0 = fully soft (the paint fades from the centre line).
    hardness: float = 1.0
    #: Brushes: follow the photo's edges under the brush.
    edge_aware: bool = False
    #: Mask tools: the mask, PNG-encoded (greyscale).
    mask_png: bytes = field(default=b"", repr=False)
    #: Clicks and boxes: the click model that made it ("": without, as before it).
    model: str = ""

    def __post_init__(self) -> None:
        kind = tool_named(self.tool).kind
        need = {Kind.CLICK: 1, Kind.BOX: 2}.get(kind)
        if need is not None and len(self.points) != need:
            raise EditsError(f"A {self.tool!r} edit needs {need} point(s).")
        if kind is Kind.BRUSH and (not self.points or self.radius <= 0):
            raise EditsError("A brush stroke needs at least one point and a radius above 0.")
        if kind is Kind.MASK and not self.mask_png:
            raise EditsError(f"A {self.tool!r} edit needs the mask it loads.")
        if not 0.0 <= self.hardness <= 1.0:
            raise EditsError("A brush's hardness is between 0 and 1.")
        if self.model and kind not in (Kind.CLICK, Kind.BOX):
            raise EditsError(f"A {self.tool!r} edit is not made with a click model.")

    @property
    def spec(self) -> Tool:
        """The tool this operation uses."""
        return TOOLS[self.tool]

    @classmethod
    def stroke(
        cls,
        tool: str,
        points: Iterable[tuple[float, float]],
        radius: float,
        hardness: float = 1.0,
        edge_aware: bool = False,
    ) -> Operation:
        pts = tuple((float(x), float(y)) for x, y in points)
        return cls(tool, pts, float(radius), float(hardness), bool(edge_aware))

    @classmethod
    def click(cls, x: float, y: float, add: bool = True, model: str = "") -> Operation:
        return cls("add" if add else "remove", ((float(x), float(y)),), model=model)

    @classmethod
    def box(cls, x0: float, y0: float, x1: float, y1: float, model: str = "") -> Operation:
        return cls("box", ((float(x0), float(y0)), (float(x1), float(y1))), model=model)

    @classmethod
    def load(cls, mask: np.ndarray) -> Operation:
        buf = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(mask, dtype=np.uint8), "L").save(buf, "PNG")
        return cls("load", mask_png=buf.getvalue())

    def scaled(self, sx: float, sy: float) -> Operation:
        """This operation for the same photo at another size (factors per axis)."""
        if sx == 1.0 and sy == 1.0:
            return self
        pts = tuple((x * sx, y * sy) for x, y in self.points)
        return replace(self, points=pts, radius=self.radius * math.sqrt(sx * sy))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool}
        if self.points:
            out["points"] = [[x, y] for x, y in self.points]
        if self.spec.kind is Kind.BRUSH:
            out.update(radius=self.radius, hardness=self.hardness, edge_aware=self.edge_aware)
        if self.mask_png:
            out["mask_png"] = base64.b64encode(self.mask_png).decode("ascii")
        if self.model:
            out["model"] = self.model
        return out

    @classmethod
    def from_json(cls, data: Any) -> Operation:
        if not isinstance(data, dict) or "tool" not in data:
            raise EditsError("An edit is not an object with a 'tool'.")
        try:
            points = tuple((float(x), float(y)) for x, y in data.get("points", ()))
            mask_png = base64.b64decode(data.get("mask_png", ""), validate=True)
            return cls(
                str(data["tool"]),
                points,
                float(data.get("radius", 0.0)),
                float(data.get("hardness", 1.0)),
                bool(data.get("edge_aware", False)),
                mask_png,
                str(data.get("model", "")),
            )
        except (TypeError, ValueError) as exc:
            raise EditsError(f"An edit could not be read: {exc}.") from exc


# --- pixels ---------------------------------------------------------------------


def _clip_box(x0: float, y0: float, x1: float, y1: float, shape: Sequence[int]) -> Box | None:
    h, w = shape[:2]
    bx0, by0 = max(0, math.floor(x0)), max(0, math.floor(y0))
    bx1, by1 = min(w, math.ceil(x1)), min(h, math.ceil(y1))
    if bx0 >= bx1 or by0 >= by1:
        return None
    return bx0, by0, bx1, by1


# --- brushes --------------------------------------------------------------------


def stroke_coverage(op: Operation, shape: Sequence[int]) -> tuple[np.ndarray, Box] | None:
    """How much of each pixel a brush stroke paints (float32 0..1) within its box.

    1 within ``radius * hardness`` of the stroke's centre line, fading linearly to
    0 at ``radius``; a hard brush (hardness 1) has a one-pixel anti-aliased edge.
    """
    r = op.radius
    xs = [p[0] for p in op.points]
    ys = [p[1] for p in op.points]
    box = _clip_box(min(xs) - r - 1, min(ys) - r - 1, max(xs) + r + 2, max(ys) + r + 2, shape)
    if box is None:
        return None
    x0, y0, x1, y1 = box
    line = np.full((y1 - y0, x1 - x0), 255, np.uint8)
    # Points are continuous coordinates (pixel (i, j) spans [i, i+1) x [j, j+1)), so
    # that scaling them is exact; the pixel nearest a point is floor(point).
    pts = np.floor(np.array(op.points) - (x0, y0)).astype(np.int32)
    if len(pts) == 1:
        cv2.circle(line, (int(pts[0, 0]), int(pts[0, 1])), 0, 0, -1)
    else:
        cv2.polylines(line, [pts.reshape(-1, 1, 2)], False, 0, 1)
    dist = cv2.distanceTransform(line, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
    inner = r * op.hardness
    ramp = max(r - inner, 1.0)
    cover = np.clip((r - dist) / ramp, 0.0, 1.0).astype(np.float32)
    return cover, box


#: Colour clusters per side in the edge-aware brush's colour model.
EDGE_CLUSTERS = 6
#: At most this many samples per side are clustered (an even stride over them).
EDGE_SAMPLES = 4000
#: The least colour noise (standard deviation per channel, 0..1) a cluster is given:
#: no colour in a photo is exact (sensor noise, compression), a drawn one included.
EDGE_NOISE = 0.02
#: Prior share of the pixels under the brush that mix the two sides (an edge, a strand).
EDGE_MIXED = 0.1
#: Prior share of the pixels under the brush whose colour neither side's samples
#: explain (its density: uniform over the RGB cube). Such a pixel gets the plain brush.
EDGE_NOVEL = 0.1
#: Prior share of the side the stroke paints among the pure pixels under the brush:
#: the user aims the stroke, so its side is the likelier (0.5: no lean).
EDGE_INTENT = 0.75
#: How sure (posterior) the colour model must be that a pixel is not purely the side
#: the stroke paints before the brush departs from the plain brush there at all; it
#: departs fully only when sure. Where the sides' colours overlap, the plain brush wins.
EDGE_SURE = 0.5
#: Below this share of the stroke's centre line that the colour model lets the stroke
#: paint (near each pixel), the brush leans towards the plain brush, all the way at 0.
EDGE_AGREE = 0.1


@dataclass(frozen=True)
class _Colours:
    """One side's colour model: a mixture of isotropic Gaussians (0..1 RGB)."""

    centres: np.ndarray  # k x 3
    weights: np.ndarray  # k, summing to 1
    variances: np.ndarray  # k, per channel

    def log_density(self, px: np.ndarray) -> np.ndarray:
        """log p(colour | this side) of each pixel (n x 3)."""
        d2 = _square_distances(px, self.centres)
        terms = (
            np.log(self.weights)
            - 1.5 * np.log(2.0 * np.pi * self.variances)
            - d2 / (2.0 * self.variances)
        )
        return _log_sum_exp(terms)


def _square_distances(px: np.ndarray, centres: np.ndarray) -> np.ndarray:
    return np.maximum(
        (px * px).sum(axis=1)[:, None] - 2.0 * (px @ centres.T) + (centres * centres).sum(axis=1),
        0.0,
    )


def _log_sum_exp(terms: np.ndarray) -> np.ndarray:
    top = terms.max(axis=1)
    return top + np.log(np.exp(terms - top[:, None]).sum(axis=1))


def _clusters(colours: np.ndarray) -> _Colours:
    """Up to :data:`EDGE_CLUSTERS` clusters of a side's colours (k-means, seeded:
    deterministic), each with its share of the samples and its spread."""
    step = max(1, len(colours) // EDGE_SAMPLES)
    data = np.ascontiguousarray(colours[::step], np.float32)
    k = min(EDGE_CLUSTERS, len(data))
    if k < 2:
        found: Any = np.zeros(len(data), np.int32)
        means: Any = data[:1]
    else:
        cv2.setRNGSeed(0)
        criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 10, 1e-3)
        _, found, means = cv2.kmeans(data, k, None, criteria, 1, cv2.KMEANS_PP_CENTERS)  # type: ignore[call-overload, unused-ignore]
    labels = np.asarray(found, np.int32).ravel()
    centres = np.asarray(means, np.float64)
    counts = np.bincount(labels, minlength=len(centres)).astype(np.float64)
    spread = np.bincount(
        labels, weights=((data - centres[labels]) ** 2).sum(axis=1), minlength=len(centres)
    )
    variances = np.maximum(spread / np.maximum(3.0 * counts, 1.0), EDGE_NOISE**2)
    keep = counts > 0
    return _Colours(centres[keep], counts[keep] / counts.sum(), variances[keep])


def _pair_alpha(pixels: np.ndarray, fg: _Colours, bg: _Colours, restore: bool) -> np.ndarray:
    """The expected alpha of each pixel (n x 3, 0..1) under a colour model of four
    explanations: the subject's colours (alpha 1), the background's (alpha 0), a mix
    I = a F + (1 - a) B of a subject and a background cluster (the pair that explains
    it best, as sampling-based matting does: alpha a), and a colour neither side's
    samples explain (uniform density; alpha: the plain brush's, 1 for a restore, 0 for
    an erase). Each explanation's posterior weighs its alpha, so where the two sides'
    colours overlap, or a colour is new to both, the result leans to the plain brush.
    Every pair is scored at once with matrix products, in chunks of pixels."""
    f_c, b_c = fg.centres, bg.centres
    d = (f_c[:, None, :] - b_c[None, :, :]).reshape(-1, 3)  # F - B, one row per pair
    b = np.repeat(b_c[None], len(f_c), axis=0).reshape(-1, 3)  # the pair's B
    dd = np.maximum((d * d).sum(axis=1), 1e-8)
    bd = (b * d).sum(axis=1)
    bb = (b * b).sum(axis=1)
    # A mix lies on the segment F..B, with the pair's noise across it: a 2-D Gaussian
    # across, uniform along (never shorter than the noise itself).
    var = ((fg.variances[:, None] + bg.variances[None, :]) / 2.0).ravel()
    length = np.maximum(np.sqrt(dd), 2.5 * np.sqrt(var))
    pair_prior = (
        np.log(fg.weights[:, None] * bg.weights[None, :]).ravel()
        - np.log(2.0 * np.pi * var)
        - np.log(length)
    )
    pure = 1.0 - EDGE_MIXED - EDGE_NOVEL
    painted, other = pure * EDGE_INTENT, pure * (1.0 - EDGE_INTENT)
    log_priors = np.log([painted, other] if restore else [other, painted])
    log_priors = np.concatenate([log_priors, np.log([EDGE_MIXED, EDGE_NOVEL])])
    out = np.empty(len(pixels), np.float32)
    for i in range(0, len(pixels), 65536):
        px = pixels[i : i + 65536].astype(np.float64)
        proj = px @ d.T - bd  # (I - B) . (F - B)
        a = np.clip(proj / dd, 0.0, 1.0)
        ib = (px * px).sum(axis=1)[:, None] - 2.0 * (px @ b.T) + bb  # |I - B|^2
        err = np.maximum(ib - a * (2.0 * proj - a * dd), 0.0)  # |I - B - a (F - B)|^2
        mixed = pair_prior - err / (2.0 * var)
        best = mixed.argmax(axis=1)
        logs = np.stack(
            [fg.log_density(px), bg.log_density(px), _log_sum_exp(mixed), np.zeros(len(px))],
            axis=1,
        )
        logs += log_priors
        post = np.exp(logs - logs.max(axis=1, keepdims=True))
        post /= post.sum(axis=1, keepdims=True)
        alpha = post[:, 0] + post[:, 2] * a[np.arange(len(px)), best]
        if restore:
            alpha += post[:, 3]
        # How sure the model is that the pixel is not purely the side the stroke paints.
        depart = post[:, 2] + (post[:, 1] if restore else post[:, 0])
        sure = np.clip((depart - EDGE_SURE) / (1.0 - EDGE_SURE), 0.0, 1.0)
        plain = 1.0 if restore else 0.0
        out[i : i + 65536] = plain + sure * (alpha - plain)
    return out


def _edge_target(
    rgb: np.ndarray,
    alpha: np.ndarray,
    cover: np.ndarray,
    centre: np.ndarray,
    restore: bool,
    radius: float,
) -> np.ndarray:
    """Edge-aware alpha under the brush (float 0..1, NaN where the brush does not reach).

    The confident mask around the brush gives colour samples of both sides; the
    colours under the stroke's centre line stand for the side the stroke paints
    only when the mask gives fewer samples of that side than the line covers
    (taking them always would mix in the strands the stroke runs across). Each
    side's samples are clustered, and each pixel under the brush gets the alpha
    the colour model expects of its colour (:func:`_pair_alpha`).

    The centre line is where the user means the stroke to paint. Where the model
    refuses nearly all of it (within a radius of a pixel, it lets the stroke paint
    less than :data:`EDGE_AGREE` of the line), the mask's samples have the colours
    the wrong way round there (a missed part of the subject sampled as background,
    a kept leftover as subject), and the pixel leans to the plain brush's alpha.
    """
    outside = cover <= 0.0
    fg = outside & (alpha >= 242)
    bg = outside & (alpha <= 13)
    if restore and fg.sum() < centre.sum():
        fg |= centre
    elif not restore and bg.sum() < centre.sum():
        bg |= centre
    plain = 1.0 if restore else 0.0
    target = np.full(alpha.shape, np.nan, np.float32)
    # Only where the stroke can change something: an erase lowers, a restore raises.
    under = ~outside & ((alpha < 255) if restore else (alpha > 0))
    if not fg.any() or not bg.any():
        target[under] = plain
        return target
    img = rgb.astype(np.float32) * (1.0 / 255.0)
    judged = under | centre
    model = np.full(alpha.shape, plain, np.float32)
    model[judged] = _pair_alpha(img[judged], _clusters(img[fg]), _clusters(img[bg]), restore)
    # Pixel-by-pixel choices speckle where the two sides' colours are close; a 3 x 3
    # median removes the speckle and keeps edges and one-pixel-wide strands' runs.
    smooth = cv2.medianBlur(np.where(under, np.rint(model * 255.0), alpha).astype(np.uint8), 3)
    edge = smooth[under].astype(np.float32) * (1.0 / 255.0)
    # How much of the centre line near each pixel the model lets the stroke paint.
    agree = (model if restore else 1.0 - model) * centre
    size = 2 * max(1, round(radius)) + 1
    line = cv2.blur(centre.astype(np.float32), (size, size))
    near = cv2.blur(agree.astype(np.float32), (size, size)) / np.maximum(line, 1e-6)
    trust = np.clip(near[under] / EDGE_AGREE, 0.0, 1.0) if EDGE_AGREE > 0 else 1.0
    target[under] = plain + trust * (edge - plain)
    return target


def apply_stroke(
    rgb: np.ndarray, alpha: np.ndarray, op: Operation, restore: bool
) -> tuple[np.ndarray, Box | None]:
    """A brush stroke that paints the mask opaque (``restore``) or transparent; returns
    the new alpha and the box it changed."""
    found = stroke_coverage(op, alpha.shape)
    if found is None:
        return alpha, None
    cover, box = found
    x0, y0, x1, y1 = box
    old = alpha[y0:y1, x0:x1].astype(np.float32)
    if op.edge_aware:
        # Context for the colour model: the brush's box grown by its radius.
        pad = math.ceil(op.radius)
        cb = _clip_box(x0 - pad, y0 - pad, x1 + pad, y1 + pad, alpha.shape)
        assert cb is not None
        cx0, cy0, cx1, cy1 = cb
        ctx_cover = np.zeros((cy1 - cy0, cx1 - cx0), np.float32)
        ctx_cover[y0 - cy0 : y1 - cy0, x0 - cx0 : x1 - cx0] = cover
        # The centre line: the inner quarter of the brush.
        quarter = replace(op, radius=max(op.radius / 4, 1.0), hardness=1.0)
        q = stroke_coverage(quarter, alpha.shape)
        centre = np.zeros_like(ctx_cover, dtype=bool)
        if q is not None:
            qc, (qx0, qy0, qx1, qy1) = q
            centre[qy0 - cy0 : qy1 - cy0, qx0 - cx0 : qx1 - cx0] = qc >= 0.5
        target_ctx = _edge_target(
            rgb[cy0:cy1, cx0:cx1], alpha[cy0:cy1, cx0:cx1], ctx_cover, centre, restore, op.radius
        )
        target = target_ctx[y0 - cy0 : y1 - cy0, x0 - cx0 : x1 - cx0] * 255.0
        target = np.nan_to_num(target, nan=255.0 if restore else 0.0)
        # One-sided: an edge-aware erase only takes away, a restore only adds.
        target = np.maximum(old, target) if restore else np.minimum(old, target)
    else:
        target = np.float32(255.0 if restore else 0.0)
    new = old + cover * (target - old)
    out = alpha.copy()
    out[y0:y1, x0:x1] = np.clip(np.rint(new), 0, 255).astype(np.uint8)
    return out, changed_box(alpha, out, box)


# --- the box --------------------------------------------------------------------

#: Context the network sees around a box, as a fraction of the box's sides: a subject
#: cut exactly at its bounding box touches the crop's borders, which a saliency
#: network reads as "not the subject" (docs/decisions/0007).
BOX_CONTEXT = 0.1


def box_feather(box: Box) -> int:
    """Pixels over which a box's new mask is blended into the old one at its border."""
    x0, y0, x1, y1 = box
    return max(2, round(0.02 * max(x1 - x0, y1 - y0)))


def apply_box(
    rgb: np.ndarray,
    alpha: np.ndarray,
    box: tuple[float, float, float, float],
    segment: Segmenter,
    prompt: Prompter | None = None,
) -> tuple[np.ndarray, Box | None]:
    """The network's mask of the crop replaces the mask inside ``box``, feathered at its
    border. With ``prompt`` (the click model), its mask of the boxed object is made too
    (the box as its prompt, edge-refined as the network's crop is) and whichever of the
    two results sits better on the photo's edges is kept."""

    def crop_of(crop: Box) -> np.ndarray:
        return np.ascontiguousarray(rgb[crop[1] : crop[3], crop[0] : crop[2]])

    made = _boxed(rgb, alpha, box, lambda crop: segment(crop_of(crop)))
    if prompt is None or made[1] is None:
        return made

    def clicked(crop: Box) -> np.ndarray:
        return refine_alpha(crop_of(crop), box_mask(alpha.shape, box, crop, prompt))

    other = _boxed(rgb, alpha, box, clicked)
    return sharper(rgb, alpha, made, other)


def _boxed(
    rgb: np.ndarray,
    alpha: np.ndarray,
    box: tuple[float, float, float, float],
    mask_of: Callable[[Box], np.ndarray],
) -> tuple[np.ndarray, Box | None]:
    """:func:`apply_box` with ``mask_of(crop)`` giving the mask of the crop (the box with
    its context around it)."""
    clipped = _clip_box(*box, alpha.shape)
    if clipped is None:
        return alpha, None
    x0, y0, x1, y1 = clipped
    h, w = y1 - y0, x1 - x0
    mx, my = round(BOX_CONTEXT * w), round(BOX_CONTEXT * h)
    cx0, cy0 = max(0, x0 - mx), max(0, y0 - my)
    cx1, cy1 = min(alpha.shape[1], x1 + mx), min(alpha.shape[0], y1 + my)
    seen = np.asarray(mask_of((cx0, cy0, cx1, cy1)), np.float32)
    crop_mask = seen[y0 - cy0 : y1 - cy0, x0 - cx0 : x1 - cx0]
    feather = box_feather(clipped)
    # Weight of the new mask: 1 inside, ramping to 0 at the box's edges, except at
    # the image's own borders (nothing lies beyond them to blend with).
    yy = np.arange(h, dtype=np.float32)[:, None]
    xx = np.arange(w, dtype=np.float32)[None, :]
    big = np.float32(1e9)
    top = yy + 0.5 if y0 > 0 else big
    bottom = h - yy - 0.5 if y1 < alpha.shape[0] else big
    left = xx + 0.5 if x0 > 0 else big
    right = w - xx - 0.5 if x1 < alpha.shape[1] else big
    edge = np.minimum(np.minimum(top, bottom), np.minimum(left, right))
    weight = np.clip(edge / feather, 0.0, 1.0)
    old = alpha[y0:y1, x0:x1].astype(np.float32)
    new = old + weight * (crop_mask - old)
    out = alpha.copy()
    out[y0:y1, x0:x1] = np.clip(np.rint(new), 0, 255).astype(np.uint8)
    return out, changed_box(alpha, out, clipped)


# --- whole masks ----------------------------------------------------------------


def mask_from_image(img: Image.Image, shape: Sequence[int]) -> np.ndarray:
    """A mask for an image of ``shape`` from a mask image (its grey) or a cutout (its alpha)."""
    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        grey = img.convert("RGBA").getchannel("A")
    else:
        grey = img.convert("L")
    h, w = shape[:2]
    if grey.size != (w, h):
        grey = grey.resize((w, h), Image.Resampling.BICUBIC)
    return np.asarray(grey, dtype=np.uint8).copy()


#: What is opaque to :func:`keep_largest` (its parts are of alpha at least this)...
OPAQUE = 128
#: ... and what joins a pixel to a part: alpha at least this (5 %, the level the
#: edge-aware brush takes for sure background).
JOINED = 13


def keep_largest(alpha: np.ndarray) -> np.ndarray:
    """``alpha`` with only its largest opaque part (alpha >= :data:`OPAQUE`,
    8-connected) and what is joined to it (alpha >= :data:`JOINED`: its soft edge, and
    parts it touches); everything else becomes 0, except the faint fringe (below
    ``JOINED``) within 2 pixels of what is kept. Without an opaque pixel, nothing changes."""
    n, parts, stats, _ = cv2.connectedComponentsWithStats(
        (alpha >= OPAQUE).astype(np.uint8), connectivity=8
    )
    if n <= 1:
        return alpha
    largest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    joined = (alpha >= JOINED).astype(np.uint8)
    _, reach = cv2.connectedComponents(joined, connectivity=8)
    kept = np.isin(reach, np.unique(reach[parts == largest]))
    near = cv2.dilate(kept.astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)
    return np.where(kept | (near & (joined == 0)), alpha, 0).astype(np.uint8)


# --- the tools' apply functions -------------------------------------------------


def _restore(op: Operation, alpha: np.ndarray, ctx: ToolContext) -> tuple[np.ndarray, Box | None]:
    return apply_stroke(ctx.rgb, alpha, op, restore=True)


def _erase(op: Operation, alpha: np.ndarray, ctx: ToolContext) -> tuple[np.ndarray, Box | None]:
    return apply_stroke(ctx.rgb, alpha, op, restore=False)


def _prompt_for(op: Operation, ctx: ToolContext) -> Prompter | None:
    """The click model for an operation made with one (None for one made without)."""
    if not op.model:
        return None
    if ctx.prompt is None:
        raise EditsError(
            f"This {op.tool!r} edit was made with the {op.model} click model, "
            "which is not loaded here.",
            fix=f"Replay these edits where the click model can be obtained "
            f"(`bgremover models pull {op.model}`).",
        )
    return ctx.prompt


def _clicked(add: bool) -> Apply:
    def click(op: Operation, alpha: np.ndarray, ctx: ToolContext) -> tuple[np.ndarray, Box | None]:
        (x, y) = op.points[0]
        made = None
        prompt = _prompt_for(op, ctx)
        if prompt is not None:
            made = learned_click(ctx.rgb, alpha, (x, y), add, tuple(ctx.clicks), prompt)
        classic = apply_click(ctx.rgb, alpha, (x, y), add, tuple(ctx.clicks), ctx.base)
        if made is None:
            made = classic
        elif prompt is not None and confirms(alpha, (x, y), add, ctx.clicks, prompt):
            made = whole(ctx.rgb, alpha, made, classic)
        else:
            # What both results change (docs/decisions/0014).
            made = agreed(ctx.rgb, alpha, made, classic, add, (x, y))
        ctx.clicks.append((x, y, add))
        return made

    return click


def _box(op: Operation, alpha: np.ndarray, ctx: ToolContext) -> tuple[np.ndarray, Box | None]:
    assert ctx.segment is not None  # the engine checks a tool that needs the model has it
    (ax, ay), (bx, by) = op.points
    corners = (min(ax, bx), min(ay, by), max(ax, bx), max(ay, by))
    return apply_box(ctx.rgb, alpha, corners, ctx.segment, _prompt_for(op, ctx))


def _reset(op: Operation, alpha: np.ndarray, ctx: ToolContext) -> tuple[np.ndarray, Box | None]:
    new = ctx.base.copy()
    return new, changed_box(alpha, new)


def _largest(op: Operation, alpha: np.ndarray, ctx: ToolContext) -> tuple[np.ndarray, Box | None]:
    new = keep_largest(alpha)
    return new, changed_box(alpha, new)


def _load(op: Operation, alpha: np.ndarray, ctx: ToolContext) -> tuple[np.ndarray, Box | None]:
    try:
        # Always a PNG (Operation.load writes it), but an edits file may come from anyone:
        # Pillow is allowed no other decoder, so no other format can get in this way.
        img = Image.open(io.BytesIO(op.mask_png), formats=["PNG"])
        img.load()
    except (OSError, ValueError) as exc:
        raise EditsError(f"The loaded mask in these edits could not be decoded: {exc}.") from exc
    new = mask_from_image(img, alpha.shape)
    return new, changed_box(alpha, new)


#: The app's colours for what is drawn before the engine has applied it.
_KEEP_COLOUR = (40, 220, 90, 120)
_DROP_COLOUR = (255, 40, 90, 120)

#: Every tool, in the order the app lists them.
TOOLS: Mapping[str, Tool] = _registry(
    [
        Tool(
            "restore", "B", "Restore",
            "Restore brush: paint over parts of the subject that were removed to bring "
            "them back",
            Kind.BRUSH, _restore, preview=_KEEP_COLOUR, keeps=True,
        ),
        Tool(
            "erase", "X", "Erase",
            "Erase brush: paint over background that was kept to remove it",
            Kind.BRUSH, _erase, preview=_DROP_COLOUR, keeps=False,
        ),
        Tool(
            "add", "A", "Add Click",
            "Add click: click a part that should be kept; the whole region around it is kept",
            Kind.CLICK, _clicked(True), preview=_KEEP_COLOUR, keeps=True,
        ),
        Tool(
            "remove", "R", "Remove Click",
            "Remove click: click a part that should go; the whole region around it is removed",
            Kind.CLICK, _clicked(False), preview=_DROP_COLOUR, keeps=False,
        ),
        Tool(
            "box", "M", "Box",
            "Box: drag a rectangle around the subject; the model looks again at just that "
            "part and its mask replaces the mask inside",
            Kind.BOX, _box, needs_model=True, preview=(255, 255, 255, 40),
        ),
        Tool(
            "reset", "Shift+R", "Re&set to Model's Mask",
            "Back to the model's mask: every edit undone (Undo brings them back)",
            Kind.WHOLE, _reset, restart=Restart.TO_BASE, short="Reset",
        ),
        Tool(
            "largest", "K", "&Keep Largest Region",
            "Keep the largest region: the biggest opaque part of the mask stays, with what "
            "is joined to it; stray specks and other islands are removed",
            Kind.WHOLE, _largest, short="Keep Largest",
        ),
        Tool(
            "load", "Ctrl+L", "&Load Mask…",
            "Replace the mask with one from a file: a mask image, or a cutout's transparency",
            Kind.MASK, _load, restart=Restart.OWN_MASK,
        ),
    ]
)  # fmt: skip
