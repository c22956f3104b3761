"""Two (model, precision) sides on one image: both results, the numbers, the differences.

Side A is the reference and side B the other: fp32 and int8 of one model by default,
or any two, such as ``u2netp fp32`` against ``isnet-imgly fp32``. One function for the
command line's ``compare`` (sheet and JSON) and the app's comparison view, so both
show the same numbers for the same photo.

The metrics name the sides A and B (``infer_a_s``, ``infer_b_s``, and ``a`` / ``b``
records saying which model and precision each is). For the default pair (fp32 and
int8 of one model) the keys earlier versions wrote (``infer_fp32_s``,
``infer_int8_s``) are kept as well, so scripts reading them go on working.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.pipeline import ImageInput, Remover, Result
from ..errors import UsageError
from ..mask.metrics import fidelity
from ..network.guard import GuardCheck
from ..network.models import PRECISIONS
from .report import mask_difference


def parse_side(text: str | None, option: str, model: str, precision: str) -> tuple[str, str]:
    """A side as the command line (``--a``, ``--b``) and the app's ``--compare-a`` give
    it, as (model, precision): ``MODEL``, ``MODEL:PRECISION`` or a precision alone (of
    ``model``); None is ``model`` at ``precision``. A bad precision is a UsageError."""
    if text is None:
        return model, precision
    text = text.strip()
    if not text:
        raise UsageError(f"{option} is empty: give MODEL, MODEL:PRECISION or a precision.")
    if text in PRECISIONS:
        return model, text
    head, colon, tail = text.rpartition(":")
    if colon and tail in PRECISIONS and head:
        return head, tail
    # "u2netp:fp16": a precision that does not exist (a Windows drive's colon, or a
    # path that exists, is part of the model's name).
    if colon and head and tail.isalnum() and not Path(text).exists() and len(head) > 1:
        raise UsageError(
            f"{option} {text}: unknown precision {tail!r}; use {' or '.join(PRECISIONS)} "
            f"(e.g. {option} {head}:fp32)."
        )
    return text, "fp32"


def side_label(remover: Remover) -> str:
    """What a side is called in captions and numbers: ``u2netp fp32``, ``u2netp int8``
    (with its recipe when it is not the family's default one)."""
    label = f"{remover.spec.name} {remover.precision}"
    if remover.precision == "int8" and remover.recipe not in (None, remover.family.default_int8):
        label += f" ({remover.recipe})"
    return label


def is_precision_pair(a: Remover, b: Remover) -> bool:
    """The default comparison: fp32 against int8 of one model."""
    return a.spec == b.spec and (a.precision, b.precision) == ("fp32", "int8")


@dataclass(frozen=True)
class Comparison:
    """The same photo through side A (the reference) and side B."""

    a: Result
    b: Result
    #: What each side is ("u2netp fp32", "isnet-imgly fp32").
    label_a: str
    label_b: str
    #: :func:`~bgremover.mask.metrics.fidelity` of B's mask against A's, plus the inference
    #: seconds of each (``infer_a_s``, ``infer_b_s``) and a record of each side
    #: (``a``, ``b``: label, model, precision, recipe, providers, infer_s).
    metrics: dict[str, Any]
    #: |Δα| of the masks as uint8 (255 = 1.0), for heatmaps at any scale.
    diff: np.ndarray = field(repr=False)
    #: The raw outputs (before min-max normalisation) clipped to [0, 1], as uint8, at
    #: each model's output size.
    raw_a: np.ndarray = field(repr=False)
    raw_b: np.ndarray = field(repr=False)
    #: Their |Δ|; None when the two models' outputs differ in size (there is no
    #: pixel-for-pixel difference of a 320² and a 1024² output).
    raw_diff: np.ndarray | None = field(repr=False)

    @property
    def speed_ratio(self) -> float:
        """How many times as fast B's inference was as A's (below 1: B was slower)."""
        return float(self.metrics["infer_a_s"] / max(self.metrics["infer_b_s"], 1e-9))


def _unit_to_uint8(values: np.ndarray) -> np.ndarray:
    return (np.clip(values, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)


def _side(remover: Remover, result: Result, label: str) -> dict[str, Any]:
    return {
        "label": label,
        "model": remover.spec.name,
        "precision": remover.precision,
        "recipe": remover.int8_recipe if remover.precision == "int8" else None,
        "providers": list(result.providers),
        "infer_s": model_seconds(result),
        "models": list(result.models),
        "doubt": result.evidence.as_dict() if result.evidence is not None else None,
    }


def model_seconds(result: Result) -> float:
    """The seconds the model took on the photo: for a combined model, both of the models
    it ran."""
    return result.timings["infer"] + result.timings.get("second_model", 0.0)


#: B changes a photo materially when its mask is below this IoU against A's (the
#: fidelity int8 is held to).
MATERIAL_IOU = 0.98


def verdict(
    iou: float, label_a: str, label_b: str, int8_b: GuardCheck | None, reference: bool = True
) -> str:
    """What B does to the photo, in words, and for B in int8 what the int8 guard makes
    of it. ``reference``: A is what B is held to (fp32 against int8 of one model); for
    two models neither is, and a disagreement is said without taking a side."""
    if iou < MATERIAL_IOU and not reference:
        return (
            f"{label_a} and {label_b} disagree on this photo: on {100 * (1 - iou):.1f} % of "
            f"what either keeps (IoU {iou:.3f}). Neither is the reference: the panes show "
            "where they differ, so look which one is right here."
        )
    if iou < MATERIAL_IOU:
        text = (
            f"{label_b} changes this photo materially: its mask and {label_a}'s disagree "
            f"on {100 * (1 - iou):.1f} % of what either keeps (IoU {iou:.3f})."
        )
        if int8_b is not None:
            text += (
                " The int8 guard catches it: with the guard on (the default), this photo "
                "is made in fp32."
                if int8_b.in_doubt
                else " The int8 guard does not catch it (little of the photo is undecided): "
                "use fp32 for this photo."
            )
        return text
    if not reference:
        return f"{label_a} and {label_b} agree on this photo (IoU {iou:.3f})."
    text = f"{label_b} keeps {label_a}'s mask on this photo (IoU {iou:.3f})."
    if int8_b is not None and int8_b.in_doubt:
        text += " int8 was unsure of it, so with the guard on it is made in fp32."
    return text


def compare(
    a: Remover, b: Remover, image: ImageInput, max_megapixels: float | None = None
) -> Comparison:
    """Run ``image`` through both removers (decoded once) and measure what B changes.

    Both sides run as they are, without the int8 guard (a comparison shows what int8
    does); the guard's check of an int8 side is reported (``guard_a``, ``guard_b``) and
    ``verdict`` says in words whether B changes the photo materially."""
    a, b = a.without_guard(), b.without_guard()
    ra = a.remove(image, max_megapixels)
    rb = b.remove(ra.image)  # the same decoded pixels
    label_a, label_b = side_label(a), side_label(b)
    metrics = fidelity(ra.mask, rb.mask, ra.raw, rb.raw)
    metrics["a"] = _side(a, ra, label_a)
    metrics["b"] = _side(b, rb, label_b)
    metrics["guard_a"] = ra.guard.as_dict() if ra.guard is not None else None
    metrics["guard_b"] = rb.guard.as_dict() if rb.guard is not None else None
    agreement = float(metrics["iou"])  # type: ignore[arg-type]
    metrics["material"] = agreement < MATERIAL_IOU
    # A warning only where A is the reference B is held to (int8 of the same model).
    reference = is_precision_pair(a, b)
    metrics["warning"] = metrics["material"] and reference
    metrics["verdict"] = verdict(agreement, label_a, label_b, rb.guard, reference)
    metrics["infer_a_s"] = model_seconds(ra)
    metrics["infer_b_s"] = model_seconds(rb)
    if is_precision_pair(a, b):
        metrics["infer_fp32_s"] = model_seconds(ra)
        metrics["infer_int8_s"] = model_seconds(rb)
    assert ra.raw is not None and rb.raw is not None  # Remover.finish always sets it
    raw_a, raw_b = _unit_to_uint8(ra.raw), _unit_to_uint8(rb.raw)
    same_size = raw_a.shape == raw_b.shape
    return Comparison(
        ra,
        rb,
        label_a,
        label_b,
        metrics,
        diff=mask_difference(ra.mask, rb.mask),
        raw_a=raw_a,
        raw_b=raw_b,
        raw_diff=mask_difference(raw_a, raw_b) if same_size else None,
    )
