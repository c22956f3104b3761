"""The queue's column: its title, the list of images, and the details of the image
shown under it (size, model, inference time, edits, or why there is no result)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from .queue import QueueModel
from .queue_view import QueueView
from .result_page import EMPTY_TEXT


class QueuePane(QWidget):
    """:attr:`view` lists ``queue``; :attr:`detail` is the details label under it."""

    def __init__(self, queue: QueueModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = QueueView()
        self.view.setModel(queue)
        self.view.setMinimumWidth(160)
        self.detail = QLabel(EMPTY_TEXT)
        self.detail.setWordWrap(True)
        self.detail.setMinimumHeight(3 * self.detail.fontMetrics().lineSpacing())
        self.detail.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column = QVBoxLayout(self)
        column.setContentsMargins(4, 4, 4, 4)
        column.addWidget(QLabel("Queue"))
        column.addWidget(self.view, 1)
        column.addWidget(self.detail)
