"""Turning an image and its alpha into what the user saves.

One module because layout and layers share the strip loop: the preview, Save and a
batch must place every row identically, so the steps are kept beside each other.

One frozen :class:`ComposeOptions` describes an output: the cutout, its mask, or
the subject on a new background (a colour, an image, a blur of the photo's own
background), cropped to the subject, placed on a canvas, with a soft shadow and an
outline, and how the file is encoded. The app's preview, its Save and Copy, the
command line and batches all go through :func:`compose_strips`, so they agree
pixel for pixel.

The work is in three steps:

1. **Layout** (:func:`layout`): which part of the photo is shown, at what scale, on
   an output of what size. It is decided from the alpha's bounding box alone.
2. **Layers** at the output's size: the background, the shadow (drawn from the
   subject's silhouette), the outline, the subject.
3. **Flattening** a strip of rows at a time with the "over" operator, so a
   12-megapixel output never needs a whole floating-point copy.

Outputs that need no layers (a cutout, a mask, a solid colour) keep their exact
integer fast paths.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

import cv2
import numpy as np

from ..errors import UsageError
from ..files.imaging import MAX_MEGAPIXELS_ENV, default_max_megapixels
from ..mask.subject import Subject, find_subject, subject_box
from .options import (
    BLUR,
    FITS,
    OUTLINE_WIDTH,
    POSITIONS,
    RGBA,
    SIDE,
    SWITCHES,
    Length,
    Outline,
    SchemaSwitches,
    Shadow,
)
from .options import OPTIONS as _OPTIONS

#: A canvas that enlarges the subject more than this many times gets a note (it will
#: look soft: a 100-pixel subject on a 2000-pixel square is a blur).
ENLARGE_NOTE = 2.0
#: The blur of the photo's own background, strength 1: a Gaussian whose sigma is this
#: fraction of the image's long side (a portrait lens's look at web sizes).
BLUR_SIGMA = 0.012
#: The long side, in pixels, at which the blurred background is computed: a blur this
#: wide has no detail a larger working size would keep.
BLUR_WORK = 640


@dataclass(frozen=True)
class ComposeOptions(SchemaSwitches):
    """How a result becomes an output image: every export option, in one object.

    The options and their values are defined in :mod:`bgremover.export.options` (one record
    each). Each switch of :data:`bgremover.export.options.SWITCHES` (crop, lossless...) is a
    bool field of its name, inherited from :class:`~bgremover.export.options.SchemaSwitches`;
    the other fields are below. Give the fields by keyword.
    """

    #: Write the alpha mask as a greyscale image instead of a cutout (the layout applies).
    mask_only: bool = False
    #: A solid RGBA colour under the subject (and under a background image's bars).
    background: RGBA | None = None
    #: An image file under the subject; its own EXIF orientation is applied.
    background_image: str | None = None
    #: How the background image covers the output (:data:`FITS`).
    background_fit: str = FITS[0]
    #: Blur the photo's own background, with the subject taken out, at this strength.
    blur: float | None = None
    #: Space around the subject: with crop, added around its box (a percentage of the
    #: box's long side); on a canvas, kept free at each side (of the canvas's short side).
    margin: Length = field(default_factory=Length)
    #: A canvas of exactly this size (width, height), the subject scaled to fit it.
    canvas: tuple[int, int] | None = None
    #: A canvas of this aspect ratio (width, height), as small as holds the subject.
    aspect: tuple[int, int] | None = None
    #: Where the subject sits on a canvas (:data:`POSITIONS`).
    position: str = POSITIONS[0]
    #: The output's long side at most this many pixels (scaled down, never up).
    max_size: int | None = None
    shadow: Shadow | None = None
    outline: Outline | None = None
    #: Lossy encoding quality 1-100 (JPEG, WebP); None: the format's default.
    quality: int | None = None

    def __post_init__(self) -> None:
        _check(self)

    @property
    def opaque(self) -> bool:
        """Whether every output pixel is opaque (a format without alpha can hold it)."""
        if self.mask_only:
            return True
        if self.blur is not None:
            return True
        colour = self.background is not None and self.background[3] >= 255
        if self.background_image is not None:
            return colour or (self.background_fit != "fit" and _image_opaque(self.background_image))
        return colour

    @property
    def channels(self) -> int:
        """1 for a mask, 3 for an opaque output, 4 for one with transparency."""
        return 1 if self.mask_only else 3 if self.opaque else 4

    @property
    def reshapes(self) -> bool:
        """Whether the output's size or framing differs from the photo's."""
        return (
            self.crop
            or self.canvas is not None
            or self.aspect is not None
            or (self.max_size is not None)
        )

    @property
    def layered(self) -> bool:
        """Whether the output needs the general layer stack (not a fast path)."""
        return (
            self.background_image is not None
            or self.blur is not None
            or self.shadow is not None
            or self.outline is not None
        )


def _check(o: ComposeOptions) -> None:
    """Options that cannot make an image are refused with what to do instead (the ranges
    are :mod:`bgremover.export.options`'s: a record's ``range`` is the check of its field)."""

    def fail(message: str, fix: str) -> None:
        raise UsageError(message, fix=fix)

    for option in _OPTIONS.values():
        value = getattr(o, option.key, None)
        if option.range is not None and value is not None and value not in option.range:
            fail(
                f"{option.label.rstrip(':')} {value} is out of range.",
                f"Use {option.range.words()}.",
            )
    _OPTIONS["background_fit"].check_choice(o.background_fit, "background fit")
    _OPTIONS["position"].check_choice(o.position, "position")
    if o.blur is not None and o.background_image is not None:
        fail(
            "A background can be a blur of the photo or an image, not both.",
            "Choose one background.",
        )
    if o.blur is not None and o.blur not in BLUR:
        fail(
            f"Blur strength {o.blur:g} is out of range.",
            f"Use a strength above {BLUR.low:g}, up to {BLUR.high:g}.",
        )
    if o.canvas is not None and o.aspect is not None:
        fail("A canvas has a size or an aspect ratio, not both.", "Give one of them.")
    for name, pair in (("canvas", o.canvas), ("aspect ratio", o.aspect)):
        if pair is not None and not (min(pair) in SIDE and max(pair) in SIDE):
            fail(
                f"The {name} {pair[0]}x{pair[1]} is not a usable size.",
                f"Use {SIDE.low:g} to {SIDE.high:g}.",
            )
    if o.margin.value < 0:
        fail(f"The margin {o.margin} is negative.", "Use 0 or more.")
    if o.margin.value and not (o.crop or o.canvas or o.aspect):
        fail(
            f"A margin ({o.margin}) needs a crop or a canvas to apply to.",
            "Add crop, or a canvas size or ratio.",
        )
    if o.margin.percent and o.margin.value >= 50 and (o.canvas or o.aspect):
        fail(
            f"A margin of {o.margin} on each side leaves no room for the subject.",
            "Use a margin below 50%.",
        )
    if o.canvas is not None:
        free = min(o.canvas) - 2 * o.margin.pixels(min(o.canvas))
        if free < 1:
            fail(
                f"The canvas {o.canvas[0]}x{o.canvas[1]} is too small for a margin of "
                f"{o.margin} on each side.",
                "Use a larger canvas or a smaller margin.",
            )
        # A canvas's size does not depend on the photo's (any will do): refused here,
        # before any work.
        size = "{}x{}".format(*o.canvas)
        check_output_size(largest_output(1, 1, o), default_max_megapixels(), size)
    if o.outline is not None and o.outline.width not in OUTLINE_WIDTH:
        fail(
            f"An outline of {o.outline.width:g} px is out of range.",
            f"Use 1 to {OUTLINE_WIDTH.high:g} px.",
        )
    if o.shadow is not None and not (0 <= o.shadow.opacity <= 1 and o.shadow.blur >= 0):
        fail("The shadow's opacity must be 0 to 1 and its blur 0 or more.", "Correct them.")
    if o.background_image is not None and not os.path.isfile(o.background_image):
        fail(
            f"The background image {o.background_image} does not exist.",
            "Give the path of an image file.",
        )


# -- Layout ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Where the photo lands on the output.

    The output of ``size`` (width, height) pixels shows the photo's region ``box``
    (x0, y0, x1, y1, in photo pixels; it may reach past the photo's edges, which
    shows as transparent) at ``scale`` output pixels per photo pixel.
    """

    size: tuple[int, int]
    box: tuple[float, float, float, float]
    scale: float

    @classmethod
    def whole(cls, width: int, height: int) -> Layout:
        return cls((width, height), (0.0, 0.0, float(width), float(height)), 1.0)

    def is_whole(self, width: int, height: int) -> bool:
        return self == Layout.whole(width, height)

    def to_output(self, x: float, y: float) -> tuple[float, float]:
        """A photo point's place on the output."""
        return (x - self.box[0]) * self.scale, (y - self.box[1]) * self.scale


