"""Touch-up: the user's corrections to a mask, as data.

An edit is a list of :class:`Operation` s applied in order to the mask the
user sees (the model's mask, edge-refined when refinement is on, before the
input's own transparency is applied). Points are in the pixel coordinates of
the image the edits were made on (:attr:`Edits.size`); applied to the same
photo at another size they are scaled, so an edit made on a preview replays at
full size on save and the same edits file re-applies after a change of model
or settings (``bgremover remove IMAGE --edits FILE``).

The tools:

* ``restore`` / ``erase``: brush strokes (a polyline with a radius and a
  hardness) that paint the mask opaque / transparent. With ``edge_aware`` the
  stroke follows the photo's edges inside the brush: the confident mask around
  the brush gives colour samples of the subject and of the background (the
  colours under the stroke's centre line stand for the side it paints when the
  mask has too few), and every pixel under the brush gets the alpha of the
  subject/background colour pair that explains its colour best. An edge-aware
  erase only lowers the alpha and a restore only raises it, so one rough erase
  along hair drops the background between the strands and keeps the strands.
* ``add`` / ``remove``: one click changes the whole region it belongs to (see
  regions.py); all clicks since the last reset are hard constraints.
* ``box``: the network runs again on the crop of a rectangle, with a tenth of
  context around it (the subject then fills the model's input, so detail
  improves), and its mask replaces the mask inside the box, blended over a few
  pixels at the box's border.
* ``load``: the whole mask replaced by one from a file (a mask, or a cutout's
  alpha), resized to the image.
* ``reset``: back to the model's mask.

Every operation returns the box of the pixels it changed, so a view redraws
only that; :class:`Editor` keeps those patches for exact undo and redo.

Why the click and box tools work as they do, and what they measured:
docs/decisions/0001 to 0007.
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from PIL import Image

from .errors import EditsError
from .regions import Box, apply_click

__all__ = [
    "BRUSHES",
    "CLICKS",
    "TOOLS",
    "Box",
    "Editor",
    "Edits",
    "Operation",
    "Segmenter",
    "apply_box",
    "apply_edits",
    "apply_operation",
    "load_edits",
]

#: Runs the network on an RGB crop; returns the mask (uint8) at the crop's size.
Segmenter = Callable[[np.ndarray], np.ndarray]

BRUSHES = ("restore", "erase")
CLICKS = ("add", "remove")
TOOLS = (*BRUSHES, *CLICKS, "box", "load", "reset")

FORMAT = "bgremover-edits"
VERSION = 1


@dataclass(frozen=True)
class Operation:
    """One correction. Coordinates are continuous pixel coordinates of the image at
    :attr:`Edits.size`: pixel (i, j) spans x in [i, i+1) and y in [j, j+1)."""

    tool: str
    #: Brushes: the stroke's polyline; clicks: one point; box: two corners.
    points: tuple[tuple[float, float], ...] = ()
    #: Brushes: the radius in pixels.
    radius: float = 0.0
    #: Brushes: 1 = a hard edge, 0 = fully soft (the paint fades from the centre line).
    hardness: float = 1.0
    #: Brushes: follow the photo's edges under the brush.
    edge_aware: bool = False
    #: ``load``: the mask, PNG-encoded (greyscale).
    mask_png: bytes = field(default=b"", repr=False)

    def __post_init__(self) -> None:
        if self.tool not in TOOLS:
            raise EditsError(
                f"Unknown edit tool {self.tool!r}.", fix=f"Use one of: {', '.join(TOOLS)}."
            )
        need = {"add": 1, "remove": 1, "box": 2}.get(self.tool)
        if need is not None and len(self.points) != need:
            raise EditsError(f"A {self.tool!r} edit needs {need} point(s).")
        if self.tool in BRUSHES and (not self.points or self.radius <= 0):
            raise EditsError("A brush stroke needs at least one point and a radius above 0.")
        if self.tool == "load" and not self.mask_png:
            raise EditsError("A 'load' edit needs the mask it loads.")
        if not 0.0 <= self.hardness <= 1.0:
            raise EditsError("A brush's hardness is between 0 and 1.")

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
    def click(cls, x: float, y: float, add: bool = True) -> Operation:
        return cls("add" if add else "remove", ((float(x), float(y)),))

    @classmethod
    def box(cls, x0: float, y0: float, x1: float, y1: float) -> Operation:
        return cls("box", ((float(x0), float(y0)), (float(x1), float(y1))))

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
        if self.tool in BRUSHES:
            out.update(radius=self.radius, hardness=self.hardness, edge_aware=self.edge_aware)
        if self.mask_png:
            out["mask_png"] = base64.b64encode(self.mask_png).decode("ascii")
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
            )
        except (TypeError, ValueError) as exc:
            raise EditsError(f"An edit could not be read: {exc}.") from exc


@dataclass(frozen=True)
class Edits:
    """The corrections made to one photo, in order, and the size they were made at."""

    #: (width, height) of the image the operations' coordinates refer to.
    size: tuple[int, int]
    operations: tuple[Operation, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.operations)

    def then(self, op: Operation) -> Edits:
        return replace(self, operations=(*self.operations, op))

    def effective(self) -> Edits:
        """The same result with fewer operations: what precedes the last reset or load is moot."""
        ops = self.operations
        last = max((i for i, op in enumerate(ops) if op.tool in ("reset", "load")), default=-1)
        kept = ops[last:] if last >= 0 and ops[last].tool == "load" else ops[last + 1 :]
        return replace(self, operations=tuple(kept))

    def for_size(self, width: int, height: int) -> tuple[Operation, ...]:
        """The operations scaled to the same photo at width x height."""
        sx, sy = width / self.size[0], height / self.size[1]
        return tuple(op.scaled(sx, sy) for op in self.operations)

    def to_json(self) -> str:
        data = {
            "format": FORMAT,
            "version": VERSION,
            "size": list(self.size),
            "operations": [op.to_json() for op in self.effective().operations],
        }
        return json.dumps(data, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Edits:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise EditsError(f"This is not an edits file (JSON): {exc}.") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise EditsError("This JSON file is not a bgremover edits file.")
        if data.get("version") != VERSION:
            raise EditsError(
                f"This edits file is version {data.get('version')!r}; this bgremover "
                f"reads version {VERSION}.",
                fix="Update bgremover to apply it.",
            )
        try:
            width, height = (int(v) for v in data["size"])
        except (KeyError, TypeError, ValueError) as exc:
            raise EditsError("The edits file does not say the image size it was made at.") from exc
        if width <= 0 or height <= 0:
            raise EditsError("The edits file's image size is not positive.")
        ops = data.get("operations", [])
        if not isinstance(ops, list):
            raise EditsError("The edits file's 'operations' is not a list.")
        return cls((width, height), tuple(Operation.from_json(op) for op in ops))


def load_edits(path: Path) -> Edits:
    """Read an edits file, with a clear message when that fails."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EditsError(
            f"Could not read the edits file {path}: {exc}.",
            fix="Give the path of a file saved with Touch Up > Export Edits in the app.",
        ) from exc
    return Edits.from_json(text)


