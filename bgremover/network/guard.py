"""The int8 guard: a cheap check of int8's own output that says when it is in doubt.

int8 is faithful to fp32 where the network is sure of itself. Where a broad part of the
photo sits near 0.5 in the network's output (a subject the network half sees, a
background it half takes for the subject), the small shifts of int8 arithmetic flip
whole regions across 0.5: on some photos fp32 itself flips them under invisible
+-1/255 noise (``tests/benchmarks/int8_noise_floor.py``). So the check reads the int8
output it already has, at no cost: its *doubt* is the share of output pixels within
``NEAR`` of 0.5, per pixel of the subject (output >= 0.5). At or above ``THRESHOLD``
the photo is in doubt, and with the guard on (the default for int8) the engine runs
it in fp32 as well and uses that result; the result, the command line's summary, the
app and ``compare`` say so.

**Where the threshold comes from.** Not from an evaluation folder: from the int8
calibration views (the photos int8 is calibrated on, ten views each). It is the
lowest doubt among the views on which int8's mask is below IoU 0.98 against fp32's,
so every such calibration view is caught (``python tests/benchmarks/int8_guard.py
--calibration`` prints it, and how each folder fares with it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

__all__ = ["CLI_HINT", "NEAR", "THRESHOLD", "GuardCheck", "check", "doubt", "summary"]

#: How close to 0.5 an output pixel is to count as undecided.
NEAR = 0.05
#: The doubt at and above which int8 is in doubt on a photo (see the module's docstring):
#: the calibration views' lowest such doubt, 0.0226834, rounded down.
THRESHOLD = 0.02268
#: What the command line adds to :func:`summary`: how to keep int8 for every image.
CLI_HINT = " (--no-int8-guard keeps int8 for every image)"


def doubt(score: np.ndarray) -> float:
    """The share of ``score``'s pixels (the model's output, 0..1) within ``NEAR`` of 0.5,
    per pixel at or above 0.5 (at least one)."""
    score = np.asarray(score, dtype=np.float32)
    undecided = int(np.count_nonzero(np.abs(score - 0.5) < NEAR))
    subject = int(np.count_nonzero(score >= 0.5))
    return undecided / max(subject, 1)


@dataclass(frozen=True)
class GuardCheck:
    """What the int8 guard found on one photo."""

    #: :func:`doubt` of the int8 output.
    doubt: float
    #: Whether fp32 was run for the photo and its result used.
    ran_fp32: bool

    @property
    def in_doubt(self) -> bool:
        return self.doubt >= THRESHOLD

    def words(self) -> str:
        """One sentence for a person, or "" when int8 was not in doubt."""
        if not self.in_doubt:
            return ""
        if self.doubt >= 1:
            why = "more of it is undecided than the subject the model finds"
        else:
            why = f"an area of {100 * self.doubt:.1f} % of the subject is undecided"
        if self.ran_fp32:
            return f"int8 was unsure of this photo ({why}), so it was made in fp32."
        return (
            f"int8 is unsure of this photo ({why}): its mask may differ from fp32's in "
            "whole regions."
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "doubt": round(self.doubt, 5),
            "threshold": THRESHOLD,
            "in_doubt": self.in_doubt,
            "ran_fp32": self.ran_fp32,
        }


def check(score: np.ndarray, guard: bool) -> GuardCheck:
    """The check of an int8 ``score``; ``guard`` says whether fp32 runs when in doubt."""
    found = GuardCheck(doubt(score), ran_fp32=False)
    return replace(found, ran_fp32=guard and found.in_doubt)


def summary(checks: Iterable[GuardCheck | None], hint: str = "") -> str:
    """A batch's line about the guard ("" when int8 was sure of every image): how many
    images were made in fp32, or with the guard off, how many int8 was unsure of.
    ``hint`` is appended to the first case: how to keep int8 everywhere."""
    found = [c for c in checks if c is not None]
    made = sum(c.ran_fp32 for c in found)
    unsure = sum(c.in_doubt for c in found)
    if made:
        images = "image" if len(found) == 1 else "images"
        was, it = ("was", "it") if made == 1 else ("were", "them")
        return f"{made} of {len(found)} {images} {was} made in fp32: int8 was unsure of {it}{hint}."
    if unsure:
        images = "image" if len(found) == 1 else "images"
        masks = "its mask" if unsure == 1 else "their masks"
        return (
            f"int8 was unsure of {unsure} of {len(found)} {images}: {masks} may differ "
            "from fp32's in whole regions."
        )
    return ""