def layout(alpha: np.ndarray, options: ComposeOptions, subject: Subject | None = None) -> Layout:
    """The layout of ``options`` for a photo with this alpha (see :class:`Layout`).

    With crop, the content is the subject's box (the whole photo when there is no
    subject; ``subject`` is :func:`find_subject`'s answer when the caller has it); on a
    canvas it is scaled to fit inside the margin, centred or standing on the bottom
    margin; ``max_size`` then scales the whole output down.
    """
    height, width = alpha.shape[:2]
    if not options.reshapes:
        return Layout.whole(width, height)
    if options.crop and subject is None:
        subject = find_subject(alpha)
    found = subject.box if subject is not None and options.crop else None
    return framed(width, height, found, options)


def framed(
    width: int,
    height: int,
    found: tuple[int, int, int, int] | None,
    options: ComposeOptions,
    capped: bool = True,
) -> Layout:
    """The layout of ``options`` for a ``width`` x ``height`` photo whose content is the
    box ``found`` (the subject's, with crop; None: the whole photo); without ``capped``,
    before ``max_size`` scales it down."""
    x0, y0, x1, y1 = found if found is not None else (0, 0, width, height)
    bw, bh = x1 - x0, y1 - y0
    margin = options.margin
    cw: float
    ch: float
    if options.canvas is not None or options.aspect is not None:
        if options.canvas is not None:
            cw, ch = options.canvas
            m = margin.pixels(min(cw, ch))
            scale = min((cw - 2 * m) / bw, (ch - 2 * m) / bh)
        else:
            rw, rh = options.aspect  # type: ignore[misc]
            ratio = rw / rh
            if margin.percent:  # m = p·min(W, H) = p·k·H with k = min(ratio, 1)
                pk = margin.value / 100.0 * min(ratio, 1.0)
                ch = max(bh / (1 - 2 * pk), bw / (ratio - 2 * pk) if ratio > 2 * pk else math.inf)
            else:
                ch = max(bh + 2 * margin.value, (bw + 2 * margin.value) / ratio)
            if not math.isfinite(ch):
                raise UsageError(
                    f"A margin of {margin} leaves no room on a {rw}:{rh} canvas.",
                    fix="Use a smaller margin.",
                )
            ch = math.ceil(ch - 1e-9)
            cw = max(1, round(ch * ratio))
            m = margin.pixels(min(cw, ch))
            scale = 1.0
        placed_w, placed_h = bw * scale, bh * scale
        left = (cw - placed_w) / 2
        top = ch - m - placed_h if options.position == "bottom" else (ch - placed_h) / 2
        box_x0, box_y0 = x0 - left / scale, y0 - top / scale
    elif options.crop:
        m = margin.pixels(max(bw, bh))
        cw, ch = bw + 2 * m, bh + 2 * m
        scale = 1.0
        box_x0, box_y0 = x0 - m, y0 - m
        cw, ch = math.ceil(cw - 1e-9), math.ceil(ch - 1e-9)
    else:
        cw, ch, scale, box_x0, box_y0 = width, height, 1.0, 0.0, 0.0
    if capped and options.max_size is not None and max(cw, ch) > options.max_size:
        k = options.max_size / max(cw, ch)
        cw, ch = max(1, round(cw * k)), max(1, round(ch * k))
        scale *= k
    cw, ch = int(cw), int(ch)
    return Layout((cw, ch), (box_x0, box_y0, box_x0 + cw / scale, box_y0 + ch / scale), scale)


