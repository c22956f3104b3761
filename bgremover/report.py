"""Pictures of a comparison, without Qt: the |Δα| colour map and the side-by-side sheet."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

#: Anchor colours of the |Δα| heatmap, from 0 (no difference) to 1: black,
#: deep purple, red, orange, pale yellow. Perceptually ordered and readable in print.
_ANCHORS = np.array(
    [[0, 0, 0], [60, 15, 110], [190, 40, 80], [250, 140, 20], [252, 250, 190]], dtype=np.float64
)


def heat_lut() -> np.ndarray:
    """256 x 3 uint8 lookup table interpolated between the anchors."""
    xs = np.linspace(0, 1, len(_ANCHORS))
    t = np.linspace(0, 1, 256)
    return np.stack([np.interp(t, xs, _ANCHORS[:, c]) for c in range(3)], axis=1).astype(np.uint8)


HEAT_LUT = heat_lut()

#: Full scale of the comparison view's heatmap: differences of 0.25 and more show at
#: full colour, so the small ones at hair edges stay visible.
DEFAULT_HEAT_SCALE = 0.25


def heatmap(diff: np.ndarray, full_scale: float = 1.0) -> np.ndarray:
    """|Δ| -> RGB uint8, saturating at ``full_scale``.

    ``diff`` is float in [0, 1], or uint8 where 255 means 1 (looked up in one step).
    """
    if diff.dtype == np.uint8:
        idx = np.clip(np.arange(256) / (255.0 * full_scale) * 255.0, 0, 255).astype(np.uint8)
        return HEAT_LUT[idx[diff]]
    idx = np.clip(np.asarray(diff, dtype=np.float32) / full_scale * 255.0, 0, 255).astype(np.uint8)
    return HEAT_LUT[idx]


def mask_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| of two uint8 masks, as uint8 (255 = 1); exact, and what :func:`heatmap` takes."""
    return np.abs(a.astype(np.int16) - b.astype(np.int16)).astype(np.uint8)


def comparison_sheet(
    rgb: np.ndarray, fp32_mask: np.ndarray, int8_mask: np.ndarray, caption: str, height: int = 360
) -> Image.Image:
    """Input | fp32 mask | int8 mask | |Δα| heatmap, with a legend and a caption line."""
    diff = heatmap(mask_difference(fp32_mask, int8_mask))
    panels = [
        ("input", Image.fromarray(rgb)),
        ("fp32 mask", Image.fromarray(fp32_mask).convert("RGB")),
        ("int8 mask", Image.fromarray(int8_mask).convert("RGB")),
        ("|fp32 - int8| alpha difference", Image.fromarray(diff)),
    ]
    h, w = rgb.shape[:2]
    pw = max(1, round(w * height / h))
    gap, top, bottom = 8, 22, 56
    sheet = Image.new("RGB", (4 * pw + 5 * gap, height + top + bottom), "white")
    draw = ImageDraw.Draw(sheet)
    # Pillow's built-in font has no Greek letters: captions stay ASCII.
    draw.font = ImageFont.load_default(size=14)
    for i, (title, panel) in enumerate(panels):
        x = gap + i * (pw + gap)
        sheet.paste(panel.resize((pw, height), Image.Resampling.LANCZOS), (x, top))
        draw.text((x, 5), title, fill="black")
    # Legend under the heatmap panel: the colour bar with ticks at 0, 0.5 and 1.
    x0 = gap + 3 * (pw + gap)
    bar_w = max(64, pw - 16)
    bar = np.repeat(HEAT_LUT[np.linspace(0, 255, bar_w).astype(int)][None], 10, axis=0)
    sheet.paste(Image.fromarray(bar), (x0, top + height + 6))
    for frac, label in ((0.0, "0"), (0.5, "0.5"), (1.0, "1")):
        x = x0 + round(frac * (bar_w - 1))
        draw.line([(x, top + height + 16), (x, top + height + 19)], fill="black")
        draw.text((min(x, x0 + bar_w - 10), top + height + 20), label, fill="black")
    draw.text((gap, top + height + 38), caption, fill="black")
    return sheet
