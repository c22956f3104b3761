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
replays them (:func:`apply_edits`), keeps their one history (:class:`History`: what
Undo takes back and Redo makes again, counted from typed commands, :data:`Command`),
applies it to a mask (:class:`Editor`), and knows no tool by name. Every operation
returns the box of the pixels it changed, so a view redraws only that; :class:`Editor`
keeps those patches for exact undo and redo.
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
    "Apply",
    "Box",
    "Change",
    "Command",
    "Editor",
    "Edits",
    "History",
    "Insert",
    "Move",
    "Operation",
    "Prompter",
    "Redo",
    "Remove",
    "Segmenter",
    "Undo",
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


@dataclass(frozen=True)
class Apply:
    """Apply ``op`` after the operations in effect."""

    op: Operation


@dataclass(frozen=True)
class Remove:
    """Take operation ``index`` out of the edits; the ones after it are replayed."""

    index: int


@dataclass(frozen=True)
class Insert:
    """Put ``op`` into the edits before operation ``index``; the ones after it are replayed."""

    index: int
    op: Operation


@dataclass(frozen=True)
class Undo:
    """Take back the last change; ``redo`` False: not offered back by Redo (a click that
    changed nothing)."""

    redo: bool = True


@dataclass(frozen=True)
class Redo:
    """Make again the last change taken back."""


#: What the user asks of the edits: :meth:`History.after` counts it, :meth:`Editor.make`
#: applies it to the mask.
Command = Apply | Remove | Insert | Undo | Redo


@dataclass(frozen=True, eq=False)
class Change:
    """One change of the edits, undone and redone as one: ``op`` appended (``at`` None),
    or taken out of (``removes``) or put into the edits at index ``at``, the operations
    after it replayed. Compared by identity: the Editor keeps its pixels per change."""

    op: Operation
    at: int | None = None
    removes: bool = False

    def made(self, ops: tuple[Operation, ...], forward: bool) -> tuple[Operation, ...]:
        """The operations ``ops`` once this change is made (``forward``) or taken back."""
        if self.at is None:
            return (*ops, self.op) if forward else ops[:-1]
        if self.removes == forward:
            return ops[: self.at] + ops[self.at + 1 :]
        return (*ops[: self.at], self.op, *ops[self.at :])


@dataclass(frozen=True)
class Move:
    """``command`` counted on ``before``: ``change`` made (``forward``) or taken back."""

    command: Command
    before: History
    change: Change
    forward: bool
    after: History

    @property
    def runs_model(self) -> bool:
        """Whether making it may run the model (an operation applied, or replayed, needs it)."""
        at = self.change.at
        if at is None:
            return self.forward and self.change.op.spec.needs_model
        return any(op.spec.needs_model for op in self.after.edits.operations[at:])


