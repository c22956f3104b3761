"""Edit: the queue as a whole (reprocess it, remove images from it, clear it)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QMainWindow

from . import MenuActions


class EditMenu(MenuActions):
    """The Edit menu; each action calls the window's slot of the same name."""

    def __init__(
        self,
        window: QMainWindow,
        reprocess: Callable[[], object],
        remove_selected: Callable[[], object],
        clear_queue: Callable[[], object],
    ) -> None:
        super().__init__(window, "&Edit")
        self.reprocess = self.add("&Reprocess All with Current Settings", "Ctrl+R", reprocess)
        self.remove = self.add(
            "Remove from &Queue", QKeySequence.StandardKey.Delete, remove_selected
        )
        self.clear = self.add("C&lear Queue", "Ctrl+Shift+Del", clear_queue)

    def update_enabled(self, selected: bool, queued: bool) -> None:
        """Remove needs a selection; Reprocess and Clear a queue."""
        self.remove.setEnabled(selected)
        self.clear.setEnabled(queued)
        self.reprocess.setEnabled(queued)
