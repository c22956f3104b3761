"""Touch Up: edit mode, the edit tools, the brush, the overlay, undo and the rest, in
the menu and on the edit bar beside the Result view (short words there, full names in
the menu)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QMainWindow, QToolButton

from ...touchup.edit import Redo, Undo
from ...touchup.tools import TOOLS, Kind, Tool
from ..edit_controller import EditController
from ..editing import SIZE_STEP, EditBar, brush_words, tool_tip
from ..entry import QueueEntry
from ..overlay import TINT_LABELS
from . import MenuActions


class TouchUpMenu(MenuActions):
    """The Touch Up menu and the edit bar (:attr:`edit_bar`, :attr:`edit_button`), whose
    actions call ``editing``.

    Every tool of the tools' table has its action, made from its record: the tools used
    with the mouse (:attr:`tool_actions`, one checked) after Edit Mask, those that work
    on the whole mask at once (:attr:`mask_actions`, Reset among them) after Undo and
    Redo, and those given a mask file (Load Mask) before Export Edits. A tool of a kind
    with no place here is refused when the menu is made."""

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
        placed = {kind for kind in Kind if kind.drawn} | {Kind.WHOLE, Kind.MASK}
        unplaced = [t.name for t in TOOLS.values() if t.kind not in placed]
        if unplaced:
            raise ValueError(f"The Touch Up menu has no place for the tools {unplaced}.")

        def tool_action(t: Tool, slot: Callable[..., object]) -> QAction:
            a = tipped(self.add(t.label, t.key, slot), t.tip)
            if t.short:
                a.setIconText(t.short)
            return a

        self.tool_group = QActionGroup(window)
        self.tool_actions: dict[str, QAction] = {}
        for t in TOOLS.values():
            if t.kind.drawn:
                a = tool_action(t, lambda _=False, n=t.name: editing.set_tool(n))
                a.setCheckable(True)
                a.setChecked(t.name == editing.tools.tool)
                self.tool_group.addAction(a)
                self.tool_actions[t.name] = a
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
            "the hair is kept, the background between it goes); it stays on for every "
            "image until you turn it off, and the brush buttons say so",
        )
        self.edge_aware.setCheckable(True)
        self.overlay = tipped(
            self.add("Mask &Overlay", "O", lambda: editing.host.show_current()),
            "While editing, show the photo with what is removed tinted (hold \\ for the "
            "model's mask before your edits); off: the output",
        )
        self.overlay.setCheckable(True)
        self.overlay.setChecked(True)
        self.color_menu = self.menu.addMenu("Overlay &Colour")
        self.color_menu.menuAction().setIconText("Colour")
        self.color_menu.menuAction().setToolTip(
            "The overlay's tint: Automatic picks the one that stands out most from the photo"
        )
        self.color_group = QActionGroup(window)
        #: The overlay's tints by the settings' name ("" automatic).
        self.color_actions: dict[str, QAction] = {}
        for name, label in TINT_LABELS.items():
            a = self.color_menu.addAction(label)
            a.setCheckable(True)
            a.triggered.connect(lambda _=False, n=name: editing.set_overlay_color(n))
            self.color_group.addAction(a)
            self.color_actions[name] = a
        self.show_overlay_color(editing.host.settings.overlay_color)
        self.semi = tipped(
            self.add("Show &Semi-Transparent", "T", lambda: editing.host.show_current()),
            "While editing, paint every pixel that is neither fully kept nor fully removed "
            "(alpha 1-254) in a strong colour, so that faint leftovers show",
        )
        self.semi.setCheckable(True)
        self.menu.addSeparator()
        self.undo = tipped(
            self.add("&Undo Edit", QKeySequence.StandardKey.Undo, lambda: editing.edit(Undo())),
            "Take back the last edit",
        )
        self.redo = tipped(
            self.add("&Redo Edit", QKeySequence.StandardKey.Redo, lambda: editing.edit(Redo())),
            "Make the last edit taken back again",
        )
        #: The tools that work on the whole mask at once: applied when chosen.
        self.mask_actions: dict[str, QAction] = {
            t.name: tool_action(t, lambda _=False, n=t.name: editing.apply_tool(n))
            for t in TOOLS.values()
            if t.kind is Kind.WHOLE
        }
        self.reset = self.mask_actions["reset"]
        self.menu.addSeparator()
        #: The tools given a mask: the file is asked for first.
        self.file_actions: dict[str, QAction] = {
            t.name: tool_action(t, lambda _=False: editing.load_mask())
            for t in TOOLS.values()
            if t.kind is Kind.MASK
        }
        self.load_mask = self.file_actions["load"]
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
            (self.semi, "Semi-transparent"),
            (self.undo, "Undo"),
            (self.redo, "Redo"),
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
                self.color_menu.menuAction(),
                self.semi,
                None,
                self.undo,
                self.redo,
                *self.mask_actions.values(),
                None,
                *self.file_actions.values(),
                self.export_edits,
            ],
        )
        colour = self.edit_bar.widgetForAction(self.color_menu.menuAction())
        if isinstance(colour, QToolButton):
            colour.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
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
            self.color_menu.menuAction(),
            self.semi,
            *self.mask_actions.values(),
            *self.file_actions.values(),
        ):
            a.setEnabled(editing)
        history = entry.editing.history if entry is not None else None
        self.undo.setEnabled(ready and history is not None and history.can_undo)
        self.redo.setEnabled(ready and history is not None and history.can_redo)
        self.export_edits.setEnabled(entry is not None and bool(entry.edits))
        # Edit mode needs an image with (or about to have) a cutout; leaving it always works.
        self.edit_mode.setEnabled(edit_mode or not why_not)

    def show_edge_aware(self, on: bool) -> None:
        """Whether the brushes are edge-aware, on the tools themselves: the brush buttons'
        words and tips, and the menu's check."""
        self.edge_aware.setChecked(on)
        for name, a in self.tool_actions.items():
            t = TOOLS[name]
            if t.kind is Kind.BRUSH:
                a.setIconText(brush_words(t, on))
                tip = f"{t.tip}; edge-aware: it follows the photo's edges (G)" if on else t.tip
                a.setToolTip(tool_tip(tip, t.key))

    def show_overlay_color(self, choice: str) -> None:
        """The overlay tint chosen (a name of :data:`TINT_LABELS`; others: automatic)."""
        self.color_actions.get(choice, self.color_actions[""]).setChecked(True)
