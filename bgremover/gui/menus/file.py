"""File: opening images, Save, Save Mask and Copy, saving many, batches, the model file."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QMainWindow

from ..batch_controller import BatchController
from ..model_controller import ModelController
from ..open_controller import OpenController
from ..save_controller import SaveController
from . import MenuActions

Key = QKeySequence.StandardKey


class FileMenu(MenuActions):
    """The File menu; Save Selected and Save All call ``save_selected`` and ``save_all``."""

    def __init__(
        self,
        window: QMainWindow,
        opening: OpenController,
        saving: SaveController,
        save_selected: Callable[[], object],
        save_all: Callable[[], object],
        batches: BatchController,
        model_setting: ModelController,
    ) -> None:
        super().__init__(window, "&File")
        self.open = self.add("&Open Images…", Key.Open, opening.open_files)
        self.open_folder = self.add("Open &Folder…", "Ctrl+Shift+O", opening.open_folder)
        self.menu.addMenu(opening.recent_menu)
        self.paste = self.add("&Paste Image", Key.Paste, opening.paste)
        self.menu.addSeparator()
        self.save = self.add("&Save Cutout…", Key.Save, saving.save_cutout)
        self.save_mask = self.add("Save &Mask…", "Ctrl+Shift+S", saving.save_mask)
        self.copy = self.add("&Copy Cutout", Key.Copy, saving.copy_cutout)
        self.save_selected = self.add(
            "Save Selec&ted…",
            "Ctrl+Alt+S",
            save_selected,
            "Save the cutouts of the images selected in the queue into a folder",
        )
        self.save_all = self.add(
            "Save &All…",
            "Ctrl+Alt+Shift+S",
            save_all,
            "Save the cutout of every image in the queue into a folder",
        )
        self.menu.addSeparator()
        # triggered(bool) must not reach open_batch's folder argument.
        self.batch = self.add("&Batch Folder…", "Ctrl+B", lambda: batches.open_batch())
        self.model_file = self.add("Use a Model &File…", "", model_setting.choose_model_file)
        self.menu.addSeparator()
        self.quit = self.add("&Quit", Key.Quit, window.close, "Quit bgremover")

    def update_enabled(self, selected: bool, queued: bool, saving_many: bool) -> None:
        """Save Selected needs a selection, Save All a queue; neither while one runs."""
        self.save_selected.setEnabled(not saving_many and selected)
        self.save_all.setEnabled(not saving_many and queued)