def check_fits(edits: Edits, width: int, height: int) -> None:
    """Refuse edits made on a photo of another shape (a wrong file for this image)."""
    ew, eh = edits.size
    if abs(ew / eh - width / height) > 0.01 * (width / height) + 2.0 / min(height, eh):
        raise EditsError(
            f"These edits were made on a {ew}×{eh} image; this one is {width}×{height}, "
            "another shape.",
            fix="Apply an edits file to the photo it was made on.",
        )


# --- applying -----------------------------------------------------------------


def _clip_box(x0: float, y0: float, x1: float, y1: float, shape: Sequence[int]) -> Box | None:
    h, w = shape[:2]
    bx0, by0 = max(0, math.floor(x0)), max(0, math.floor(y0))
    bx1, by1 = min(w, math.ceil(x1)), min(h, math.ceil(y1))
    if bx0 >= bx1 or by0 >= by1:
        return None
    return bx0, by0, bx1, by1


def _changed(old: np.ndarray, new: np.ndarray, box: Box | None) -> Box | None:
    """The tight box of pixels that differ, searched within ``box``."""
    if box is None:
        return None
    x0, y0, x1, y1 = box
    diff = old[y0:y1, x0:x1] != new[y0:y1, x0:x1]
    rows = np.flatnonzero(diff.any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero(diff.any(axis=0))
    return x0 + int(cols[0]), y0 + int(rows[0]), x0 + int(cols[-1]) + 1, y0 + int(rows[-1]) + 1


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


def _clusters(colours: np.ndarray) -> np.ndarray:
    """Up to :data:`EDGE_CLUSTERS` representative colours (k-means, seeded: deterministic)."""
    step = max(1, len(colours) // EDGE_SAMPLES)
    data = np.ascontiguousarray(colours[::step], np.float32)
    k = min(EDGE_CLUSTERS, len(data))
    if k < 2:
        return data
    cv2.setRNGSeed(0)
    criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 10, 1e-3)
    _, _, centres = cv2.kmeans(data, k, None, criteria, 1, cv2.KMEANS_PP_CENTERS)  # type: ignore[call-overload, unused-ignore]
    return np.asarray(centres, np.float32)


def _pair_alpha(pixels: np.ndarray, fg: np.ndarray, bg: np.ndarray) -> np.ndarray:
    """Alpha of each pixel from the foreground/background colour pair that explains it
    best (I = a F + (1 - a) B with the least residual), as sampling-based matting does.
    Every pair is scored at once with matrix products, in chunks of pixels."""
    d = (fg[:, None, :] - bg[None, :, :]).reshape(-1, 3)  # F - B, one row per pair
    b = np.repeat(bg[None], len(fg), axis=0).reshape(-1, 3)  # the pair's B
    dd = np.maximum((d * d).sum(axis=1), 1e-4)
    bd = (b * d).sum(axis=1)
    bb = (b * b).sum(axis=1)
    out = np.empty(len(pixels), np.float32)
    for i in range(0, len(pixels), 65536):
        px = pixels[i : i + 65536]
        proj = px @ d.T - bd  # (I - B) . (F - B)
        a = np.clip(proj / dd, 0.0, 1.0)
        ib = (px * px).sum(axis=1)[:, None] - 2.0 * (px @ b.T) + bb  # |I - B|^2
        err = ib - a * (2.0 * proj - a * dd)  # |I - B - a (F - B)|^2
        out[i : i + 65536] = a[np.arange(len(px)), err.argmin(axis=1)]
    return out


def _edge_target(
    rgb: np.ndarray, alpha: np.ndarray, cover: np.ndarray, centre: np.ndarray, restore: bool
) -> np.ndarray:
    """Edge-aware alpha under the brush (float 0..1, NaN where the brush does not reach).

    The confident mask around the brush gives colour samples of both sides; the
    colours under the stroke's centre line stand for the side the stroke paints
    only when the mask gives fewer samples of that side than the line covers
    (taking them always would mix in the strands the stroke runs across). Each
    side's samples are clustered, and each pixel under the brush gets the alpha of
    the foreground/background pair that explains its colour best.
    """
    outside = cover <= 0.0
    fg = outside & (alpha >= 242)
    bg = outside & (alpha <= 13)
    if restore and fg.sum() < centre.sum():
        fg |= centre
    elif not restore and bg.sum() < centre.sum():
        bg |= centre
    target = np.full(alpha.shape, np.nan, np.float32)
    # Only where the stroke can change something: an erase lowers, a restore raises.
    under = ~outside & ((alpha < 255) if restore else (alpha > 0))
    if not fg.any() or not bg.any():
        target[under] = 1.0 if restore else 0.0
        return target
    img = rgb.astype(np.float32) * (1.0 / 255.0)
    target[under] = _pair_alpha(img[under], _clusters(img[fg]), _clusters(img[bg]))
    # Pixel-by-pixel choices speckle where the two sides' colours are close; a 3 x 3
    # median removes the speckle and keeps edges and one-pixel-wide strands' runs.
    smooth = cv2.medianBlur(np.where(under, np.rint(target * 255.0), alpha).astype(np.uint8), 3)
    target[under] = smooth[under].astype(np.float32) * (1.0 / 255.0)
    return target


def apply_stroke(
    rgb: np.ndarray, alpha: np.ndarray, op: Operation
) -> tuple[np.ndarray, Box | None]:
    """A restore or erase stroke; returns the new alpha and the box it changed."""
    found = stroke_coverage(op, alpha.shape)
    if found is None:
        return alpha, None
    cover, box = found
    x0, y0, x1, y1 = box
    old = alpha[y0:y1, x0:x1].astype(np.float32)
    restore = op.tool == "restore"
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
            rgb[cy0:cy1, cx0:cx1], alpha[cy0:cy1, cx0:cx1], ctx_cover, centre, restore
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
    return out, _changed(alpha, out, box)


#: Context the network sees around a box, as a fraction of the box's sides: a subject
#: cut exactly at its bounding box touches the crop's borders, which a saliency
#: network reads as "not the subject" (docs/decisions/0007).
BOX_CONTEXT = 0.1


def box_feather(box: Box) -> int:
    """Pixels over which a box's new mask is blended into the old one at its border."""
    x0, y0, x1, y1 = box
    return max(2, round(0.02 * max(x1 - x0, y1 - y0)))


def apply_box(
    rgb: np.ndarray, alpha: np.ndarray, box: tuple[float, float, float, float], segment: Segmenter
) -> tuple[np.ndarray, Box | None]:
    """The network's mask of the crop replaces the mask inside ``box``, feathered at its border."""
    clipped = _clip_box(*box, alpha.shape)
    if clipped is None:
        return alpha, None
    x0, y0, x1, y1 = clipped
    h, w = y1 - y0, x1 - x0
    mx, my = round(BOX_CONTEXT * w), round(BOX_CONTEXT * h)
    cx0, cy0 = max(0, x0 - mx), max(0, y0 - my)
    cx1, cy1 = min(alpha.shape[1], x1 + mx), min(alpha.shape[0], y1 + my)
    seen = np.asarray(segment(np.ascontiguousarray(rgb[cy0:cy1, cx0:cx1])), np.float32)
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
    return out, _changed(alpha, out, clipped)


def _load_mask(op: Operation, shape: Sequence[int]) -> np.ndarray:
    try:
        # Always a PNG (Operation.load writes it), but an edits file may come from anyone:
        # Pillow is allowed no other decoder, so no other format can get in this way.
        img = Image.open(io.BytesIO(op.mask_png), formats=["PNG"])
        img.load()
    except (OSError, ValueError) as exc:
        raise EditsError(f"The loaded mask in these edits could not be decoded: {exc}.") from exc
    return mask_from_image(img, shape)


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


@dataclass
class _Context:
    """What applying an operation needs besides the mask."""

    rgb: np.ndarray
    base: np.ndarray
    segment: Segmenter | None
    #: Clicks since the last reset or load: (x, y, add), oldest first.
    clicks: list[tuple[float, float, bool]] = field(default_factory=list)


def apply_operation(
    op: Operation, alpha: np.ndarray, ctx: _Context
) -> tuple[np.ndarray, Box | None]:
    """One operation (already at this image's scale) on ``alpha``; returns (new, changed box)."""
    if op.tool in BRUSHES:
        return apply_stroke(ctx.rgb, alpha, op)
    if op.tool in CLICKS:
        (x, y), add = op.points[0], op.tool == "add"
        new, box = apply_click(ctx.rgb, alpha, (x, y), add, tuple(ctx.clicks), ctx.base)
        ctx.clicks.append((x, y, add))
        return new, box
    if op.tool == "box":
        if ctx.segment is None:
            raise EditsError("A box edit needs the model, which is not loaded here.")
        (ax, ay), (bx, by) = op.points
        return apply_box(
            ctx.rgb, alpha, (min(ax, bx), min(ay, by), max(ax, bx), max(ay, by)), ctx.segment
        )
    ctx.clicks.clear()
    new = ctx.base.copy() if op.tool == "reset" else _load_mask(op, alpha.shape)
    return new, _changed(alpha, new, (0, 0, alpha.shape[1], alpha.shape[0]))


def apply_edits(
    edits: Edits, rgb: np.ndarray, base: np.ndarray, segment: Segmenter | None = None
) -> np.ndarray:
    """The mask after ``edits``, replayed at the size of ``rgb`` on the mask ``base``."""
    height, width = base.shape
    check_fits(edits, width, height)
    ctx = _Context(rgb, base, segment)
    alpha = base
    for op in edits.effective().for_size(width, height):
        alpha, _ = apply_operation(op, alpha, ctx)
    return alpha


@dataclass
class _Step:
    op: Operation
    box: Box | None
    before: np.ndarray | None
    after: np.ndarray | None


class Editor:
    """Edits being made on one photo: apply, undo and redo, with exact patches.

    ``rgb`` and ``base`` are the photo and the mask the edits start from, at the
    size the user works on; operations are given in those pixel coordinates.
    """

    def __init__(
        self,
        rgb: np.ndarray,
        base: np.ndarray,
        edits: Edits | None = None,
        segment: Segmenter | None = None,
    ) -> None:
        height, width = base.shape
        self.rgb = rgb
        self.base = base
        self.segment = segment
        self.size = (width, height)
        self.alpha = base
        self._ctx = _Context(rgb, base, segment)
        self._done: list[_Step] = []
        self._undone: list[_Step] = []
        if edits:
            check_fits(edits, width, height)
            for op in edits.for_size(width, height):
                self._apply(op)

    @property
    def edits(self) -> Edits:
        """The operations in effect (undone ones left out), in this image's coordinates."""
        return Edits(self.size, tuple(step.op for step in self._done))

    @property
    def can_undo(self) -> bool:
        return bool(self._done)

    @property
    def can_redo(self) -> bool:
        return bool(self._undone)

    def _apply(self, op: Operation) -> Box | None:
        new, box = apply_operation(op, self.alpha, self._ctx)
        before = after = None
        if box is not None:
            x0, y0, x1, y1 = box
            before = self.alpha[y0:y1, x0:x1].copy()
            after = new[y0:y1, x0:x1].copy()
        self.alpha = new
        self._done.append(_Step(op, box, before, after))
        return box

    def apply(self, op: Operation) -> Box | None:
        """Apply ``op``; returns the box it changed (None when nothing changed)."""
        box = self._apply(op)
        self._undone.clear()
        return box

    def _patch(self, box: Box | None, pixels: np.ndarray | None) -> None:
        if box is None or pixels is None:
            return
        x0, y0, x1, y1 = box
        alpha = self.alpha.copy()
        alpha[y0:y1, x0:x1] = pixels
        self.alpha = alpha

    def _rebuild_clicks(self) -> None:
        self._ctx.clicks.clear()
        for step in self._done:
            if step.op.tool in ("reset", "load"):
                self._ctx.clicks.clear()
            elif step.op.tool in CLICKS:
                (x, y) = step.op.points[0]
                self._ctx.clicks.append((x, y, step.op.tool == "add"))

    def undo(self) -> Box | None:
        """Take back the last operation, bit for bit; returns the box that changed."""
        if not self._done:
            return None
        step = self._done.pop()
        self._patch(step.box, step.before)
        self._undone.append(step)
        self._rebuild_clicks()
        return step.box

    def redo(self) -> Box | None:
        """Apply again the last operation undone; returns the box that changed."""
        if not self._undone:
            return None
        step = self._undone.pop()
        self._patch(step.box, step.after)
        self._done.append(step)
        self._rebuild_clicks()
        return step.box
