"""Help: About bgremover."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QMainWindow, QMessageBox

from ... import __version__
from . import MenuActions


class HelpMenu(MenuActions):
    """The Help menu; the About box shows ``icon``, the app's own."""

    def __init__(self, window: QMainWindow, icon: QIcon) -> None:
        super().__init__(window, "&Help")
        self.icon = icon
        self.about_action = self.add("&About bgremover", "", self.about, "About bgremover")

    def about(self) -> QMessageBox:
        """The About box, with the app's own icon (never a generic warning sign)."""
        box = QMessageBox(self.window)
        box.setWindowTitle("About bgremover")
        box.setIconPixmap(self.icon.pixmap(64, 64))
        box.setText(f"<b>bgremover {__version__}</b>")
        box.setInformativeText(
            "Removes the background of photos on your own computer: nothing is uploaded.\n"
            "Models: U²-Net and DIS (Apache-2.0), run by ONNX Runtime."
        )
        box.setStyleSheet(  # the text in two lines, not six
            "QLabel#qt_msgbox_label, QLabel#qt_msgbox_informativelabel { min-width: 24em; }"
        )
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        return box
