"""Turning an image and its alpha into what the user saves: cutout, mask, or a new background."""

from __future__ import annotations

from dataclasses import dataclass

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
    out = np.empty((*alpha.shape, 4), dtype=np.uint8)
    out[..., :3] = rgb
    out[..., 3] = alpha
    out[alpha == 0] = 0
    return out


def over_background(
    rgb: np.ndarray, alpha: np.ndarray, color: tuple[int, int, int, int]
) -> np.ndarray:
    """Composite the subject over a solid colour ("over" operator).

    Returns RGB when the colour is opaque, RGBA otherwise.
    """
    a = alpha.astype(np.float32)[..., None] / 255.0
    bg = np.asarray(color[:3], dtype=np.float32)
    bg_a = color[3] / 255.0
    if bg_a >= 1.0:
        out = rgb.astype(np.float32) * a + bg * (1.0 - a)
        return np.clip(out + 0.5, 0, 255).astype(np.uint8)
    out_a = a + bg_a * (1.0 - a)
    safe = np.where(out_a > 0, out_a, 1.0)
    colour = (rgb.astype(np.float32) * a + bg * bg_a * (1.0 - a)) / safe
    rgba = np.concatenate([colour, out_a * 255.0], axis=2)
    return np.clip(rgba + 0.5, 0, 255).astype(np.uint8)


def compose(rgb: np.ndarray, alpha: np.ndarray, options: ComposeOptions) -> Image.Image:
    """The output image for ``options``: mask (L), cutout (RGBA) or background (RGB/RGBA)."""
    if options.mask_only:
        return Image.fromarray(alpha)
    if options.decontaminate:
        from .refine import estimate_foreground

        rgb = estimate_foreground(rgb, alpha)
    if options.background is not None:
        return Image.fromarray(over_background(rgb, alpha, options.background))
    return Image.fromarray(cutout(rgb, alpha))
