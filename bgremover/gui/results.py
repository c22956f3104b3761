"""What the app's jobs return: results light enough to import anywhere in the GUI.

The job bodies that make them (:mod:`bgremover.gui.worker`) load the engine: the
model session, ONNX Runtime's wrappers, OpenCV. These records only carry what the
jobs made, so the views, the queue and the status bar import this module and never
the engine's heavy modules: the engine types appear here in annotations only, and
must stay there (tests/test_gui_wiring.py checks it in a fresh interpreter).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QImage

from ..errors import EditsError

if TYPE_CHECKING:  # annotations only: importing these loads the engine
    from ..compare.comparison import Comparison
    from ..engine.pipeline import EngineConfig, Remover, Result
    from ..export.compose import ComposeOptions, Enlarged
    from ..touchup.edit import Box, Editor, Edits


@dataclass(frozen=True)
class Preparing:
    """Progress while a model is obtained (download, bytes) or its int8 made (samples)."""

    config: EngineConfig
    task: str  # "download" | "quantize"
    done: int
    total: int | None
    #: The model made ready: ``config``'s, or the one of a combined model's (Best's
    #: "isnet-imgly") that this is; "" when it is ``config``'s.
    model: str = ""


@dataclass(frozen=True)
class ClickReady:
    """The click model bound to one photo: what the Add / Remove clicks run on it."""

    #: The click model's name (what a click made with it records).
    model: str
    #: The decoder bound to the photo's embedding (a touch-up ``Prompter``).
    prompt: Any
    #: The embedding's size in memory.
    nbytes: int


class ModelSegmenter:
    """The model behind an :class:`~bgremover.touchup.edit.Editor`'s box edits.

    It runs the model through the Remover of the engine job applying the edit, and has
    none between such jobs: the engine thread alone runs the model, and an edit that
    needs it anywhere else fails plainly instead of racing it.
    """

    def __init__(self) -> None:
        self.remover: Remover | None = None

    def __call__(self, rgb: Any) -> Any:
        if self.remover is None:
            raise EditsError("This edit needs the model, which runs on the engine thread only.")
        return self.remover.segment(rgb)


@dataclass(frozen=True)
class Processed:
    """A finished image, with display-ready images made off the GUI thread.

    ``output`` is what Save writes for these settings: the cutout, on its background
    or as the mask, decontaminated or not, cropped, on a canvas... per ``options``, and
    as a file of format ``fmt`` holds it (a lossy format's encoded pixels, decoded:
    :func:`output_images` makes them).
    """

    result: Result
    config: EngineConfig
    options: ComposeOptions
    original: QImage
    output: QImage
    mask: QImage
    thumb: QImage
    #: The output format the preview was encoded for (lossy formats change pixels).
    fmt: str = "png"
    #: What edit mode shows for the output: the output at the photo's size and frame,
    #: not encoded (the edit tools draw in photo pixels); None when it is ``output``.
    edit_output: QImage | None = field(default=None, compare=False, repr=False)
    #: The user's edits being made on this result (full-size, with exact undo), and the
    #: model it calls for box edits; None until the first edit.
    editor: Editor | None = field(default=None, compare=False, repr=False)
    segmenter: ModelSegmenter | None = field(default=None, compare=False, repr=False)
    #: Set when the canvas enlarges the subject so much that the output will look soft.
    enlarged: Enlarged | None = None
    #: For a combined model: each model that made the mask and the precision it ran in
    #: ("isnet-imgly int8"); () for a model of its own (the result says both).
    ran: tuple[str, ...] = ()

    def stage_for(
        self, config: EngineConfig, options: ComposeOptions, fmt: str = "png"
    ) -> str | None:
        """The first stage that must run again for these settings: "infer" (another model,
        precision, provider or threads), "refine", "compose" (other export options or
        format), or None (up to date)."""
        if replace(config, refine=self.config.refine) != self.config:
            return "infer"
        if config.refine != self.config.refine:
            return "refine"
        if options != self.options or fmt != self.fmt:
            return "compose"
        return None


def made_by(result: Result, ran: tuple[str, ...] = ()) -> str:
    """What made ``result``'s mask: "u2netp int8", or for a combined model the models that
    ran and their precisions (``ran``: "best (u2netp fp32 + isnet-imgly int8)"), which
    its own name does not say."""
    if ran:
        return f"{result.model} ({' + '.join(ran)})"
    made = f"{result.model} {result.precision}"
    if result.guard is not None and result.guard.ran_fp32:
        made += " (int8 was unsure of it)"
    return made


@dataclass(frozen=True)
class Edited:
    """An edit applied (or undone, or redone): the result with it, and the box it changed."""

    processed: Processed
    #: x0, y0, x1, y1 in the photo's pixels; None when nothing changed.
    box: Box | None


@dataclass(frozen=True)
class Compared:
    """A comparison of two sides (A, B: model and precision) and its pictures."""

    comparison: Comparison
    #: The configs of sides A and B it was made with (their model keys).
    pair: tuple[EngineConfig, EngineConfig]
    a_mask: QImage
    b_mask: QImage
    #: The sides' cutouts (the photo with each side's alpha), ready to draw.
    a_cut: QImage
    b_cut: QImage
    a_raw: QImage
    b_raw: QImage
    #: The heatmap at the view's default scale, made here to spare the GUI thread.
    heat: QImage

    @property
    def metrics(self) -> dict[str, Any]:
        return self.comparison.metrics

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the photo."""
        h, w = self.comparison.a.mask.shape
        return w, h


@dataclass(frozen=True)
class BatchRequest:
    inputs: tuple[Path, ...]
    output: Path
    config: EngineConfig
    options: ComposeOptions
    fmt: str
    overwrite: bool = False
    #: The user's edits of photos in the queue, by the photo's resolved path: a batch
    #: over their folder writes them edited, as Save does.
    edits: tuple[tuple[Path, Edits], ...] = ()


@dataclass(frozen=True)
class BatchProgress:
    """One step of a batch, light enough to cross threads (no image arrays)."""

    #: "started", an outcome's own kind (``ItemDone.kind``, ``ItemSkipped.kind``,
    #: ``ItemFailed.kind``: "done", "skipped", "failed"), or "finished".
    kind: str
    index: int = 0
    total: int = 0
    source: Path | None = None
    output: Path | None = None
    reason: str = ""
    done: int = 0
    skipped: int = 0
    failed: int = 0
    elapsed: float = 0.0
    problems: tuple[tuple[Path, str], ...] = field(default=())
    #: Of ``done``: the outputs made again because their settings had changed, by reason
    #: (see :attr:`bgremover.engine.batch.ItemDone.redone`). The counts are the engine's
    #: (:class:`bgremover.engine.batch.Tally`).
    redone: Mapping[str, int] = field(default_factory=dict)
    #: At the end: the int8 guard's line (how many images were made in fp32), or "".
    note: str = ""


@dataclass(frozen=True)
class Saved:
    path: Path
    bytes: int
