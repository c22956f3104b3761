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
from .regions import changed_box, seen_change
from .tools import (
    TOOLS,
    Box,
    Kind,
    Operation,
    Prompter,
    Restart,
    Segmenter,
    ToolContext,
)

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

    def clicks(self) -> list[tuple[int, Operation]]:
        """The clicks in effect: the operations of a click tool since the last restart
        (what the next click is constrained by), each with its index in
        :attr:`operations` (what :meth:`Editor.remove` takes)."""
        ops = self.operations
        last = max((i for i, op in enumerate(ops) if op.spec.restart is not Restart.NO), default=-1)
        return [(i, op) for i, op in enumerate(ops) if i > last and op.spec.kind is Kind.CLICK]

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
    #: The pixels it changed that the user can see (:func:`~.regions.seen_change`).
    seen: int = 0


@dataclass
class _Splice:
    """A change of the history itself (an operation taken out, or put back): the steps
    from ``index`` on were ``old`` and are ``new``; the mask changed by the patches."""

    index: int
    old: list[_Step]
    new: list[_Step]
    box: Box | None
    before: np.ndarray | None
    after: np.ndarray | None


def _origin(box: Box | None) -> Box | None:
    """``box`` moved to (0, 0): the box of its own patch."""
    return None if box is None else (0, 0, box[2] - box[0], box[3] - box[1])


def _patches(
    old: np.ndarray, new: np.ndarray, box: Box | None
) -> tuple[np.ndarray | None, np.ndarray | None]:
    if box is None:
        return None, None
    x0, y0, x1, y1 = box
    return old[y0:y1, x0:x1].copy(), new[y0:y1, x0:x1].copy()


class Editor:
    """Edits being made on one photo: apply, undo and redo, with exact patches.

    ``rgb`` and ``base`` are the photo and the mask the edits start from, at the
    size the user works on; operations are given in those pixel coordinates.

    The history is a list of changes, each undone and redone as one: an operation
    applied, or an operation taken out of the edits (:meth:`remove`) or put back
    (:meth:`insert`) with the operations after it replayed. Whatever the changes, the
    mask is always the one :func:`apply_edits` gives for :attr:`edits`.
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
        #: The operations in effect, each with its patches.
        self._steps: list[_Step] = []
        self._done: list[_Step | _Splice] = []
        self._undone: list[_Step | _Splice] = []
        if edits:
            check_fits(edits, width, height)
            for op in edits.for_size(width, height):
                self._apply(op)

    @property
    def edits(self) -> Edits:
        """The operations in effect (undone ones left out), in this image's coordinates."""
        return Edits(self.size, tuple(step.op for step in self._steps))

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

    def splice_to_undo(self) -> int | None:
        """Where the change Undo takes back took an operation out or put one back (its
        index); None when it applied one (or there is nothing to undo)."""
        last = self._done[-1] if self._done else None
        return last.index if isinstance(last, _Splice) else None

    def splice_to_redo(self) -> int | None:
        """As :meth:`splice_to_undo`, for the change Redo applies again."""
        last = self._undone[-1] if self._undone else None
        return last.index if isinstance(last, _Splice) else None

    def _step(self, op: Operation) -> _Step:
        """Apply ``op`` to the mask as it is; its step (not yet in the history)."""
        new, box = apply_operation(op, self.alpha, self._ctx)
        before, after = _patches(self.alpha, new, box)
        self.alpha = new
        seen = 0 if before is None or after is None else seen_change(before, after, _origin(box))
        return _Step(op, box, before, after, tuple(self._ctx.clicks), seen)

    def seen_by(self, op: Operation) -> int | None:
        """How many pixels applying ``op`` (this very operation, in effect) changed that the
        user can see; None when it is not in effect."""
        for step in reversed(self._steps):
            if step.op is op:
                return step.seen
        return None

    def _apply(self, op: Operation) -> Box | None:
        step = self._step(op)
        self._steps.append(step)
        self._done.append(step)
        return step.box

    def apply(self, op: Operation) -> Box | None:
        """Apply ``op``; returns the box it changed (None when nothing changed)."""
        box = self._apply(op)
        self._undone.clear()
        return box

    def remove(self, index: int) -> Box | None:
        """Take operation ``index`` (of :attr:`edits`) out of the edits and replay the
        ones after it, as one change (Undo puts it back, bit for bit); returns the box
        that changed. The mask is then the one the edits without it give."""
        if not 0 <= index < len(self._steps):
            raise IndexError(f"There is no edit {index} to remove (there are {len(self._steps)}).")
        ops = [step.op for step in self._steps[index + 1 :]]
        return self._splice(index, ops)

    def insert(self, index: int, op: Operation) -> Box | None:
        """Put ``op`` into the edits before operation ``index`` and replay the ones after
        it, as one change (the inverse of :meth:`remove`); returns the box that changed."""
        if not 0 <= index <= len(self._steps):
            raise IndexError(f"An edit cannot go at {index} (there are {len(self._steps)}).")
        ops = [op] + [step.op for step in self._steps[index:]]
        return self._splice(index, ops)

    def _splice(self, index: int, ops: list[Operation]) -> Box | None:
        """The steps from ``index`` on replaced by ``ops`` applied to the mask as it was
        before step ``index`` (rewound by the exact patches, so that the result is a
        replay's, byte for byte), recorded as one change."""
        start = self.alpha
        old = self._steps[index:]
        rewound = start.copy()
        for step in reversed(old):
            if step.box is not None and step.before is not None:
                x0, y0, x1, y1 = step.box
                rewound[y0:y1, x0:x1] = step.before
        self.alpha = rewound
        self._ctx.clicks[:] = self._steps[index - 1].clicks if index > 0 else ()
        try:
            new = [self._step(op) for op in ops]
        except BaseException:
            self.alpha = start
            self._rebuild_clicks()
            raise
        del self._steps[index:]
        self._steps.extend(new)
        box = changed_box(start, self.alpha)
        before, after = _patches(start, self.alpha, box)
        self._done.append(_Splice(index, old, new, box, before, after))
        self._undone.clear()
        self._rebuild_clicks()
        return box

    def _patch(self, box: Box | None, pixels: np.ndarray | None) -> None:
        if box is None or pixels is None:
            return
        x0, y0, x1, y1 = box
        alpha = self.alpha.copy()
        alpha[y0:y1, x0:x1] = pixels
        self.alpha = alpha

    def _rebuild_clicks(self) -> None:
        """The clicks in effect after the last operation in effect."""
        self._ctx.clicks[:] = self._steps[-1].clicks if self._steps else ()

    def undo(self) -> Box | None:
        """Take back the last change, bit for bit; returns the box that changed."""
        if not self._done:
            return None
        change = self._done.pop()
        self._patch(change.box, change.before)
        if isinstance(change, _Splice):
            self._steps[change.index :] = change.old
        else:
            self._steps.pop()
        self._undone.append(change)
        self._rebuild_clicks()
        return change.box

    def redo(self) -> Box | None:
        """Apply again the last change undone; returns the box that changed."""
        if not self._undone:
            return None
        change = self._undone.pop()
        self._patch(change.box, change.after)
        if isinstance(change, _Splice):
            self._steps[change.index :] = change.new
        else:
            self._steps.append(change)
        self._done.append(change)
        self._rebuild_clicks()
        return change.box
