"""Two models' masks made one, and what a mask says about whether it can be trusted.

Used by a combined model (``--model best``): its first model's mask is looked at
(:func:`evidence`); when that mask is unsure (:meth:`Evidence.unsure`), the second model
runs and the two are fused (:func:`fuse`). Every cutout, of any model, carries the same
evidence, and :meth:`Evidence.doubts` turns it into the words a person sees ("this cutout
may be wrong").

Everything here works without ground truth. The limits were chosen as
docs/decisions/0012 says: the cascade's on one folder and scored on the other; the
doubt's limits are round figures that were not fitted. No Qt, no ONNX Runtime: masks in,
masks and figures out.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

#: Alpha (0-255) at or above which a pixel is more subject than background.
SOLID = 128
#: The alpha, in either mask, that links a part of one model's subject to the other's: a
#: quarter, so that a plant's fine leaves a model saw faintly stay joined to its pot.
LINK = 64
#: Alpha strictly between these is half-transparent (neither background nor subject).
HAZE_LOW, HAZE_HIGH = 25, 230
#: The long side, in pixels, at which masks are looked at: the figures and the parts are
#: those of a picture this size, so that a 12-megapixel photo costs what a 1-megapixel
#: one does (the fused mask itself is made at the photo's size).
WORK_SIDE = 1024

#: The first model's mask is unsure, and the second model is asked, when it has at least
#: this many half-transparent pixels per solid one (or any of :meth:`Evidence.odd`).
#: Chosen on the matting folder (the lowest SAD of the cascade), scored on the portraits.
ASK_SECOND_HAZE = 0.08
#: A cutout is in doubt with at least this many half-transparent pixels per solid one: a
#: subject a quarter of which is haze.
DOUBT_HAZE = 0.25
#: ... or when this share of its subject lies outside its largest part.
DOUBT_FRAGMENTS = 0.10
#: ... or when its subject covers less or more of the photo than these shares.
SUBJECT_RANGE = (0.01, 0.95)
#: ... or, for a combined model, when its two models agree (IoU of their masks) on less
#: than two thirds.
DOUBT_AGREEMENT = 2 / 3


@dataclass(frozen=True)
class Evidence:
    """What a mask says about itself, and for a combined model how its models agreed."""

    #: Half-transparent pixels per solid pixel.
    haze: float
    #: The share of the solid subject outside its largest connected part.
    fragments: float
    #: The share of the photo that is solid subject.
    subject: float
    #: The IoU of the combined model's two masks; None when only one model ran.
    agreement: float | None = None

    def odd(self) -> bool:
        """Broken up, or next to nothing or nearly everything found."""
        low, high = SUBJECT_RANGE
        return self.fragments >= DOUBT_FRAGMENTS or not low <= self.subject <= high

    def unsure(self) -> bool:
        """Whether a combined model asks its second model (see :data:`ASK_SECOND_HAZE`)."""
        return self.haze >= ASK_SECOND_HAZE or self.odd()

    def doubts(self) -> tuple[str, ...]:
        """Why the cutout may be wrong, in words; () when nothing points to it."""
        low, high = SUBJECT_RANGE
        found = []
        if self.agreement is not None and self.agreement < DOUBT_AGREEMENT:
            found.append(f"its two models agree on only {100 * self.agreement:.0f} % of it")
        if self.subject < low:
            found.append("almost nothing was found as the subject")
        elif self.subject > high:
            found.append("almost the whole photo was taken as the subject")
        if self.haze >= DOUBT_HAZE:
            found.append("much of it is half-transparent haze")
        if self.fragments >= DOUBT_FRAGMENTS:
            found.append(f"{100 * self.fragments:.0f} % of it lies in separate pieces")
        return tuple(found)

    @property
    def doubtful(self) -> bool:
        return bool(self.doubts())

    def as_dict(self) -> dict[str, object]:
        return {
            "doubtful": self.doubtful,
            "reasons": list(self.doubts()),
            "haze": round(self.haze, 4),
            "fragments": round(self.fragments, 4),
            "subject": round(self.subject, 4),
            "agreement": None if self.agreement is None else round(self.agreement, 4),
        }


def _small(mask: np.ndarray) -> np.ndarray:
    height, width = mask.shape
    scale = WORK_SIDE / max(height, width)
    if scale >= 1:
        return mask
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return cv2.resize(mask, size, interpolation=cv2.INTER_AREA)


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    sa, sb = a >= SOLID, b >= SOLID
    union = int(np.count_nonzero(sa | sb))
    return 1.0 if union == 0 else int(np.count_nonzero(sa & sb)) / union


def agreement(first: np.ndarray, second: np.ndarray) -> float:
    """How far two models' uint8 masks of one photo agree: the IoU of their solid parts."""
    return _iou(_small(first), _small(second))


def evidence(mask: np.ndarray) -> Evidence:
    """The :class:`Evidence` of a uint8 mask (its ``agreement`` is None)."""
    small = _small(mask)
    solid = small >= SOLID
    count = int(np.count_nonzero(solid))
    haze = int(np.count_nonzero((small > HAZE_LOW) & (small < HAZE_HIGH)))
    fragments = 0.0
    if count:
        n, _, stats, _ = cv2.connectedComponentsWithStats(solid.astype(np.uint8), connectivity=8)
        areas = stats[1:n, cv2.CC_STAT_AREA]
        fragments = 1.0 - float(areas.max()) / float(areas.sum())
    return Evidence(
        haze=haze / max(count, 1),
        fragments=fragments,
        subject=count / small.size,
    )


def fuse(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Two uint8 masks of one photo made one: each model's subject where it is joined to
    what both models call subject, and nothing either model sees alone, apart from it.

    The parts are the connected regions of either mask at :data:`LINK` or more. A part
    that holds a pixel both masks call solid is the subject, at the higher of the two
    alphas (what one model dropped or left see-through, the other restores); every other
    pixel takes the lower of the two (a sign or a fleck one model took, away from the
    subject, goes). Where the masks share no solid pixel at all, nothing tells them
    apart: the higher of the two everywhere.
    """
    if first.shape != second.shape:
        raise ValueError(f"masks of different sizes: {first.shape} and {second.shape}")
    high = np.maximum(first, second)
    a, b = _small(first), _small(second)
    count, labels = cv2.connectedComponents(
        (np.maximum(a, b) >= LINK).astype(np.uint8), connectivity=8
    )
    held = np.bincount(labels[(a >= SOLID) & (b >= SOLID)], minlength=count) > 0
    held[0] = False
    if not held.any():
        return high
    keep = held[labels].astype(np.uint8)
    if keep.shape != first.shape:
        keep = np.asarray(cv2.resize(keep, first.shape[::-1], interpolation=cv2.INTER_NEAREST))
    return np.where(keep > 0, high, np.minimum(first, second))