def largest_output(width: int, height: int, options: ComposeOptions) -> int:
    """The most pixels ``options`` can make of a ``width`` x ``height`` photo, whatever
    its subject: known before the photo is read. Every size grows with the subject's
    box (a crop's margin, a ratio's canvas), so the whole photo as the box is the
    largest, and a size limit caps the long side (a square at most)."""
    if not options.reshapes:
        return width * height
    cw, ch = framed(width, height, None, options, capped=False).size
    pixels = cw * ch
    return pixels if options.max_size is None else min(pixels, options.max_size**2)


def check_output_size(pixels: int, limit_megapixels: float, size: str = "") -> None:
    """Refuse, before it is made, an output of more than ``limit_megapixels`` (the
    limit every image read has): a small photo with a large margin or canvas would
    otherwise take the machine's memory. ``size`` names it ("60240x60184")."""
    if pixels <= limit_megapixels * 1e6:
        return
    made = f"{size}, " if size else ""
    raise UsageError(
        f"The output would be {made}{pixels / 1e6:.4g} megapixels: over the limit of "
        f"{limit_megapixels:g} megapixels on any image bgremover makes, which keeps its "
        "memory bounded.",
        fix="Use a smaller margin, canvas or size (max_size). The limit is the one on "
        f"images read: --max-megapixels or {MAX_MEGAPIXELS_ENV}.",
    )


@dataclass(frozen=True)
class Enlarged:
    """A canvas that enlarges the subject (or the whole photo, without crop) more than
    ENLARGE_NOTE times: the output will look soft."""

    #: Output pixels per photo pixel.
    scale: float
    #: The subject's (or photo's) width and height in the photo, in pixels.
    subject: tuple[int, int]
    #: The canvas's width and height.
    canvas: tuple[int, int]
    #: Whether it is the subject's box (crop) or the whole photo that is enlarged.
    cropped: bool

    def words(self) -> str:
        """What happened, why it matters and what to do, in one line."""
        (w, h), (cw, ch) = self.subject, self.canvas
        what = "the subject" if self.cropped else "the photo"
        k = ENLARGE_NOTE / self.scale
        sharp = f"{max(1, math.floor(cw * k))}x{max(1, math.floor(ch * k))}"
        return (
            f"{what} is {w}x{h} px and is enlarged {self.scale:.1f}x to fill the {cw}x{ch} "
            f"canvas, so it will look soft. Use a larger photo, or a canvas of at most "
            f"{sharp} px (enlarged {ENLARGE_NOTE:g}x)."
        )


