"""Mask metrics, pure numpy: agreement between two alphas and scores against ground truth.

Alphas are uint8 (0..255) or float (0..1) arrays of the same shape.
"""

from __future__ import annotations

import numpy as np


def as_unit(alpha: np.ndarray) -> np.ndarray:
    """Alpha as float64 in [0, 1]."""
    a = np.asarray(alpha)
    if a.dtype == np.uint8:
        return a.astype(np.float64) / 255.0
    return a.astype(np.float64)


def iou(a: np.ndarray, b: np.ndarray, threshold: float = 0.5) -> float:
    """Intersection over union of the two masks thresholded at ``threshold``."""
    fa, fb = as_unit(a) >= threshold, as_unit(b) >= threshold
    union = np.logical_or(fa, fb).sum()
    return 1.0 if union == 0 else float(np.logical_and(fa, fb).sum() / union)


def mean_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Mean |a - b| in alpha units (0..1)."""
    return float(np.abs(as_unit(a) - as_unit(b)).mean())


def sad(alpha: np.ndarray, truth: np.ndarray) -> float:
    """Sum of absolute differences / 1000 (the alphamatting.com convention)."""
    return float(np.abs(as_unit(alpha) - as_unit(truth)).sum() / 1000.0)


def mse(alpha: np.ndarray, truth: np.ndarray) -> float:
    return float(((as_unit(alpha) - as_unit(truth)) ** 2).mean())


def trimap_band(trimap: np.ndarray) -> np.ndarray:
    """The unknown (grey) region of an 8-bit trimap: 10 < t < 245."""
    t = np.asarray(trimap)
    return (t > 10) & (t < 245)


def band_mae(alpha: np.ndarray, truth: np.ndarray, band: np.ndarray) -> float:
    """Mean |alpha - truth| inside ``band`` (hair, fur, fine structure)."""
    if not band.any():
        return 0.0
    return float(np.abs(as_unit(alpha) - as_unit(truth))[band].mean())


def score_against_truth(
    alpha: np.ndarray, truth: np.ndarray, trimap: np.ndarray | None = None
) -> dict[str, float]:
    """SAD, MSE x1e3, IoU at 0.5 and (with a trimap) band MAE."""
    scores = {
        "sad": sad(alpha, truth),
        "mse_e3": mse(alpha, truth) * 1e3,
        "iou": iou(alpha, truth),
    }
    if trimap is not None:
        scores["band_mae"] = band_mae(alpha, truth, trimap_band(trimap))
    return scores
