"""The model's input and output transforms: photo -> input tensor, raw output -> mask.

Pure functions on numpy arrays. They live below the pipeline so that the int8
calibration (``quantize.py``) prepares its samples exactly as inference does,
without importing the pipeline.
"""

from __future__ import annotations

import cv2
import numpy as np
from PIL import Image

from .families import Family

__all__ = [
    "content_box",
    "input_shape",
    "mask_from_score",
    "normalise_output",
    "preprocess",
    "score_map",
]


def input_shape(family: Family, size: int, width: int, height: int) -> tuple[int, int]:
    """The (height, width) of the model input for a ``width`` x ``height`` photo.

    Square ``size`` x ``size`` for fixed-size families; for dynamic ones the photo's
    aspect ratio, its long side at ``size`` (at most the family's maximum), each side
    a multiple of the family's ``multiple``.
    """
    if not family.dynamic:
        return size, size
    side = min(size, family.max_size)
    scale = side / max(width, height)
    m = family.multiple
    return (
        max(m, round(height * scale / m) * m),
        max(m, round(width * scale / m) * m),
    )


def content_box(
    family: Family, shape: tuple[int, int], width: int, height: int
) -> tuple[int, int, int, int]:
    """Where the photo lies in an input of ``shape``: (x, y, w, h). The whole input,
    except for letterboxed families, where the photo is centred with its aspect kept."""
    in_h, in_w = shape
    if family.resize != "letterbox":
        return 0, 0, in_w, in_h
    scale = min(in_w / width, in_h / height)
    w = max(1, min(in_w, round(width * scale)))
    h = max(1, min(in_h, round(height * scale)))
    return (in_w - w) // 2, (in_h - h) // 2, w, h


def _resize_lanczos(rgb: np.ndarray, width: int, height: int) -> np.ndarray:
    if rgb.shape[0] * rgb.shape[1] <= 4_000_000:
        return np.asarray(Image.fromarray(rgb).resize((width, height), Image.Resampling.LANCZOS))
    # One channel at a time: Pillow keeps RGB as 4 bytes a pixel, so resizing the
    # colour image whole makes a 48 MB copy of a 12-megapixel photo; per channel it
    # is 12 MB, with the same result (Lanczos is per channel) in about the same time.
    return np.dstack(
        [
            np.asarray(
                Image.fromarray(np.ascontiguousarray(rgb[..., c])).resize(
                    (width, height), Image.Resampling.LANCZOS
                )
            )
            for c in range(3)
        ]
    )


def preprocess(rgb: np.ndarray, family: Family, size: int | None = None) -> np.ndarray:
    """RGB uint8 (H, W, 3) -> model input (1, 3, h, w) float32, as ``family`` wants it.

    For the families rembg publishes this matches its preprocessing, so masks agree
    with it: a Lanczos resize to the input size, division by the image's own maximum
    (not by 255), then the family's mean/std normalisation.
    """
    height, width = rgb.shape[:2]
    shape = input_shape(family, size or family.input_size, width, height)
    x0, y0, w, h = content_box(family, shape, width, height)
    x = _resize_lanczos(rgb, w, h).astype(np.float64)
    if family.channels == "bgr":
        x = x[..., ::-1]
    x /= max(float(x.max()), 1e-6) if family.scaling == "max" else 255.0
    x = (x - np.asarray(family.mean)) / np.asarray(family.std)
    if (w, h) != shape[::-1]:  # letterboxed: the rest of the input is the mean colour, 0
        padded = np.zeros((*shape, 3))
        padded[y0 : y0 + h, x0 : x0 + w] = x
        x = padded
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)


def score_map(raw: np.ndarray, family: Family) -> np.ndarray:
    """The model's mask output (N x C x h x w) as one float32 h x w map, before
    normalisation: the first channel through the family's activation, or for
    class-map families 1 where the most likely class is one of the chosen ones."""
    out = np.asarray(raw, dtype=np.float32)
    if family.classes is not None:
        classes = out.reshape(out.shape[-3], out.shape[-2], out.shape[-1]).argmax(axis=0)
        return np.isin(classes, family.classes).astype(np.float32)
    pred = out.reshape(-1, out.shape[-2], out.shape[-1])[0]
    if family.activation == "sigmoid":
        with np.errstate(over="ignore"):
            pred = 1.0 / (1.0 + np.exp(-pred))
    return pred


def normalise_output(pred: np.ndarray, family: Family | None = None) -> np.ndarray:
    """A score map normalised to [0, 1] (float32): stretched by its own min and max
    (rembg's way), or clipped when the family says so."""
    pred = np.asarray(pred, dtype=np.float32).reshape(pred.shape[-2], pred.shape[-1])
    if family is not None and family.normalisation == "clip":
        return np.clip(np.nan_to_num(pred), 0.0, 1.0)
    lo, hi = pred.min(), pred.max()
    if not np.isfinite(lo) or not np.isfinite(hi) or hi - lo <= 0:
        return np.zeros_like(pred)  # a flat prediction carries no subject
    return (pred - lo) / (hi - lo)


def mask_from_score(
    score: np.ndarray, width: int, height: int, family: Family, exact: bool = False
) -> np.ndarray:
    """A :func:`score_map` -> uint8 mask (height, width) at the source size.

    ``exact``: resized with Pillow's Lanczos both ways, as rembg does, so the mask is
    rembg's (``--no-refine``). Otherwise an upscale is OpenCV's bicubic: within 0.15/255
    mean of Lanczos on 12-megapixel photos and far faster there (3 ms against
    88 ms), but near 0.5 the two can fall on different sides, which matters only when
    the mask is used as it is. A downscale is always Lanczos.
    """
    pred = normalise_output(score, family)
    x0, y0, w, h = content_box(family, pred.shape, width, height)
    pred = pred[y0 : y0 + h, x0 : x0 + w]
    small = (np.clip(pred, 0.0, 1.0) * 255).astype(np.uint8)
    if (width, height) == small.shape[::-1]:
        return small
    if exact or width < small.shape[1] or height < small.shape[0]:
        # Shrinking (a 1024 px model's mask for a smaller photo): OpenCV's bicubic does
        # not filter before it samples, so fine structure aliases; Pillow's Lanczos does,
        # as rembg's, and on masks this small it costs a few milliseconds.
        return np.asarray(Image.fromarray(small).resize((width, height), Image.Resampling.LANCZOS))
    return cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC)
