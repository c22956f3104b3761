"""Touch Up: edit mode, the edit tools, the brush, the overlay, undo and the rest, in
the menu and on the edit bar beside the Result view (short words there, full names in
the menu)."""

from __future__ import annotations

from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QMainWindow, QToolButton

from ..edit_controller import EditController
from ..editing import SIZE_STEP, TOOLS, EditBar, tool_tip
from ..entry import QueueEntry
from . import MenuActions


class TouchUpMenu(MenuActions):
    """The Touch Up menu and the edit bar (:attr:`edit_bar`, :attr:`edit_button`), whose
    actions call ``editing``."""

    def __init__(self, window: QMainWindow, editing: EditController) -> None:
        super().__init__(window, "&Touch Up")

        def tipped(a: QAction, tip: str) -> QAction:
            a.setToolTip(
                tool_tip(tip, a.shortcut().toString(QKeySequence.SequenceFormat.NativeText))
            )
            a.setStatusTip(tip)
            return a

        self.edit_mode = tipped(
            self.add("&Edit Mask", "E", editing.set_edit_mode),
            "Edit mode: touch up the mask with brushes, clicks and boxes",
        )
        self.edit_mode.setCheckable(True)
        self.menu.addSeparator()
        self.tool_group = QActionGroup(window)
        self.tool_actions: dict[str, QAction] = {}
        for name, (label, key, tip) in TOOLS.items():
            a = tipped(self.add(label, key, lambda _=False, n=name: editing.set_tool(n)), tip)
            a.setCheckable(True)
            a.setChecked(name == editing.tools.tool)
            self.tool_group.addAction(a)
            self.tool_actions[name] = a
        self.menu.addSeparator()
        self.smaller = tipped(
            self.add("S&maller Brush", "[", lambda: editing.tools.grow(1 / SIZE_STEP)),
            "A smaller brush",
        )
        self.bigger = tipped(
            self.add("&Bigger Brush", "]", lambda: editing.tools.grow(SIZE_STEP)),
            "A bigger brush",
        )
        self.edge_aware = tipped(
            self.add("Ed&ge-Aware Brush", "G", editing.set_edge_aware),
            "Edge-aware: the brush follows the photo's edges (paint roughly along hair: "
            "the hair is kept, the background between it goes)",
        )
        self.edge_aware.setCheckable(True)
        self.overlay = tipped(
            self.add("Mask &Overlay", "O", lambda: editing.host.show_current()),
            "While editing, show the photo with what is removed tinted red (hold \\ for the "
            "model's mask before your edits); off: the output",
        )
        self.overlay.setCheckable(True)
        self.overlay.setChecked(True)
        self.menu.addSeparator()
        self.undo = tipped(
            self.add("&Undo Edit", QKeySequence.StandardKey.Undo, lambda: editing.edit("undo")),
            "Take back the last edit",
        )
        self.redo = tipped(
            self.add("&Redo Edit", QKeySequence.StandardKey.Redo, lambda: editing.edit("redo")),
            "Make the last edit taken back again",
        )
        self.reset = tipped(
            self.add("Re&set to Model's Mask", "Shift+R", editing.reset_edits),
            "Back to the model's mask: every edit undone (Undo brings them back)",
        )
        self.menu.addSeparator()
        self.load_mask = tipped(
            self.add("&Load Mask…", "Ctrl+L", editing.load_mask),
            "Replace the mask with one from a file: a mask image, or a cutout's transparency",
        )
        self.export_edits = tipped(
            self.add("E&xport Edits…", "Ctrl+E", editing.export_edits),
            "Save the edits as a file that `bgremover remove PHOTO --edits FILE` applies",
        )
        # Short words on the edit bar's buttons; the menu has the full names.
        for a, short in (
            (self.smaller, "−"),
            (self.bigger, "+"),
            (self.edge_aware, "Edge-aware"),
            (self.overlay, "Overlay"),
            (self.undo, "Undo"),
            (self.redo, "Redo"),
            (self.reset, "Reset"),
        ):
            a.setIconText(short)
        self.edit_bar = EditBar(
            editing.tools,
            self.tool_actions,
            (self.smaller, self.bigger),
            [
                self.edge_aware,
                None,
                self.overlay,
                None,
                self.undo,
                self.redo,
                self.reset,
                None,
                self.load_mask,
                self.export_edits,
            ],
        )
        self.edit_bar.setVisible(False)
        self.edit_button = QToolButton()
        self.edit_button.setDefaultAction(self.edit_mode)

    def update_enabled(
        self, entry: QueueEntry | None, edit_mode: bool, ready: bool, why_not: str
    ) -> None:
        """The tools only in edit mode on an image with a cutout (``ready``); Undo, Redo
        and Export Edits where there are edits; edit mode where it can be entered
        (``why_not`` says why not) or left."""
        editing = edit_mode and ready
        for a in (
            *self.tool_actions.values(),
            self.smaller,
            self.bigger,
            self.edge_aware,
            self.overlay,
            self.reset,
            self.load_mask,
        ):
            a.setEnabled(editing)
        self.undo.setEnabled(ready and entry is not None and bool(entry.edits))
        self.redo.setEnabled(ready and entry is not None and bool(entry.editing.redo))
        self.export_edits.setEnabled(entry is not None and bool(entry.edits))
        # Edit mode needs an image with (or about to have) a cutout; leaving it always works.
        self.edit_mode.setEnabled(edit_mode or not why_not)