def enlargement(
    alpha: np.ndarray, options: ComposeOptions, subject: Subject | None = None
) -> Enlarged | None:
    """How much a canvas of ``options`` enlarges this photo's subject, when it is more
    than ENLARGE_NOTE times; None otherwise. Only a canvas of a given size enlarges: a
    ratio, a crop and a size limit never do."""
    if options.canvas is None:
        return None
    if options.crop and subject is None:
        subject = find_subject(alpha)
    lay = layout(alpha, options, subject)
    if lay.scale <= ENLARGE_NOTE:
        return None
    height, width = alpha.shape[:2]
    box = subject.box if subject is not None and options.crop else None
    x0, y0, x1, y1 = box if box is not None else (0, 0, width, height)
    return Enlarged(lay.scale, (x1 - x0, y1 - y0), lay.size, box is not None)


def place(plane: np.ndarray, lay: Layout, replicate: bool = False, factor: float = 1.0):
    """``plane`` (a photo-sized array, or one ``factor`` times its size) on the output.

    Pixels past the photo's edges are 0 (transparent), or the nearest edge pixel with
    ``replicate`` (a blurred background reaches to the canvas's edges). The part that
    shows is resized once (area averaging down, cubic up) and put at its place,
    rounded to the pixel; at scale 1 the pixels are copied exactly.
    """
    height, width = plane.shape[:2]
    out_w, out_h = lay.size
    x0, y0 = lay.box[0] * factor, lay.box[1] * factor
    scale = lay.scale / factor
    if factor == 1.0 and lay.is_whole(width, height):
        return plane
    if factor == 1.0 and scale == 1.0 and not replicate:
        return _shifted_rows(plane, lay)(0, out_h)
    # The photo's whole pixels that show, and where they land.
    sx0, sy0 = max(0, math.floor(x0)), max(0, math.floor(y0))
    sx1 = min(width, math.ceil(x0 + out_w / scale))
    sy1 = min(height, math.ceil(y0 + out_h / scale))
    dx0, dy0 = round((sx0 - x0) * scale), round((sy0 - y0) * scale)
    dx1, dy1 = round((sx1 - x0) * scale), round((sy1 - y0) * scale)
    shape = (out_h, out_w, *plane.shape[2:])
    if sx1 <= sx0 or sy1 <= sy0 or dx1 <= max(0, dx0) or dy1 <= max(0, dy0):
        return np.zeros(shape, plane.dtype)  # nothing of the photo shows
    region = plane[sy0:sy1, sx0:sx1]
    if (dx1 - dx0, dy1 - dy0) != (sx1 - sx0, sy1 - sy0):
        shrink = scale < 1.0
        region = cv2.resize(
            region,
            (dx1 - dx0, dy1 - dy0),
            interpolation=cv2.INTER_AREA if shrink else cv2.INTER_CUBIC,
        )
    # What falls past the output's edges (rounding, or a box inside the photo) is cut.
    cut_x0, cut_y0 = max(0, -dx0), max(0, -dy0)
    cut_x1 = region.shape[1] - max(0, dx1 - out_w)
    cut_y1 = region.shape[0] - max(0, dy1 - out_h)
    region = np.ascontiguousarray(region[cut_y0:cut_y1, cut_x0:cut_x1])
    left, top = max(0, dx0), max(0, dy0)
    right, bottom = out_w - left - region.shape[1], out_h - top - region.shape[0]
    if (left, top, right, bottom) == (0, 0, 0, 0):
        return region
    border = cv2.BORDER_REPLICATE if replicate else cv2.BORDER_CONSTANT
    out = cv2.copyMakeBorder(region, top, bottom, left, right, border, value=0)
    return out.reshape(shape)


def placed_rows(plane: np.ndarray, lay: Layout):
    """``place(plane, lay)`` a strip at a time: ``rows(y, z)`` gives the output's rows
    y to z. At scale 1 (a crop, a margin) they are cut from the photo as they are asked
    for, so no output-sized copy of a 12-megapixel photo is made; scaled, the placed
    plane is made once (it is then at most the canvas's size)."""
    height, width = plane.shape[:2]
    if lay.is_whole(width, height):
        return lambda y, z: plane[y:z]
    if lay.scale == 1.0:
        return _shifted_rows(plane, lay)
    placed = place(plane, lay)
    return lambda y, z: placed[y:z]


def _shifted_rows(plane: np.ndarray, lay: Layout):
    """Rows of ``plane`` moved by the layout's offset (rounded to the pixel), scale 1."""
    height, width = plane.shape[:2]
    out_w = lay.size[0]
    sx, sy = math.floor(lay.box[0] + 0.5), math.floor(lay.box[1] + 0.5)
    xs0, xs1 = max(0, sx), min(width, sx + out_w)

    def rows(y: int, z: int) -> np.ndarray:
        ys0, ys1 = max(0, y + sy), min(height, z + sy)
        if ys1 - ys0 == z - y and (xs0, xs1) == (sx, sx + out_w):
            return plane[ys0:ys1, xs0:xs1]  # inside the photo: a view
        out = np.zeros((z - y, out_w, *plane.shape[2:]), plane.dtype)
        if ys1 > ys0 and xs1 > xs0:
            out[ys0 - y - sy : ys1 - y - sy, xs0 - sx : xs1 - sx] = plane[ys0:ys1, xs0:xs1]
        return out

    return rows


