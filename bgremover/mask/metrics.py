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
    """SAD, mean |Δα|, MSE x1e3, IoU at 0.5 and (with a trimap) band MAE."""
    scores = {
        "sad": sad(alpha, truth),
        "mean_abs": mean_abs_diff(alpha, truth),
        "mse_e3": mse(alpha, truth) * 1e3,
        "iou": iou(alpha, truth),
    }
    if trimap is not None:
        scores["band_mae"] = band_mae(alpha, truth, trimap_band(trimap))
    return scores


def _dilate(binary: np.ndarray, radius: int) -> np.ndarray:
    """Binary dilation by a (2r+1)² square, separably, with shifts (pure numpy)."""
    out = binary.copy()
    for axis in (0, 1):
        grown = out.copy()
        n = out.shape[axis]
        for step in range(1, min(radius, n - 1) + 1):
            lead = [slice(None)] * 2
            lag = [slice(None)] * 2
            lead[axis], lag[axis] = slice(step, None), slice(None, -step)
            grown[tuple(lag)] |= out[tuple(lead)]
            grown[tuple(lead)] |= out[tuple(lag)]
        out = grown
    return out


def edge_band_radius(shape: tuple[int, ...]) -> int:
    """Half-width of the edge band: 5 px at 800 px, scaled with the image's long side."""
    return max(2, round(max(shape[:2]) / 160))


def edge_band(reference: np.ndarray, radius: int | None = None) -> np.ndarray:
    """Pixels within ``radius`` of the reference mask's 0.5 contour (hair, fur, outlines)."""
    fg = as_unit(reference) >= 0.5
    r = edge_band_radius(fg.shape) if radius is None else radius
    boundary = np.zeros_like(fg)
    boundary[:-1, :] |= fg[:-1, :] != fg[1:, :]
    boundary[:, :-1] |= fg[:, :-1] != fg[:, 1:]
    return _dilate(boundary, r)


def raw_stats(raw: np.ndarray) -> dict[str, float]:
    """Statistics of a model output before min-max normalisation."""
    r = np.asarray(raw, dtype=np.float64)
    return {
        "min": float(r.min()),
        "max": float(r.max()),
        "mean": float(r.mean()),
        "std": float(r.std()),
        "distinct_values": int(np.unique(r).size),
    }


def fidelity(
    reference: np.ndarray,
    other: np.ndarray,
    reference_raw: np.ndarray | None = None,
    other_raw: np.ndarray | None = None,
) -> dict[str, object]:
    """How far ``other`` (e.g. the int8 mask) is from ``reference`` (the fp32 mask).

    mean/max |Δα| over the image, mean |Δα| inside the reference's edge band,
    IoU at 0.5, and the raw outputs' statistics when given.
    """
    diff = np.abs(as_unit(reference) - as_unit(other))
    band = edge_band(reference)
    result: dict[str, object] = {
        "mean_abs": float(diff.mean()),
        "band_abs": float(diff[band].mean()) if band.any() else 0.0,
        "max_abs": float(diff.max()),
        "iou": iou(reference, other),
        "band_fraction": float(band.mean()),
        "band_radius": edge_band_radius(diff.shape),
    }
    if reference_raw is not None and other_raw is not None:
        result["raw_reference"] = raw_stats(reference_raw)
        result["raw_other"] = raw_stats(other_raw)
    return result