@dataclass(frozen=True)
class History:
    """The edits in effect and the changes that led to them: the one history of a photo's
    edits, a value the app counts commands on at once and an :class:`Editor` follows."""

    edits: Edits
    #: The changes made, the last made last: what Undo takes back.
    done: tuple[Change, ...] = ()
    #: The changes taken back, the last taken back last: what Redo makes again.
    undone: tuple[Change, ...] = ()

    @classmethod
    def start(cls, edits: Edits) -> History:
        """A history for ``edits`` made elsewhere: their operations appended one by one."""
        return cls(edits, tuple(Change(op) for op in edits.operations))

    @property
    def can_undo(self) -> bool:
        return bool(self.done)

    @property
    def can_redo(self) -> bool:
        return bool(self.undone)

    def after(self, command: Command) -> Move | None:
        """``command`` counted on this history; None when there is nothing to undo or
        redo, or no such operation."""
        ops = self.edits.operations
        if isinstance(command, Undo | Redo):
            forward = isinstance(command, Redo)
            stack = self.undone if forward else self.done
            if not stack:
                return None
            change = stack[-1]
            edits = replace(self.edits, operations=change.made(ops, forward))
            if forward:
                after = History(edits, (*self.done, change), self.undone[:-1])
            else:
                offer = not isinstance(command, Undo) or command.redo
                undone = (*self.undone, change) if offer else self.undone
                after = History(edits, self.done[:-1], undone)
            return Move(command, self, change, forward, after)
        if isinstance(command, Apply):
            change = Change(command.op)
        elif isinstance(command, Remove):
            if not 0 <= command.index < len(ops):
                return None
            change = Change(ops[command.index], command.index, removes=True)
        else:
            if not 0 <= command.index <= len(ops):
                return None
            change = Change(command.op, command.index)
        edits = replace(self.edits, operations=change.made(ops, True))
        return Move(command, self, change, True, History(edits, (*self.done, change)))


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
    """A change inside the edits (an operation taken out, or put back) as made here: the
    steps from ``index`` on were ``old`` and became ``new``; the mask changed by the
    patches. ``forward``: made as the change itself (else as its taking back)."""

    index: int
    old: list[_Step]
    new: list[_Step]
    box: Box | None
    before: np.ndarray | None
    after: np.ndarray | None
    forward: bool = True


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
    """Edits being made on one photo: its :class:`History` applied to the mask, with
    exact patches. ``rgb`` and ``base`` are the photo and the mask the edits start from, at the
    size the user works on; operations are given in those pixel coordinates.

    Each change of :attr:`history` (an operation applied, or one taken out of the edits
    or put back with the operations after it replayed) is undone and redone as one, bit
    for bit by the patches kept of it. :meth:`make` takes a move counted elsewhere (the
    app counts the user's commands at once): the editor takes its history as its own, and
    a change it did not make itself is made by replaying. Whatever the changes, the mask
    is always the one :func:`apply_edits` gives for :attr:`edits`.
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
        self.history = History(Edits(self.size))
        #: The operations in effect, each with its patches.
        self._steps: list[_Step] = []
        #: The pixels of each change of the history made here.
        self._made: dict[Change, _Step | _Splice] = {}
        if edits:
            check_fits(edits, width, height)
            for op in edits.for_size(width, height):
                self.do(Apply(op))

    @property
    def edits(self) -> Edits:
        """The operations in effect (undone ones left out), in this image's coordinates."""
        return self.history.edits

    @property
    def prompt(self) -> Prompter | None:
        """The click model bound to this photo (None until its embedding is ready)."""
        return self._ctx.prompt

    @prompt.setter
    def prompt(self, prompt: Prompter | None) -> None:
        self._ctx.prompt = prompt

    @property
    def can_undo(self) -> bool:
        return self.history.can_undo

    @property
    def can_redo(self) -> bool:
        return self.history.can_redo

    def splice_to_undo(self) -> int | None:
        """Where the change Undo takes back took an operation out or put one back (its
        index); None when it applied one (or there is nothing to undo)."""
        return self.history.done[-1].at if self.history.done else None

    def splice_to_redo(self) -> int | None:
        """As :meth:`splice_to_undo`, for the change Redo applies again."""
        return self.history.undone[-1].at if self.history.undone else None

    def seen_by(self, op: Operation) -> int | None:
        """How many pixels applying ``op`` (this very operation, in effect) changed that the
        user can see; None when it is not in effect."""
        for step in reversed(self._steps):
            if step.op is op:
                return step.seen
        return None

    def do(self, command: Command) -> Box | None:
        """``command`` on this editor's own history; returns the box that changed."""
        move = self.history.after(command)
        return None if move is None else self.make(move)

    def apply(self, op: Operation) -> Box | None:
        """Apply ``op``; returns the box it changed (None when nothing changed)."""
        return self.do(Apply(op))

    def remove(self, index: int) -> Box | None:
        """Take operation ``index`` (of :attr:`edits`) out of the edits and replay the
        ones after it, as one change (Undo puts it back, bit for bit); returns the box
        that changed. The mask is then the one the edits without it give."""
        move = self.history.after(Remove(index))
        if move is None:
            raise IndexError(f"There is no edit {index} to remove (there are {len(self._steps)}).")
        return self.make(move)

    def insert(self, index: int, op: Operation) -> Box | None:
        """Put ``op`` into the edits before operation ``index`` and replay the ones after
        it, as one change (the inverse of :meth:`remove`); returns the box that changed."""
        move = self.history.after(Insert(index, op))
        if move is None:
            raise IndexError(f"An edit cannot go at {index} (there are {len(self._steps)}).")
        return self.make(move)

    def undo(self) -> Box | None:
        """Take back the last change, bit for bit; returns the box that changed."""
        return self.do(Undo())

    def redo(self) -> Box | None:
        """Apply again the last change undone; returns the box that changed."""
        return self.do(Redo())

    def make(self, move: Move) -> Box | None:
        """Apply ``move`` to the mask; :attr:`history` is then ``move.after``. A move
        counted on another history than this editor's (one whose edits this editor
        was made with, as after a result made again) takes that history first."""
        if move.before is not self.history:
            self._adopt(move.before)
        change, record = move.change, self._made.get(move.change)
        if change.at is None:
            box = self._append(change, record, move.forward)
        else:
            box = self._resplice(change.at, record, move)
        self.history = move.after
        self._forget(move)
        self._rebuild_clicks()
        return box

    def _append(self, change: Change, record: _Step | _Splice | None, forward: bool) -> Box | None:
        """``change.op`` appended (``forward``) or taken back, by its patches when known."""
        if not forward:
            step = self._steps.pop()
            self._patch(step.box, step.before)
        elif isinstance(record, _Step):
            step = record
            self._patch(step.box, step.after)
            self._steps.append(step)
        else:
            step = self._step(change.op)
            self._steps.append(step)
        self._made[change] = step
        return step.box

    def _resplice(self, at: int, record: _Step | _Splice | None, move: Move) -> Box | None:
        """A change inside the edits at ``at`` made or taken back: by its patches when
        made here, else by replaying the operations from ``at`` on."""
        if isinstance(record, _Splice):
            again = record.forward == move.forward
            self._patch(record.box, record.after if again else record.before)
            self._steps[at:] = record.new if again else record.old
            return record.box
        splice = self._splice(at, list(move.after.edits.operations[at:]), move.forward)
        self._made[move.change] = splice
        return splice.box

    def _forget(self, move: Move) -> None:
        """Drop the patches of the changes no longer in the history."""
        live = set(move.after.undone)
        live.update(move.after.done[-1:])
        for change in (*move.before.undone, move.change):
            if change not in live:
                self._made.pop(change, None)

    def _adopt(self, history: History) -> None:
        """Take ``history`` as its own; its edits replayed from the base unless in effect."""
        ops = history.edits.operations
        if tuple(step.op for step in self._steps) != ops:
            start, steps = self.alpha, self._steps
            self.alpha, self._steps = self.base, []
            self._ctx.clicks.clear()
            try:
                self._steps = [self._step(op) for op in ops]
            except BaseException:
                self.alpha, self._steps = start, steps
                self._rebuild_clicks()
                raise
        self._made.clear()
        self.history = history
        self._rebuild_clicks()

    def _step(self, op: Operation) -> _Step:
        """Apply ``op`` to the mask as it is; its step (not yet in the history)."""
        new, box = apply_operation(op, self.alpha, self._ctx)
        before, after = _patches(self.alpha, new, box)
        self.alpha = new
        seen = 0 if before is None or after is None else seen_change(before, after, _origin(box))
        return _Step(op, box, before, after, tuple(self._ctx.clicks), seen)

    def _splice(self, index: int, ops: list[Operation], forward: bool) -> _Splice:
        """The steps from ``index`` on replaced by ``ops`` applied to the mask as it was
        before step ``index`` (rewound by the exact patches, so that the result is a
        replay's, byte for byte)."""
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
        return _Splice(index, old, new, box, before, after, forward)

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
