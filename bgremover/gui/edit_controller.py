"""Touch Up (edit mode, E): the user's corrections of the mask, on the Result view.

The edit tools (editing.py) turn the mouse into operations in the photo's pixels;
each is recorded in the image's edits at once and applied as a job, in order
(:meth:`QueueJobs.edit`), and only the box it changed is redrawn. Saves and copies
wait for the edits asked for before them (save_controller.py). Edit mode shows the
photo with what is removed tinted (the overlay), or the output in the photo's frame;
the Touch Up menu (menus/touchup.py) holds the actions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np
from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QImage
from PySide6.QtWidgets import QFileDialog, QLabel, QWidget

from ..errors import BgRemoverError, EditsError, ImageReadError
from ..files.atomic import write_atomically
from ..files.imaging import IMAGE_EXTENSIONS, open_image
from ..touchup.edit import Box, Operation
from ..touchup.tools import TOOLS, Kind, mask_from_image
from .click_prep import ClickPrep
from .dialogs import show_error
from .editing import EditTools, edit_mode_hint, overlay_image
from .entry import EditRequest, QueueEntry, Status
from .host import Host
from .jobs import Job, JobContext, JobEnd, JobState
from .result_page import ResultPage
from .results import Processed
from .wording import app_message


class TouchUpActions(Protocol):
    """What the controller needs of the Touch Up menu (:mod:`bgremover.gui.menus.touchup`)."""

    edit_mode: QAction
    overlay: QAction
    tool_actions: dict[str, QAction]

    @property
    def edit_bar(self) -> QWidget: ...  # read only: a QWidget of any kind

    def update_enabled(
        self, entry: QueueEntry | None, edit_mode: bool, ready: bool, why_not: str
    ) -> None: ...


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
        #: The overlay made for the result shown, reused while it is the same result.
        self._overlay_for: tuple[object, QImage] | None = None
        self.tools = EditTools(page.viewer, host.window())
        self.tools.operation.connect(self._on_edit_operation)
        #: The click model bound to the image touched up (made as a job).
        self.clicks = ClickPrep(host)
        # Before the saves' own: what waited for the edits runs on what they show.
        host.jobs.edited.connect(self._on_edited)
        self.actions: TouchUpActions

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
        self.tools.edge_aware = bool(on)

    def _on_edit_operation(self, op: Operation) -> None:
        """An operation drawn by the user on the current image: applied as a job."""
        entry = self.host.current_entry()
        if entry is not None:
            op = self.clicks.operation(entry, op)
        if entry is None or not self.host.jobs.edit(entry, "apply", op):
            self.tools.applied(op)
        self._edits_requested(entry)

    def edit(self, action: str, op: Operation | None = None) -> bool:
        """An edit of the current image: "apply" ``op``, "undo", "redo"."""
        entry = self.host.current_entry()
        done = entry is not None and self.host.jobs.edit(entry, action, op)
        if entry is not None:
            self._edits_requested(entry)
        return done

    def apply_tool(self, tool: str) -> bool:
        """Apply ``tool``, one that works on the whole mask at once (such as Reset): an
        edit itself, which Undo takes back."""
        if TOOLS[tool].kind is not Kind.WHOLE:
            raise ValueError(f"{tool!r} is not a tool that works on the whole mask at once")
        return self.edit("apply", Operation(tool))

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

    def _on_edited(self, entry: QueueEntry, box: Box | None, request: EditRequest) -> None:
        busy = self.host.jobs.edits_busy(entry)
        if entry is self.host.current_entry():
            self.tools.applied(request.op)
            if not busy:
                self.tools.clear_pending()  # requests made into a remade result
            self._on_edit_end_display(entry, box)
            self.host.show_current()  # costs nothing more: the view already has these images
        else:
            self.host.update_title()

    def display_images(self, p: Processed) -> tuple[QImage, QImage | None]:
        """What the Result view shows of ``p``, and the overlay over it (None: none).

        In edit mode with the overlay on: the photo, with the mask's removed part tinted
        (holding for the original shows the model's mask so, before the edits); otherwise
        the view mode's picture (holding for the original: the photo alone).
        """
        overlay = self.edit_mode and self.actions.overlay.isChecked()
        output = p.output
        if self.edit_mode and p.edit_output is not None:
            # The edit tools draw in photo pixels: the output at the photo's frame, until
            # edit mode ends and the export's frame (crop, canvas) returns.
            output = p.edit_output
        if self.page.holding:
            if overlay and p.editor is not None:
                # Before / after while editing: the model's mask, before the edits.
                return p.original, self._overlay(p.editor, p.editor.base)
            return p.original, None
        if overlay:
            return p.original, self._overlay(p, p.result.alpha)
        return {"original": p.original, "output": output, "mask": p.mask}[self.page.mode], None

    def _overlay(self, owner: object, alpha: np.ndarray) -> QImage:
        """The overlay of ``alpha``, made once while ``owner`` (a result, an editor) stays."""
        if self._overlay_for is None or self._overlay_for[0] is not owner:
            self._overlay_for = (owner, overlay_image(alpha))
        return self._overlay_for[1]

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

    def load_mask_from(self, path: Path) -> Job | None:
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

        def ended(end: JobEnd) -> None:
            if end.ok:
                if self.host.jobs.edit(entry, "apply", end.result):
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
