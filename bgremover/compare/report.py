"""Pictures of a comparison, without Qt: the |Δα| colour map and the side-by-side sheet.

numpy and Pillow are imported when a picture is made, not with the module: the
command line's parser reads :data:`HEAT_SCALES` and :data:`DEFAULT_HEAT_SCALE`,
and ``bgremover --version`` must not wait for numpy.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

#: Anchor colours of the |Δα| heatmap, from 0 (no difference) to 1: black,
#: deep purple, red, orange, pale yellow. Perceptually ordered and readable in print.
_ANCHORS = ((0, 0, 0), (60, 15, 110), (190, 40, 80), (250, 140, 20), (252, 250, 190))

#: The heatmap full scales offered (the app's scale box, ``compare --heat-scale``):
#: differences at or above the full scale show at full colour.
HEAT_SCALES = (1.0, 0.5, 0.25, 0.1, 0.05)

#: Full scale of the comparison's heatmap when none is chosen: differences of 0.25 and
#: more show at full colour, so the small ones at hair edges stay visible.
DEFAULT_HEAT_SCALE = 0.25

#: Longest side of each panel of the comparison sheet (smaller images keep their size).
SHEET_PANEL = 512


@functools.cache
def heat_lut() -> np.ndarray:
    """256 x 3 uint8 lookup table interpolated between the anchors."""
    import numpy as np

    anchors = np.array(_ANCHORS, dtype=np.float64)
    xs = np.linspace(0, 1, len(anchors))
    t = np.linspace(0, 1, 256)
    return np.stack([np.interp(t, xs, anchors[:, c]) for c in range(3)], axis=1).astype(np.uint8)


def heatmap(diff: np.ndarray, full_scale: float = 1.0) -> np.ndarray:
    """|Δ| -> RGB uint8, saturating at ``full_scale``.

    ``diff`` is float in [0, 1], or uint8 where 255 means 1 (looked up in one step).
    """
    import numpy as np

    lut = heat_lut()
    if diff.dtype == np.uint8:
        idx = np.clip(np.arange(256) / (255.0 * full_scale) * 255.0, 0, 255).astype(np.uint8)
        return lut[idx[diff]]
    idx = np.clip(np.asarray(diff, dtype=np.float32) / full_scale * 255.0, 0, 255).astype(np.uint8)
    return lut[idx]


def mask_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| of two uint8 masks, as uint8 (255 = 1); exact, and what :func:`heatmap` takes."""
    import numpy as np

    return np.abs(a.astype(np.int16) - b.astype(np.int16)).astype(np.uint8)


def scale_label(value: float, full_scale: float) -> str:
    """A legend tick: ``0.25+`` at a full scale below 1 (larger differences look the same)."""
    return f"{value:g}" + ("+" if value == full_scale and full_scale < 1 else "")


def _panel_size(width: int, height: int, longest: int) -> tuple[int, int]:
    """The image's size scaled so its long side is ``longest``, never enlarged."""
    factor = min(1.0, longest / max(width, height))
    return max(1, round(width * factor)), max(1, round(height * factor))


def _text_width(draw: ImageDraw.ImageDraw, text: str, font: ImageFont.ImageFont | Any) -> int:
    return round(draw.textlength(text, font=font))


def comparison_sheet(
    rgb: np.ndarray,
    fp32_mask: np.ndarray,
    int8_mask: np.ndarray,
    caption: str | Sequence[str],
    heat_scale: float = DEFAULT_HEAT_SCALE,
    panel: int = SHEET_PANEL,
    names: tuple[str, str] = ("fp32", "int8"),
) -> Image.Image:
    """Input | A mask | B mask | |Δα| heatmap, with a legend and caption lines; ``names``
    are the two sides' short names (fp32 and int8 for the default comparison).

    Each panel is ``panel`` pixels on its long side (or the image's own size if that
    is smaller), so hair edges stay visible. The heatmap saturates at ``heat_scale``,
    as the app's does, and its legend's ticks say so.
    """
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    lines = [caption] if isinstance(caption, str) else list(caption)
    h, w = rgb.shape[:2]
    pw, ph = _panel_size(w, h, panel)
    # The difference is averaged down to the panel's size before it is coloured, so
    # the heatmap's colours stay the scale's colours (resampling colours would not).
    diff = Image.fromarray(mask_difference(fp32_mask, int8_mask))
    diff = diff.resize((pw, ph), Image.Resampling.BOX) if (pw, ph) != (w, h) else diff
    heat = Image.fromarray(heatmap(np.asarray(diff), heat_scale))

    def fit(img: Image.Image) -> Image.Image:
        return img if img.size == (pw, ph) else img.resize((pw, ph), Image.Resampling.LANCZOS)

    panels = [
        ("input", fit(Image.fromarray(rgb))),
        (f"{names[0]} mask", fit(Image.fromarray(fp32_mask)).convert("RGB")),
        (f"{names[1]} mask", fit(Image.fromarray(int8_mask)).convert("RGB")),
        (f"|{names[0]} - {names[1]}| alpha", heat),
    ]
    # Pillow's built-in font has no Greek letters: the text stays ASCII.
    title_font = ImageFont.load_default(size=20)
    font = ImageFont.load_default(size=17)
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    legend_title = f"|d alpha|, full colour at {heat_scale:g}" + (
        " and more" if heat_scale < 1 else ""
    )
    column = max(
        pw,
        *(_text_width(measure, title, title_font) for title, _ in panels),
        _text_width(measure, legend_title, font),
        160,
    )
    gap, top = 14, 34
    legend_h = 70
    line_h = 24
    panels_w = 4 * column + 5 * gap
    width = max(panels_w, *(_text_width(measure, line, font) + 2 * gap for line in lines))
    height = top + ph + legend_h + line_h * len(lines) + gap
    sheet = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(sheet)
    for i, (title, img) in enumerate(panels):
        x = gap + i * (column + gap)
        sheet.paste(img, (x + (column - pw) // 2, top))
        draw.text((x, 6), title, fill="black", font=title_font)

    # Legend under the heatmap: the colour bar with ticks at 0, half and full scale.
    x0 = gap + 3 * (column + gap)
    bar_w = column - 24  # room for the last label to stay on the sheet
    y = top + ph + 10
    lut = heat_lut()
    bar = np.repeat(lut[np.linspace(0, 255, bar_w).astype(int)][None], 14, axis=0)
    sheet.paste(Image.fromarray(bar), (x0, y))
    for frac in (0.0, 0.5, 1.0):
        x = x0 + round(frac * (bar_w - 1))
        draw.line([(x, y + 14), (x, y + 19)], fill="black", width=2)
        label = scale_label(frac * heat_scale, heat_scale)
        half = _text_width(draw, label, font) / 2
        draw.text((max(x0, min(x - half, width - gap - 2 * half)), y + 21), label, "black", font)
    draw.text((x0, y + 44), legend_title, fill="black", font=font)

    y = top + ph + legend_h
    for line in lines:
        draw.text((gap, y), line, fill="black", font=font)
        y += line_h
    return sheet
