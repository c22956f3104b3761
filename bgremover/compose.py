"""Turning an image and its alpha into what the user saves: cutout, mask, or a new background."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np
from PIL import Image, ImageColor

from .errors import UsageError


@dataclass(frozen=True)
class ComposeOptions:
    """How a result becomes an output image."""

    #: Write the alpha mask as a greyscale image instead of a cutout.
    mask_only: bool = False
    #: Put the subject on this solid RGBA colour instead of transparency.
    background: tuple[int, int, int, int] | None = None
    #: Re-estimate the subject's colour in semi-transparent pixels (hair) so that
    #: no tint of the old background shows on a new one.
    decontaminate: bool = False


def parse_color(text: str) -> tuple[int, int, int, int]:
    """Parse "white", "#ff8800", "#ff880080" or "255,136,0[,128]" into RGBA."""
    value = text.strip()
    parts = [p.strip() for p in value.split(",")]
    try:
        if len(parts) in (3, 4) and all(p.isdigit() for p in parts):
            nums = [int(p) for p in parts]
            if any(n > 255 for n in nums):
                raise ValueError("components must be 0-255")
            return (nums[0], nums[1], nums[2], nums[3] if len(nums) == 4 else 255)
        rgba = ImageColor.getcolor(value, "RGBA")
        if not isinstance(rgba, tuple):  # a grey level: Pillow gives an int for mode "L"
            rgba = (rgba, rgba, rgba, 255)
        return (rgba[0], rgba[1], rgba[2], rgba[3])
    except ValueError:
        raise UsageError(
            f"Not a colour: {text!r}. Use a name (white), #rrggbb, #rrggbbaa or r,g,b[,a]."
        ) from None


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


def over_background(
    rgb: np.ndarray, alpha: np.ndarray, color: tuple[int, int, int, int]
) -> np.ndarray:
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
    a = alpha.astype(np.float32)[..., None] / 255.0
    bg = np.asarray(color[:3], dtype=np.float32)
    bg_a = color[3] / 255.0
    out_a = a + bg_a * (1.0 - a)
    safe = np.where(out_a > 0, out_a, 1.0)
    colour = (rgb.astype(np.float32) * a + bg * bg_a * (1.0 - a)) / safe
    rgba = np.concatenate([colour, out_a * 255.0], axis=2)
    return np.clip(rgba + 0.5, 0, 255).astype(np.uint8)


@lru_cache(maxsize=8)
def _over_table(background: int) -> np.ndarray:
    """round((c·a + background·(255 - a)) / 255) for every alpha a and colour c, indexed
    by a·256 + c."""
    a = np.arange(256, dtype=np.uint32)[:, None]
    c = np.arange(256, dtype=np.uint32)[None, :]
    return ((c * a + background * (255 - a) + 127) // 255).astype(np.uint8).ravel()


def compose_array(rgb: np.ndarray, alpha: np.ndarray, options: ComposeOptions) -> np.ndarray:
    """The output pixels for ``options``: mask (H, W), cutout RGBA, or background RGB/RGBA."""
    _, strips = compose_strips(rgb, alpha, options, rows=max(1, alpha.shape[0]))
    return next(strips)


def compose_strips(
    rgb: np.ndarray, alpha: np.ndarray, options: ComposeOptions, rows: int = 256
) -> tuple[int, Iterator[np.ndarray]]:
    """The output's channel count, and its pixels in strips of ``rows`` rows, top to bottom.

    Each strip is composed when it is asked for, so a whole 12-megapixel cutout
    (48 MB) never exists at once when the strips go straight into the PNG writer.
    """
    if options.decontaminate:
        from .refine import estimate_foreground

        rgb = estimate_foreground(rgb, alpha)
    if options.mask_only:
        channels = 1

        def strip(a: np.ndarray, c: np.ndarray) -> np.ndarray:
            return a

    elif options.background is not None:
        colour = options.background
        channels = 3 if colour[3] >= 255 else 4

        def strip(a: np.ndarray, c: np.ndarray) -> np.ndarray:
            return over_background(c, a, colour)

    else:
        channels = 4

        def strip(a: np.ndarray, c: np.ndarray) -> np.ndarray:
            return cutout(c, a)

    height = alpha.shape[0]
    pieces = (strip(alpha[y : y + rows], rgb[y : y + rows]) for y in range(0, height, rows))
    return channels, pieces


def compose(rgb: np.ndarray, alpha: np.ndarray, options: ComposeOptions) -> Image.Image:
    """The output image for ``options``: mask (L), cutout (RGBA) or background (RGB/RGBA)."""
    return Image.fromarray(compose_array(rgb, alpha, options))