def warped_rows(small: np.ndarray, lay: Layout, factor: float):
    """A small plane (the photo at ``factor`` of its size) enlarged onto the output a
    strip at a time, reaching to the canvas's edges (linear: it is smooth)."""
    out_w = lay.size[0]
    step = factor / lay.scale  # small pixels per output pixel
    x0 = (lay.box[0] + 0.5 / lay.scale) * factor - 0.5
    y0 = (lay.box[1] + 0.5 / lay.scale) * factor - 0.5

    def rows(y: int, z: int) -> np.ndarray:
        matrix = np.array([[step, 0.0, x0], [0.0, step, y0 + y * step]], np.float64)
        return cv2.warpAffine(
            small,
            matrix,
            (out_w, z - y),
            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
            borderMode=cv2.BORDER_REPLICATE,
        )

    return rows


# -- Layers --------------------------------------------------------------------------


def cutout(rgb: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """RGBA with straight (not premultiplied) colour; fully transparent pixels zeroed.

    Zeroing hidden colour keeps files smaller and leaks nothing of the old
    background into tools that ignore alpha.
    """
    # OpenCV's merge and masked in-place subtract: ~15x faster than numpy's strided
    # stores at 12 MP, and no full-size temporary beyond the output.
    rgba = cv2.merge([np.ascontiguousarray(rgb), np.ascontiguousarray(alpha)])
    hidden = (alpha == 0).view(np.uint8)
    cv2.subtract(rgba, rgba, dst=rgba, mask=hidden)  # colour of invisible pixels -> 0
    return rgba


def over_background(rgb: np.ndarray, alpha: np.ndarray, color: RGBA) -> np.ndarray:
    """Composite the subject over a solid colour ("over" operator).

    Returns RGB when the colour is opaque, RGBA otherwise.
    """
    if color[3] >= 255:
        # One lookup per channel in a table of every (alpha, colour) pair, rounded
        # exactly: three times faster than float arithmetic at 12 MP, which matters
        # because the app composes again whenever the background changes.
        out = np.empty_like(rgb)
        index = alpha.astype(np.uint16) << 8
        for k in range(3):
            index |= rgb[..., k]
            out[..., k] = _over_table(color[k])[index]
            index &= 0xFF00
        return out
    return _flatten([(np.asarray(color[:3], np.float32), color[3]), (rgb, alpha)], False)


@lru_cache(maxsize=8)
def _over_table(background: int) -> np.ndarray:
    """round((c·a + background·(255 - a)) / 255) for every alpha a and colour c, indexed
    by a·256 + c."""
    a = np.arange(256, dtype=np.uint32)[:, None]
    c = np.arange(256, dtype=np.uint32)[None, :]
    return ((c * a + background * (255 - a) + 127) // 255).astype(np.uint8).ravel()


def _flatten(layers, opaque: bool) -> np.ndarray:
    """Layers (colour, alpha), bottom first, put one over the next ("over" operator).

    A colour is an (h, w, 3) uint8 array or an RGB triple; an alpha an (h, w) uint8
    array or a number 0-255. RGB when ``opaque`` (the bottom layer covers everything),
    else RGBA with straight colour and fully transparent pixels zeroed.
    """
    shape = next(
        np.shape(a) if np.ndim(a) == 2 else np.shape(c)[:2]
        for c, a in layers
        if np.ndim(a) == 2 or np.ndim(c) == 3
    )
    if opaque:
        return _flatten_opaque(layers, shape)
    colour = np.zeros((*shape, 3), np.float32)  # premultiplied
    cover = np.zeros((*shape, 1), np.float32)
    for layer_colour, layer_alpha in layers:
        a = np.asarray(layer_alpha, np.float32) * np.float32(1 / 255)
        if a.ndim == 2:
            a = a[..., None]
        keep = 1.0 - a
        colour *= keep
        colour += np.asarray(layer_colour, np.float32) * a
        cover *= keep
        cover += a
    straight = np.divide(colour, cover, out=np.zeros_like(colour), where=cover > 1e-6)
    rgba = np.concatenate([straight, cover * 255.0], axis=2)
    rgba += 0.5
    out = np.clip(rgba, 0, 255).astype(np.uint8)
    out[out[..., 3] == 0] = 0  # no colour where nothing shows, as in a cutout
    return out


@lru_cache(maxsize=4)
def _solid(shape: tuple[int, int], rgb: tuple[int, ...]) -> np.ndarray:
    """A strip of one colour (read-only: strips of one size share it)."""
    out = np.empty((*shape, 3), np.uint8)
    out[:] = rgb
    out.flags.writeable = False
    return out


def _flatten_opaque(layers, shape: tuple[int, int]) -> np.ndarray:
    """The opaque case in 8 bits: one weighted blend per layer (OpenCV's blendLinear,
    rounded), a fifth of the time of the floating-point stack. A solid colour over a
    solid colour (a shadow on a plain background) is one table lookup."""
    out: np.ndarray | None = None
    solid: np.ndarray | None = np.zeros(3)  # while the stack so far is one colour
    for layer_colour, layer_alpha in layers:
        if np.ndim(layer_colour) != 3 and solid is not None:
            colour = np.asarray(layer_colour, np.float64)
            if np.ndim(layer_alpha) == 0:
                share = float(layer_alpha) / 255
                solid = colour * share + solid * (1 - share)
                continue
            levels = np.arange(256, dtype=np.float64)[:, None] / 255
            table = np.clip(colour * levels + solid * (1 - levels) + 0.5, 0, 255).astype(np.uint8)
            out = cv2.LUT(cv2.merge([layer_alpha] * 3), table.reshape(1, 256, 3))
            solid = None
            continue
        if out is None:
            assert solid is not None
            out = _solid(shape, tuple(round(float(v)) for v in solid)).copy()
            solid = None
        colour = layer_colour
        if np.ndim(colour) != 3:
            colour = _solid(shape, tuple(round(float(v)) for v in layer_colour))
        if np.ndim(layer_alpha) == 0:
            if layer_alpha >= 255:
                out = colour.copy()
                continue
            layer_alpha = np.full(shape, layer_alpha, np.uint8)
        weight = np.multiply(layer_alpha, np.float32(1 / 255), dtype=np.float32)
        out = cv2.blendLinear(colour, out, weight, np.float32(1) - weight)
    if out is None:
        assert solid is not None
        return _solid(shape, tuple(round(float(v)) for v in solid)).copy()
    return out


@lru_cache(maxsize=2)
def _background_file(path: str, mtime_ns: int, size: int):
    """A background image read once per batch (the file's time and size key the cache)."""
    from ..files.imaging import read_image

    return read_image(path)


def background_image(path: str):
    """The upright background image at ``path`` (a LoadedImage), read once while unchanged."""
    info = os.stat(path)
    return _background_file(path, info.st_mtime_ns, info.st_size)


def _image_opaque(path: str) -> bool:
    return background_image(path).alpha is None


def fitted(image_rgb: np.ndarray, image_alpha, size: tuple[int, int], fit: str):
    """A background image's colour and alpha covering an output of ``size``: cut to fill,
    inside with transparent bars (fit), or stretched."""
    width, height = size
    ih, iw = image_rgb.shape[:2]
    planes = image_rgb if image_alpha is None else cv2.merge([image_rgb, image_alpha])
    if fit == "stretch":
        sx, sy = width / iw, height / ih
        lay = Layout(size, (0.0, 0.0, float(iw), float(ih)), 1.0)
        shrink = sx * sy < 1
        resized = cv2.resize(
            planes, size, interpolation=cv2.INTER_AREA if shrink else cv2.INTER_CUBIC
        )
        out = resized.reshape((height, width, *planes.shape[2:]))
    else:
        scale = (max if fit == "fill" else min)(width / iw, height / ih)
        x0 = (iw - width / scale) / 2
        y0 = (ih - height / scale) / 2
        lay = Layout(size, (x0, y0, x0 + width / scale, y0 + height / scale), scale)
        out = place(planes, lay)
    if image_alpha is None and fit != "fit":
        return out, 255
    if image_alpha is None:  # bars where the image does not reach
        cover = place(np.full((ih, iw), 255, np.uint8), lay)
        return out, cover
    return np.ascontiguousarray(out[..., :3]), np.ascontiguousarray(out[..., 3])


def blurred_background(rgb: np.ndarray, alpha: np.ndarray, strength: float) -> np.ndarray:
    """The photo's background blurred, with the subject taken out and filled from the
    background around it, at a working size of BLUR_WORK on the long side.

    A weighted (normalised) Gaussian: each pixel counts by how surely it is background,
    (1 - 2α)² for α below one half and not at all above, so neither the subject's colour
    nor its soft edge's bleeds into the blur; where the subject covers everything near
    a pixel, wider blurs of the background fill in.
    """
    height, width = alpha.shape
    factor = min(1.0, BLUR_WORK / max(width, height))
    size = (max(1, round(width * factor)), max(1, round(height * factor)))
    small = cv2.resize(rgb, size, interpolation=cv2.INTER_AREA).astype(np.float32)
    a = cv2.resize(alpha, size, interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0
    weight = np.square(np.clip(1.0 - 2.0 * a, 0.0, 1.0))
    sigma = max(0.5, strength * BLUR_SIGMA * max(size))
    num = np.zeros_like(small)
    den = np.zeros_like(weight)
    weighted = small * weight[..., None]
    for k, share in ((1, 1.0), (4, 1e-2), (16, 1e-4)):
        # A blur k times as wide, done at 1/k of the size (the same thing, k² cheaper).
        level = (max(1, size[0] // k), max(1, size[1] // k))
        n = cv2.resize(weighted, level, interpolation=cv2.INTER_AREA)
        d = cv2.resize(weight, level, interpolation=cv2.INTER_AREA)
        n = cv2.GaussianBlur(n, (0, 0), sigma * level[0] / size[0] * k)
        d = cv2.GaussianBlur(d, (0, 0), sigma * level[0] / size[0] * k)
        num += share * cv2.resize(n, size, interpolation=cv2.INTER_LINEAR)
        den += share * cv2.resize(d, size, interpolation=cv2.INTER_LINEAR)
    if float(den.max()) < 1e-6:  # no background at all: blur the photo as it is
        out = cv2.GaussianBlur(small, (0, 0), sigma)
    else:
        out = num / np.maximum(den, 1e-12)[..., None]
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)


def _subject_height(alpha: np.ndarray) -> int:
    box = subject_box(alpha)
    return alpha.shape[0] if box is None else box[3] - box[1]


def shadow_alpha(silhouette: np.ndarray, shadow: Shadow) -> np.ndarray:
    """A drop shadow's alpha: the silhouette moved by the offset, blurred, at its opacity.

    Worked at a reduced size where the blur is wide (a blur of sigma s has no detail
    finer than s), then enlarged.
    """
    height, width = silhouette.shape
    tall = _subject_height(silhouette)
    sigma = shadow.blur * tall
    factor = min(1.0, 6.0 / sigma) if sigma > 0 else 1.0
    size = (max(1, round(width * factor)), max(1, round(height * factor)))
    small = cv2.resize(silhouette, size, interpolation=cv2.INTER_AREA) if factor < 1 else silhouette
    fx, fy = size[0] / width, size[1] / height
    shift = np.array([[1, 0, shadow.dx * tall * fx], [0, 1, shadow.dy * tall * fy]], np.float64)
    moved = cv2.warpAffine(small, shift, size, flags=cv2.INTER_LINEAR, borderValue=0)
    if sigma > 0:
        moved = cv2.GaussianBlur(moved, (0, 0), sigma * factor)
    if factor < 1:
        moved = cv2.resize(moved, (width, height), interpolation=cv2.INTER_LINEAR)
    table = np.clip(np.arange(256) * shadow.opacity + 0.5, 0, 255).astype(np.uint8)
    return cv2.LUT(moved, table)


def outline_alpha(alpha: np.ndarray, outline: Outline) -> np.ndarray:
    """The outline's alpha: every pixel within ``width`` of the subject (alpha >= 128),
    with an anti-aliased outer edge; the subject's own soft edge inside it is covered."""
    outside = (alpha < 128).view(np.uint8)
    distance = cv2.distanceTransform(outside, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
    # A pixel whose centre is d from the nearest subject pixel's is d - 1/2 from the
    # subject's edge: it is covered as far as the width reaches into it.
    ring = np.clip((outline.width + 1.0 - distance) * 255.0, 0, 255).astype(np.uint8)
    return np.maximum(ring, alpha)


# -- The output, a strip at a time -------------------------------------------------------


@dataclass(frozen=True)
class Composed:
    """An output being made: its size, channels (1 mask, 3 RGB, 4 RGBA), and its pixels
    in strips of rows, top to bottom, each composed when it is asked for."""

    width: int
    height: int
    channels: int
    strips: Iterator[np.ndarray]


def compose_strips(
    rgb: np.ndarray, alpha: np.ndarray, options: ComposeOptions, rows: int = 256
) -> Composed:
    """The output for ``options``, in strips of ``rows`` rows.

    Each strip is composed when it is asked for, so a whole 12-megapixel cutout
    (48 MB) never exists at once when the strips go straight into the PNG writer: the
    photo's colour and a blurred background are made a strip at a time; what needs
    the whole image (the alpha on the output, a shadow, an outline) is a uint8 plane.
    """
    subject = find_subject(alpha) if options.crop else None
    lay = layout(alpha, options, subject)
    width, height = lay.size
    if width * height > alpha.size:  # never refuse an output the photo's own size
        check_output_size(width * height, default_max_megapixels(), f"{width}x{height}")
    placed = _placed_alpha(alpha, lay, options, subject)
    if options.mask_only:
        return Composed(width, height, 1, _rows(rows, height, lambda y, z: placed[y:z]))
    for switch in SWITCHES:  # the switches that change the photo's colour, in order
        if switch.apply is not None and getattr(options, switch.key):
            rgb = switch.apply(rgb)
    fg = placed_rows(rgb, lay)
    if options.decontaminate:
        from ..mask.refine import estimate_foreground

        whole = estimate_foreground(fg(0, height), placed)
        fg = lambda y, z: whole[y:z]  # noqa: E731
    channels = options.channels
    if not options.layered:
        colour = options.background
        if colour is None:
            return Composed(
                width,
                height,
                4,
                _rows(rows, height, lambda y, z: cutout(fg(y, z), placed[y:z])),
            )
        return Composed(
            width,
            height,
            channels,
            _rows(rows, height, lambda y, z: over_background(fg(y, z), placed[y:z], colour)),
        )
    layers: list[tuple[object, object]] = []  # bottom first; arrays are output-sized
    if options.background is not None:
        layers.append((np.asarray(options.background[:3], np.float32), options.background[3]))
    if options.background_image is not None:
        image = background_image(options.background_image)
        layers.append(fitted(image.rgb, image.alpha, lay.size, options.background_fit))
    if options.blur is not None:
        small = blurred_background(rgb, alpha, options.blur)
        layers.append((warped_rows(small, lay, small.shape[1] / alpha.shape[1]), 255))
    silhouette = placed
    outline = None
    if options.outline is not None:
        silhouette = outline = outline_alpha(placed, options.outline)
    if options.shadow is not None:
        shade = shadow_alpha(silhouette, options.shadow)
        layers.append((np.asarray(options.shadow.color[:3], np.float32), shade))
    if outline is not None:
        o = options.outline
        assert o is not None
        layers.append((np.asarray(o.color[:3], np.float32), _times(outline, o.color[3])))
    layers.append((fg, placed))

    def strip(y: int, z: int) -> np.ndarray:
        part = [(_rows_of(c, y, z), _rows_of(a, y, z)) for c, a in layers]
        return _flatten(part, opaque=channels == 3)

    return Composed(width, height, channels, _rows(rows, height, strip))


def placed_alpha(alpha: np.ndarray, options: ComposeOptions) -> np.ndarray:
    """The alpha as it lies on the output (crop, canvas, scale), before any layer."""
    subject = find_subject(alpha) if options.crop else None
    return _placed_alpha(alpha, layout(alpha, options, subject), options, subject)


def _placed_alpha(
    alpha: np.ndarray, lay: Layout, options: ComposeOptions, subject: Subject | None = None
) -> np.ndarray:
    """With crop, nothing but the subject on the output: its leftovers (faint haze, a
    ghost of the background, flecks the box leaves out) are cleared, so neither they nor
    a shadow or outline drawn from them shows, and nothing shows outside its box (no
    spread of a hard edge into the margin where the subject is enlarged)."""
    if not options.crop:
        return place(alpha, lay)
    if subject is None:
        subject = find_subject(alpha)
    box = subject.box
    if box is None:
        return place(alpha, lay)
    if subject.leftover is not None:
        alpha = alpha.copy()  # never change the caller's alpha
        alpha[subject.leftover] = 0
    placed = place(alpha, lay)
    height, width = placed.shape
    x0, y0 = lay.to_output(box[0], box[1])
    x1, y1 = lay.to_output(box[2], box[3])
    top, left = max(0, math.floor(y0 + 1e-6)), max(0, math.floor(x0 + 1e-6))
    bottom, right = min(height, math.ceil(y1 - 1e-6)), min(width, math.ceil(x1 - 1e-6))
    if (top, left, bottom, right) == (0, 0, height, width):
        return placed
    if np.shares_memory(placed, alpha):
        placed = placed.copy()  # never change the caller's alpha
    placed[:top] = 0
    placed[bottom:] = 0
    placed[:, :left] = 0
    placed[:, right:] = 0
    return placed


def _rows(rows: int, height: int, make) -> Iterator[np.ndarray]:
    return (make(y, min(height, y + rows)) for y in range(0, height, rows))


def _rows_of(value, y: int, z: int):
    """Rows y to z of a layer's part: a plane, a function of the rows, or a constant."""
    if callable(value):
        return np.ascontiguousarray(value(y, z))
    return value[y:z] if isinstance(value, np.ndarray) and value.ndim >= 2 else value


def _times(alpha: np.ndarray, level: int) -> np.ndarray:
    if level >= 255:
        return alpha
    return cv2.LUT(alpha, np.clip(np.arange(256) * (level / 255) + 0.5, 0, 255).astype(np.uint8))


def compose_array(rgb: np.ndarray, alpha: np.ndarray, options: ComposeOptions) -> np.ndarray:
    """The output pixels for ``options``: mask (h, w), RGB or RGBA (h, w, channels).

    Made a strip at a time into the one output array, so the layers' floating-point
    work never covers the whole image at once.
    """
    made = compose_strips(rgb, alpha, options)
    shape = (made.height, made.width) + (() if made.channels == 1 else (made.channels,))
    out = np.empty(shape, np.uint8)
    y = 0
    for strip in made.strips:
        out[y : y + strip.shape[0]] = strip
        y += strip.shape[0]
    return out


def compose(rgb: np.ndarray, alpha: np.ndarray, options: ComposeOptions):
    """The output image for ``options`` as a Pillow image: mask (L), RGB or RGBA."""
    from PIL import Image

    return Image.fromarray(compose_array(rgb, alpha, options))
