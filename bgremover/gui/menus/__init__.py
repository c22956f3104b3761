"""The menu bar: one module per menu, each making its menu's actions and connecting
them to the part of the app that does the work (a controller, a view).

The actions live here; what they do does not. Each menu keeps its actions as
attributes (``file_menu.save``...) and sets their enabled states itself from what
the window tells it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow

Shortcut = str | QKeySequence | QKeySequence.StandardKey


class MenuActions:
    """One menu of ``window``'s menu bar, titled ``title``, and the actions added to it."""

    def __init__(self, window: QMainWindow, title: str) -> None:
        self.window = window
        self.menu = window.menuBar().addMenu(title)

    def add(
        self, text: str, shortcut: Shortcut, slot: Callable[..., object], tip: str = ""
    ) -> QAction:
        """An action in this menu: ``text``, ``shortcut`` ("" for none), ``slot`` on
        triggered, and ``tip`` in the status bar (default: the text, without ``&``)."""
        action = QAction(text, self.window)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        action.setStatusTip(tip or text.replace("&", "").replace("…", ""))
        action.triggered.connect(slot)
        self.menu.addAction(action)
        return action


__all__ = ["MenuActions", "Shortcut", "edit", "file", "help", "touchup", "view"]
