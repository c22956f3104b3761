"""fp32 against int8 on one image: both results, the fidelity numbers, the differences.

One function for the command line's ``compare`` (sheet and JSON) and the app's
comparison view, so both show the same numbers for the same photo.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .metrics import fidelity
from .pipeline import ImageInput, Remover, Result
from .report import mask_difference


@dataclass(frozen=True)
class PrecisionComparison:
    """The same photo through the fp32 and the int8 model."""

    fp32: Result
    int8: Result
    #: :func:`~bgremover.metrics.fidelity` of the network masks, plus the inference
    #: seconds of each (``infer_fp32_s``, ``infer_int8_s``).
    metrics: dict[str, Any]
    #: |Δα| of the masks as uint8 (255 = 1.0), for heatmaps at any scale.
    diff: np.ndarray = field(repr=False)
    #: The raw outputs (before min-max normalisation) clipped to [0, 1], as uint8,
    #: and their |Δ|, at the model's output size.
    fp32_raw: np.ndarray = field(repr=False)
    int8_raw: np.ndarray = field(repr=False)
    raw_diff: np.ndarray = field(repr=False)


def _unit_to_uint8(values: np.ndarray) -> np.ndarray:
    return (np.clip(values, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)


def compare_precisions(
    fp32: Remover, int8: Remover, image: ImageInput, max_megapixels: float | None = None
) -> PrecisionComparison:
    """Run ``image`` through both removers (decoded once) and measure what int8 changes."""
    a = fp32.remove(image, max_megapixels)
    b = int8.remove(a.image)  # the same decoded pixels
    metrics = fidelity(a.mask, b.mask, a.raw, b.raw)
    metrics["infer_fp32_s"] = a.timings["infer"]
    metrics["infer_int8_s"] = b.timings["infer"]
    assert a.raw is not None and b.raw is not None  # Remover.finish always sets it
    raw_a, raw_b = _unit_to_uint8(a.raw), _unit_to_uint8(b.raw)
    return PrecisionComparison(
        a,
        b,
        metrics,
        diff=mask_difference(a.mask, b.mask),
        fp32_raw=raw_a,
        int8_raw=raw_b,
        raw_diff=mask_difference(raw_a, raw_b),
    )
