"""Touch Up (edit mode, E): the user's corrections of the mask, on the Result view.

The edit tools (editing.py) turn the mouse into operations in the photo's pixels;
each is recorded in the image's edits at once and applied as a job, in order
(:meth:`QueueJobs.edit`), and only the box it changed is redrawn. Saves and copies
wait for the edits asked for before them (save_controller.py). Edit mode shows the
photo with what is removed tinted (the overlay, overlay.py: its tint stands out from
the photo, or is the user's), or the output in the photo's frame, with the pixels of
alpha 1-254 painted when "Show semi-transparent" is on; markers show where the clicks
in effect landed (markers.py), and a right-click on one takes that click back (the
edits after it replayed, one undoable edit). A click that changed nothing the user can
see (under :data:`~bgremover.touchup.regions.NO_CHANGE_SHARE` of the photo) is taken back
at once, as if never made: no edit counted, nothing to Undo or Redo, nothing unsaved; the
status bar and a note where it landed say so, and what to try instead. The Touch Up menu
(menus/touchup.py) holds the actions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np
from PySide6.QtCore import QObject, QPointF
from PySide6.QtGui import QAction, QImage
from PySide6.QtWidgets import QFileDialog, QLabel, QWidget

from ..errors import BgRemoverError, EditsError, ImageReadError
from ..files.atomic import write_atomically
from ..files.imaging import IMAGE_EXTENSIONS, open_image
from ..touchup.edit import Apply, Box, Command, Move, Operation, Remove, Undo
from ..touchup.regions import too_few
from ..touchup.tools import TOOLS, Kind, mask_from_image
from .click_prep import ClickPrep
from .dialogs import show_error
from .editing import EditTools, edit_mode_hint
from .entry import QueueEntry, Status
from .host import Host
from .jobs import Job, JobContext, JobEnd, JobState
from .markers import ClickMarkers
from .overlay import RGB, contrasting, overlay_image, tint_for
from .result_page import ResultPage
from .results import Processed
from .wording import app_message


class TouchUpActions(Protocol):
    """What the controller needs of the Touch Up menu (:mod:`bgremover.gui.menus.touchup`)."""

    edit_mode: QAction
    overlay: QAction
    semi: QAction
    tool_actions: dict[str, QAction]

    @property
    def edit_bar(self) -> QWidget: ...  # read only: a QWidget of any kind

    def update_enabled(
        self, entry: QueueEntry | None, edit_mode: bool, ready: bool, why_not: str
    ) -> None: ...

    def show_edge_aware(self, on: bool) -> None: ...

    def show_overlay_color(self, choice: str) -> None: ...


class EditController(QObject):
    """Edit mode and the edits of the image shown, on ``page``'s view; ``detail`` is the
    details label the edit count shows in. Call :meth:`use_actions` once the Touch Up
    menu is made."""

    def __init__(self, host: Host, page: ResultPage, detail: QLabel) -> None:
        super().__init__(host.window())
        self.host = host
        self.page = page
        self.detail = detail
        #: Edit mode: the Result view's mouse is the edit tools' (see editing.py).
        self.edit_mode = False
        #: The overlay made for the result shown, reused while it is the same result and
        #: drawn alike (tint, semi-transparent colour, tinted or not).
        self._overlay_for: tuple[object, tuple[object, ...], QImage] | None = None
        #: The tint and semi-transparent colour for a photo (its pixels) and the choice.
        self._colors_for: tuple[object, str, RGB, RGB] | None = None
        self.tools = EditTools(page.viewer, host.window())
        self.tools.operation.connect(self._on_edit_operation)
        #: The click model bound to the image touched up (made as a job).
        self.clicks = ClickPrep(host)
        #: Where the clicks in effect landed; a right-click on one takes it back.
        self.markers = ClickMarkers(page.viewer, host.window())
        self.markers.removeRequested.connect(self.remove_click)
        # The notice of a cutout in doubt offers Touch Up: edit mode, as its action.
        page.notice.touchUp.connect(lambda: self.set_edit_mode(True))
        # Before the saves' own: what waited for the edits runs on what they show.
        host.jobs.edited.connect(self._on_edited)
        self.actions: TouchUpActions
        #: The last click that changed nothing: its image, the click, and what was said.
        self.unchanged: tuple[QueueEntry, Operation, str] | None = None

    def use_actions(self, actions: TouchUpActions) -> None:
        self.actions = actions

    def why_not_editable(self, entry: QueueEntry | None) -> str:
        """Why edit mode cannot be entered on ``entry``; "" when it can."""
        if entry is None:
            return "Open or drop a photo first: there is nothing to edit yet."
        if entry.status in (Status.FAILED, Status.STOPPED):
            return f"{entry.name} has no cutout to edit ({entry.status.value})."
        return ""

    def update_enabled(self, entry: QueueEntry | None) -> None:
        """The Touch Up actions and the tools, from one state: edit mode, and what the
        image has."""
        ready = entry is not None and entry.processed is not None
        self.tools.set_active(self.edit_mode and ready)
        self.clicks.follow(entry if self.edit_mode and ready else None)
        self.actions.update_enabled(entry, self.edit_mode, ready, self.why_not_editable(entry))
        self._show_markers(entry if self.edit_mode and ready else None)

    def _show_markers(self, entry: QueueEntry | None) -> None:
        """The markers of ``entry``'s clicks in effect (None: none), as the user asked for
        them: they follow Undo, Redo and Reset at once."""
        edits = entry.edits if entry is not None else None
        p = entry.processed if entry is not None else None
        note = self.unchanged
        if note is not None and p is not None and note[0] is entry:
            x, y = note[1].points[0]  # made on this result: its pixels
            self.markers.show_note(note[1], QPointF(x, y), note[2])
        else:
            self.markers.clear_note()
        if not edits or p is None:
            self.markers.clear()
            return
        # Edit mode shows the photo's frame at its full size: the result's pixels.
        height, width = p.result.mask.shape
        scale = (width / edits.size[0], height / edits.size[1])
        self.markers.show(edits.clicks(), scale)

    def remove_click(self, index: int) -> bool:
        """Take click ``index`` (of the current image's edits) out of them; the edits after
        it are replayed, as one edit that Undo takes back."""
        entry = self.host.current_entry()
        edits = entry.edits if entry is not None else None
        if edits is None or not 0 <= index < len(edits.operations):
            return False
        op = edits.operations[index]
        done = self.edit(Remove(index))
        if done:
            x, y = op.points[0] if op.points else (0.0, 0.0)
            self.host.statusBar().showMessage(
                f"Took back the {op.spec.word.lower()} at ({x:.0f}, {y:.0f}); Undo puts it back.",
                6000,
            )
        return done

    def set_edit_mode(self, on: bool) -> None:
        """Edit mode on the Result view: the mouse uses the edit tools (E)."""
        on = bool(on)
        why = self.why_not_editable(self.host.current_entry()) if on else ""
        if why:
            self.actions.edit_mode.setChecked(False)
            self.host.statusBar().showMessage(why, 6000)
            return
        self.edit_mode = on
        self.actions.edit_mode.setChecked(on)
        self.actions.edit_bar.setVisible(on)
        if on:
            self.host.show_result_tab()
            self.host.statusBar().showMessage(edit_mode_hint(), 10000)
        else:
            self._overlay_for = None
            self.host.statusBar().clearMessage()
        self.host.show_current()

    def set_tool(self, tool: str) -> None:
        self.tools.set_tool(tool)
        self.actions.tool_actions[tool].setChecked(True)

    def set_edge_aware(self, on: bool) -> None:
        """Brush strokes follow the photo's edges. A tool option, as the brush's size is: it
        stays as set for every image, and shows on the brush buttons and the cursor."""
        on = bool(on)
        self.tools.set_edge_aware(on)
        self.actions.show_edge_aware(on)

    def set_overlay_color(self, choice: str) -> None:
        """The overlay's tint: a colour's name of :data:`~.overlay.TINTS`, "" automatic;
        kept in the settings."""
        self.host.apply_settings(overlay_color=choice)
        self.actions.show_overlay_color(choice)
        self.host.show_current()

    def overlay_colors(self, p: Processed) -> tuple[RGB, RGB]:
        """The overlay's tint for ``p``'s photo (the choice, or the one that stands out from
        it) and the semi-transparent view's colour (distinct from both)."""
        rgb = p.result.image.rgb
        choice = self.host.settings.overlay_color
        known = self._colors_for
        if known is None or known[0] is not rgb or known[1] != choice:
            tint = tint_for(choice, rgb)
            known = self._colors_for = (rgb, choice, tint, contrasting(rgb, avoid=tint))
        return known[2], known[3]

    def _on_edit_operation(self, op: Operation) -> None:
        """An operation drawn by the user on the current image: applied as a job."""
        self.unchanged = None
        entry = self.host.current_entry()
        if entry is not None:
            op = self.clicks.operation(entry, op)
        if entry is None or not self.host.jobs.edit(entry, Apply(op)):
            self.tools.applied(op)
        self._edits_requested(entry)

    def edit(self, command: Command) -> bool:
        """``command`` on the current image's edits (Apply, Remove, Undo, Redo)."""
        self.unchanged = None
        entry = self.host.current_entry()
        done = entry is not None and self.host.jobs.edit(entry, command)
        if entry is not None:
            self._edits_requested(entry)
        return done

    def apply_tool(self, tool: str) -> bool:
        """Apply ``tool``, one that works on the whole mask at once (such as Reset): an
        edit itself, which Undo takes back."""
        if TOOLS[tool].kind is not Kind.WHOLE:
            raise ValueError(f"{tool!r} is not a tool that works on the whole mask at once")
        return self.edit(Apply(Operation(tool)))

    def _edits_requested(self, entry: QueueEntry | None) -> None:
        self.host.update_enabled()
        self.host.update_title()
        if entry is not None and entry is self.host.current_entry() and entry.processed is not None:
            self.detail.setText(entry.summary)

    def _on_edit_end_display(self, entry: QueueEntry, box: Box | None) -> None:
        """Redraw only the box an edit changed of what the Result view shows."""
        p = entry.processed
        if p is None or box is None or not self.page.showing_image:
            return
        image, overlay = self.display_images(p)
        self.page.update_region(image, overlay, box)

    def _on_edited(self, entry: QueueEntry, box: Box | None, move: Move) -> None:
        op = move.change.op
        if isinstance(move.command, Apply) and op.spec.kind is Kind.CLICK:
            self._check_click(entry, op)
        busy = self.host.jobs.edits_busy(entry)
        if entry is self.host.current_entry():
            self.tools.applied(op)
            if not busy:
                self.tools.clear_pending()  # requests made into a remade result
            self._on_edit_end_display(entry, box)
            self.host.show_current()  # costs nothing more: the view already has these images
        else:
            self.host.update_title()

    def _check_click(self, entry: QueueEntry, op: Operation) -> None:
        """``op``, a click just applied: when it changed nothing the user can see, it is
        taken back as if never made, if nothing was asked for after it (otherwise it stays,
        and its marker takes it back), and the status bar and a note where it landed say
        so, with what to try instead."""
        p = entry.processed
        editor = p.editor if p is not None else None
        seen = editor.seen_by(op) if editor is not None else None
        if editor is None or seen is None or not too_few(seen, editor.base.size):
            return
        history = entry.editing.history
        ops = history.edits.operations if history is not None else ()
        alone = bool(ops) and ops[-1] is op and not self.host.jobs.edits_busy(entry)
        if alone and history is not None and history.can_undo and history.done[-1].op is op:
            # Undo's own path (exact patches), but no change the user made: Redo does not
            # offer it back.
            self.host.jobs.edit(entry, Undo(redo=False))
            after = "It is not kept as an edit."
        else:
            after = "Right-click its marker to take it back."
        box, brush = TOOLS["box"], TOOLS["restore" if op.spec.keeps else "erase"]
        instead = (
            f"Drag a {box.word} ({box.key}) around the part, or paint it with the "
            f"{brush.word} brush ({brush.key})."
        )
        pixels = f"{seen} pixel{'s' if seen != 1 else ''}"
        said = f"This {op.spec.word.lower()} changed nothing visible ({pixels}). {after} {instead}"
        self.unchanged = (entry, op, f"This {op.spec.word.lower()} changed nothing. {instead}")
        self.host.statusBar().showMessage(said, 15000)
        self._edits_requested(entry)

    def display_images(self, p: Processed) -> tuple[QImage, QImage | None]:
        """What the Result view shows of ``p``, and the overlay over it (None: none).

        In edit mode with the overlay on: the photo, with the mask's removed part tinted
        (holding for the original shows the model's mask so, before the edits); otherwise
        the view mode's picture (holding for the original: the photo alone). With "Show
        semi-transparent" on, the overlay also paints the pixels of alpha 1-254 opaque in
        a colour of their own (over the view mode's picture when the tint is off).
        """
        tinted = self.edit_mode and self.actions.overlay.isChecked()
        semi = self.edit_mode and self.actions.semi.isChecked()
        output = p.output
        if self.edit_mode and p.edit_output is not None:
            # The edit tools draw in photo pixels: the output at the photo's frame, until
            # edit mode ends and the export's frame (crop, canvas) returns.
            output = p.edit_output
        if self.page.holding:
            if (tinted or semi) and p.editor is not None:
                # Before / after while editing: the model's mask, before the edits.
                return p.original, self._overlay(p, p.editor, p.editor.base, tinted, semi)
            return p.original, None
        if tinted:
            return p.original, self._overlay(p, p, p.result.alpha, tinted, semi)
        shown = {"original": p.original, "output": output, "mask": p.mask}[self.page.mode]
        return shown, self._overlay(p, p, p.result.alpha, False, True) if semi else None

    def _overlay(
        self, p: Processed, owner: object, alpha: np.ndarray, tinted: bool, semi: bool
    ) -> QImage:
        """The overlay of ``alpha`` (``p``'s or its editor's), made once while ``owner``
        (a result, an editor) and the way it is drawn stay."""
        tint, semi_color = self.overlay_colors(p)
        how = (tint, semi_color if semi else None, tinted)
        known = self._overlay_for
        if known is None or known[0] is not owner or known[1] != how:
            known = self._overlay_for = (owner, how, overlay_image(alpha, *how))
        return known[2]

    def load_mask(self) -> None:
        patterns = " ".join(f"*{e}" for e in sorted(IMAGE_EXTENSIONS))
        path, _ = QFileDialog.getOpenFileName(
            self.host.window(),
            "Load a mask",
            self.host.settings.last_folder,
            f"Images ({patterns})",
        )
        if path:
            self.load_mask_from(Path(path))

    def load_mask_from(self, path: Path) -> Job[Operation] | None:
        """Replace the current image's mask with ``path``'s (a mask, or a cutout's alpha),
        read and resized on the output thread, then applied as an edit."""
        entry = self.host.current_entry()
        if entry is None or entry.processed is None:
            return None
        h, w = entry.processed.result.mask.shape

        def read(ctx: JobContext) -> Operation:
            advice = "Choose a mask image (white kept, black removed) or a cutout PNG."
            try:
                # Through the allow-list of formats, as photos are: an EPS given as a
                # mask is refused in the same words and never reaches Ghostscript.
                with open_image(path) as img:
                    img.load()
                    return Operation.load(mask_from_image(img, (h, w)))
            except ImageReadError as exc:
                raise EditsError(
                    f"{path.name} could not be read as a mask. {exc.message}",
                    fix=exc.fix or advice,
                    app_fix=exc.app_fix or advice,
                    technical=exc.technical,
                ) from exc
            except (OSError, ValueError) as exc:
                raise EditsError(
                    f"{path.name} could not be read as a mask: {exc}.", fix=advice
                ) from exc

        def ended(end: JobEnd[Operation]) -> None:
            if end.ok:
                if self.host.jobs.edit(entry, Apply(end.result)):
                    self.host.statusBar().showMessage(f"Mask loaded from {path.name}.", 5000)
                self._edits_requested(entry)
            elif end.state is JobState.FAILED:
                show_error(self.host.window(), "Could not load the mask", end.message, end.details)

        return self.host.output.submit("load-mask", read, on_end=ended)

    def export_edits(self) -> None:
        entry = self.host.current_entry()
        if entry is None or not entry.edits:
            self.host.statusBar().showMessage("No edits to export for this image.", 5000)
            return
        folder = entry.source.parent if isinstance(entry.source, Path) else None
        start = Path(folder or self.host.settings.last_save_folder or Path.home())
        path, _ = QFileDialog.getSaveFileName(
            self.host.window(),
            "Export edits",
            str(start / f"{Path(entry.name).stem}-edits.json"),
            "bgremover edits (*.json)",
        )
        if path:
            self.export_edits_to(entry, Path(path))

    def export_edits_to(self, entry: QueueEntry, path: Path) -> bool:
        """Write ``entry``'s edits (JSON, atomically): what ``bgremover remove PHOTO -o OUT
        --edits FILE`` applies."""
        if not entry.edits:
            return False
        text = entry.edits.to_json().encode("utf-8")
        try:
            write_atomically(path, lambda fh: fh.write(text))
        except BgRemoverError as exc:
            show_error(self.host.window(), "Could not export the edits", app_message(exc))
            return False
        self.host.statusBar().showMessage(f"Edits exported to {path}.", 5000)
        return True
