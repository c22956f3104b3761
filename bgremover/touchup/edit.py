"""Touch-up: the user's corrections to a mask, as data.

An edit is a list of :class:`Operation` s (one use of a tool each) applied in
order to the mask the user sees (the model's mask, edge-refined when refinement
is on, before the input's own transparency is applied). Points are in the pixel
coordinates of the image the edits were made on (:attr:`Edits.size`); applied
to the same photo at another size they are scaled, so an edit made on a preview
replays at full size on save and the same edits file re-applies after a change
of model or settings (``bgremover remove IMAGE --edits FILE``).

The tools themselves, what each is given and how each applies, are one record
each in :data:`bgremover.touchup.tools.TOOLS`; this module reads and writes edits,
replays them (:func:`apply_edits`) and keeps them for undo (:class:`Editor`), and
knows no tool by name. Every operation returns the box of the pixels it changed,
so a view redraws only that; :class:`Editor` keeps those patches for exact undo
and redo.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import EditsError
from .tools import TOOLS, Box, Operation, Prompter, Restart, Segmenter, ToolContext

__all__ = [
    "TOOLS",
    "Box",
    "Editor",
    "Edits",
    "Operation",
    "Prompter",
    "Segmenter",
    "apply_edits",
    "apply_operation",
    "load_edits",
]

FORMAT = "bgremover-edits"
VERSION = 1


@dataclass(frozen=True)
class Edits:
    """The corrections made to one photo, in order, and the size they were made at."""

    #: (width, height) of the image the operations' coordinates refer to.
    size: tuple[int, int]
    operations: tuple[Operation, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.operations)

    def then(self, op: Operation) -> Edits:
        return replace(self, operations=(*self.operations, op))

    def effective(self) -> Edits:
        """The same result with fewer operations: what precedes the last reset or load is moot."""
        ops = self.operations
        last = max((i for i, op in enumerate(ops) if op.spec.restart is not Restart.NO), default=-1)
        if last >= 0 and ops[last].spec.restart is Restart.OWN_MASK:
            return replace(self, operations=ops[last:])
        return replace(self, operations=ops[last + 1 :])

    @property
    def click_models(self) -> frozenset[str]:
        """The click models the operations in effect were made with (replaying needs them)."""
        return frozenset(op.model for op in self.effective().operations if op.model)

    def for_size(self, width: int, height: int) -> tuple[Operation, ...]:
        """The operations scaled to the same photo at width x height."""
        sx, sy = width / self.size[0], height / self.size[1]
        return tuple(op.scaled(sx, sy) for op in self.operations)

    def to_json(self) -> str:
        data = {
            "format": FORMAT,
            "version": VERSION,
            "size": list(self.size),
            "operations": [op.to_json() for op in self.effective().operations],
        }
        return json.dumps(data, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Edits:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise EditsError(f"This is not an edits file (JSON): {exc}.") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise EditsError("This JSON file is not a bgremover edits file.")
        if data.get("version") != VERSION:
            raise EditsError(
                f"This edits file is version {data.get('version')!r}; this bgremover "
                f"reads version {VERSION}.",
                fix="Update bgremover to apply it.",
            )
        try:
            width, height = (int(v) for v in data["size"])
        except (KeyError, TypeError, ValueError) as exc:
            raise EditsError("The edits file does not say the image size it was made at.") from exc
        if width <= 0 or height <= 0:
            raise EditsError("The edits file's image size is not positive.")
        ops = data.get("operations", [])
        if not isinstance(ops, list):
            raise EditsError("The edits file's 'operations' is not a list.")
        return cls((width, height), tuple(Operation.from_json(op) for op in ops))


def load_edits(path: Path) -> Edits:
    """Read an edits file, with a clear message when that fails."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EditsError(
            f"Could not read the edits file {path}: {exc}.",
            fix="Give the path of a file saved with Touch Up > Export Edits in the app.",
        ) from exc
    return Edits.from_json(text)


def check_fits(edits: Edits, width: int, height: int) -> None:
    """Refuse edits made on a photo of another shape (a wrong file for this image)."""
    ew, eh = edits.size
    if abs(ew / eh - width / height) > 0.01 * (width / height) + 2.0 / min(height, eh):
        raise EditsError(
            f"These edits were made on a {ew}×{eh} image; this one is {width}×{height}, "
            "another shape.",
            fix="Apply an edits file to the photo it was made on.",
        )


# --- applying -----------------------------------------------------------------


