"""View: the Result view's modes, zoom, and the Result and Compare A | B tabs."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QMainWindow

from ..compare_controller import CompareController
from ..result_page import VIEW_MODES
from ..views import ImageView
from . import MenuActions

Key = QKeySequence.StandardKey


class ViewMenu(MenuActions):
    """The View menu. Zoom acts on ``current_view()`` (the tab's: the Result view, or the
    comparison's side A, which the others follow)."""

    def __init__(
        self,
        window: QMainWindow,
        set_view_mode: Callable[[str], object],
        current_view: Callable[[], ImageView],
        comparing: CompareController,
        show_result: Callable[[], object],
    ) -> None:
        super().__init__(window, "&View")
        for i, mode in enumerate(VIEW_MODES):
            self.add(mode.capitalize(), str(i + 1), lambda _=False, m=mode: set_view_mode(m))
        self.menu.addSeparator()
        self.add("Zoom &In", Key.ZoomIn, lambda: current_view().zoom_by(1.25))
        self.add("Zoom &Out", Key.ZoomOut, lambda: current_view().zoom_by(0.8))
        self.add("&Fit", "Ctrl+0", lambda: current_view().fit())
        self.add("&Actual Size (100 %)", "Ctrl+1", lambda: current_view().actual_size())
        self.menu.addSeparator()
        self.compare = self.add("&Compare A | B", "Ctrl+K", comparing.show_compare)
        self.result = self.add("&Result", "Ctrl+J", show_result)
