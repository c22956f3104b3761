"""The mask's overlay in edit mode: its tint, chosen to stand out from the photo, and the
view that shows the semi-transparent pixels.

The overlay is the mask as an indexed image (one colour per alpha value, sharing the
mask's pixels): what is removed tinted, what is kept clear. The tint is the user's
choice (:data:`TINTS`, kept in the settings as its name) or, automatically, the one of
those colours whose hue is farthest from the photo's own colours (:func:`contrasting`),
so that a red subject is not tinted red. "Show semi-transparent" paints every pixel of
alpha 1–254 opaque in a second colour, distinct from the tint and from the photo, so
that faint leftovers the tint hardly shows stand out; alpha 0 and 255 are drawn as
without it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from PySide6.QtGui import QColor, QImage

from .imageconv import to_indexed

RGB = tuple[int, int, int]

#: The overlay's colours to choose from, by the name the settings keep ("" is automatic).
TINTS: dict[str, RGB] = {
    "red": (255, 30, 90),
    "yellow": (255, 215, 0),
    "green": (30, 210, 60),
    "cyan": (0, 210, 230),
    "blue": (40, 90, 255),
    "magenta": (220, 40, 230),
}
#: The choice's name for the automatic tint (the default).
AUTOMATIC = ""
#: The menu's words for each choice, automatic first.
TINT_LABELS: dict[str, str] = {AUTOMATIC: "Automatic", **{n: n.capitalize() for n in TINTS}}
#: How opaque the tint is over what is removed (kept parts are clear).
OVERLAY_OPACITY = 0.55
#: The photo's colours are read from at most about this many pixels (an even grid).
SAMPLES = 40_000
#: Pixels whose chroma (max - min of R, G, B) is below this have no hue to speak of.
MIN_CHROMA = 40
#: How far (degrees) a photo's hue counts against a tint's: a Gaussian of this width.
HUE_SPREAD = 35.0


def hue_of(color: RGB) -> float:
    """The hue of ``color`` in degrees (0 red, 120 green, 240 blue)."""
    return float(QColor(*color).hsvHueF() * 360.0)


def hue_weights(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The photo's hues (degrees) and their weights (their chroma), from an even grid of
    about :data:`SAMPLES` pixels; pixels without a hue (greys, near black or white) are
    left out."""
    h, w = rgb.shape[:2]
    step = max(1, int(np.sqrt(h * w / SAMPLES)))
    px = rgb[::step, ::step, :3].reshape(-1, 3).astype(np.int32)
    hi, lo = px.max(axis=1), px.min(axis=1)
    chroma = hi - lo
    keep = chroma >= MIN_CHROMA
    px, hi, chroma = px[keep], hi[keep], chroma[keep].astype(np.float64)
    r, g, b = px[:, 0], px[:, 1], px[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        hue = np.where(
            hi == r,
            ((g - b) / chroma) % 6,
            np.where(hi == g, (b - r) / chroma + 2, (r - g) / chroma + 4),
        )
    return (hue * 60.0) % 360.0, chroma


def _closeness(hues: np.ndarray, hue: float) -> np.ndarray:
    d = np.abs((hues - hue + 180.0) % 360.0 - 180.0)
    return np.exp(-0.5 * (d / HUE_SPREAD) ** 2)


def contrasting(rgb: np.ndarray, avoid: RGB | None = None) -> RGB:
    """The colour of :data:`TINTS` that stands out most from the photo ``rgb``: the one
    whose hue the photo's coloured pixels are farthest from (weighted by how coloured
    they are); ``avoid`` (another colour drawn with it) counts as much as the whole
    photo. A photo with no colour to speak of gets the first tint (red)."""
    hues, weights = hue_weights(rgb)
    total = float(weights.sum()) or 1.0
    best, best_score = next(iter(TINTS.values())), np.inf
    for color in TINTS.values():
        hue = hue_of(color)
        score = float((weights * _closeness(hues, hue)).sum()) / total
        if avoid is not None:
            score += float(_closeness(np.array([hue_of(avoid)]), hue)[0])
        if score < best_score - 1e-9:
            best, best_score = color, score
    return best


def tint_for(choice: str, rgb: np.ndarray) -> RGB:
    """The overlay's tint for the settings' ``choice`` (a name of :data:`TINTS`; anything
    else is automatic) on the photo ``rgb``."""
    return TINTS.get(choice) or contrasting(rgb)


@lru_cache(maxsize=16)
def _table(tint: RGB, semi: RGB | None, tinted: bool) -> tuple[int, ...]:
    colors = []
    for a in range(256):
        if semi is not None and 0 < a < 255:
            colors.append(QColor(*semi).rgba())
        elif tinted:
            colors.append(QColor(*tint, round((255 - a) * OVERLAY_OPACITY)).rgba())
        else:
            colors.append(QColor(0, 0, 0, 0).rgba())
    return tuple(colors)


def overlay_image(
    alpha: np.ndarray, tint: RGB, semi: RGB | None = None, tinted: bool = True
) -> QImage:
    """The mask as an overlay, sharing the mask's pixels (made at once): removed parts
    tinted ``tint`` (``tinted``), and, with ``semi``, every pixel of alpha 1–254 drawn
    opaque in that colour."""
    return to_indexed(alpha, list(_table(tint, semi, tinted)))