def apply_operation(
    op: Operation, alpha: np.ndarray, ctx: ToolContext
) -> tuple[np.ndarray, Box | None]:
    """One operation (already at this image's scale) on ``alpha``, by its tool's record;
    returns (new, changed box)."""
    tool = op.spec
    if tool.needs_model and ctx.segment is None:
        raise EditsError(
            f"A {tool.name!r} edit needs the model, which is not loaded here.",
            fix="Replay these edits where the model runs (bgremover remove PHOTO --edits FILE).",
        )
    if tool.restart is not Restart.NO:
        ctx.clicks.clear()
    return tool.apply(op, alpha, ctx)


def apply_edits(
    edits: Edits,
    rgb: np.ndarray,
    base: np.ndarray,
    segment: Segmenter | None = None,
    prompt: Prompter | None = None,
) -> np.ndarray:
    """The mask after ``edits``, replayed at the size of ``rgb`` on the mask ``base``."""
    height, width = base.shape
    check_fits(edits, width, height)
    ctx = ToolContext(rgb, base, segment, prompt=prompt)
    alpha = base
    for op in edits.effective().for_size(width, height):
        alpha, _ = apply_operation(op, alpha, ctx)
    return alpha


@dataclass
class _Step:
    op: Operation
    box: Box | None
    before: np.ndarray | None
    after: np.ndarray | None
    #: The clicks in effect after it (what the next click is constrained by).
    clicks: tuple[tuple[float, float, bool], ...] = ()


class Editor:
    """Edits being made on one photo: apply, undo and redo, with exact patches.

    ``rgb`` and ``base`` are the photo and the mask the edits start from, at the
    size the user works on; operations are given in those pixel coordinates.
    """

    def __init__(
        self,
        rgb: np.ndarray,
        base: np.ndarray,
        edits: Edits | None = None,
        segment: Segmenter | None = None,
        prompt: Prompter | None = None,
    ) -> None:
        height, width = base.shape
        self.rgb = rgb
        self.base = base
        self.segment = segment
        self.size = (width, height)
        self.alpha = base
        self._ctx = ToolContext(rgb, base, segment, prompt=prompt)
        self._done: list[_Step] = []
        self._undone: list[_Step] = []
        if edits:
            check_fits(edits, width, height)
            for op in edits.for_size(width, height):
                self._apply(op)

    @property
    def edits(self) -> Edits:
        """The operations in effect (undone ones left out), in this image's coordinates."""
        return Edits(self.size, tuple(step.op for step in self._done))

    @property
    def prompt(self) -> Prompter | None:
        """The click model bound to this photo (None until its embedding is ready)."""
        return self._ctx.prompt

    @prompt.setter
    def prompt(self, prompt: Prompter | None) -> None:
        self._ctx.prompt = prompt

    @property
    def can_undo(self) -> bool:
        return bool(self._done)

    @property
    def can_redo(self) -> bool:
        return bool(self._undone)

    def _apply(self, op: Operation) -> Box | None:
        new, box = apply_operation(op, self.alpha, self._ctx)
        before = after = None
        if box is not None:
            x0, y0, x1, y1 = box
            before = self.alpha[y0:y1, x0:x1].copy()
            after = new[y0:y1, x0:x1].copy()
        self.alpha = new
        self._done.append(_Step(op, box, before, after, tuple(self._ctx.clicks)))
        return box

    def apply(self, op: Operation) -> Box | None:
        """Apply ``op``; returns the box it changed (None when nothing changed)."""
        box = self._apply(op)
        self._undone.clear()
        return box

    def _patch(self, box: Box | None, pixels: np.ndarray | None) -> None:
        if box is None or pixels is None:
            return
        x0, y0, x1, y1 = box
        alpha = self.alpha.copy()
        alpha[y0:y1, x0:x1] = pixels
        self.alpha = alpha

    def _rebuild_clicks(self) -> None:
        """The clicks in effect after the last operation done."""
        self._ctx.clicks[:] = self._done[-1].clicks if self._done else ()

    def undo(self) -> Box | None:
        """Take back the last operation, bit for bit; returns the box that changed."""
        if not self._done:
            return None
        step = self._done.pop()
        self._patch(step.box, step.before)
        self._undone.append(step)
        self._rebuild_clicks()
        return step.box

    def redo(self) -> Box | None:
        """Apply again the last operation undone; returns the box that changed."""
        if not self._undone:
            return None
        step = self._undone.pop()
        self._patch(step.box, step.after)
        self._done.append(step)
        self._rebuild_clicks()
        return step.box
