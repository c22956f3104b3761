"""The queue's list: one row per image, its icon and, beside it, its name over its status.

Every row has the same height and its icon the same square (see
:data:`~bgremover.gui.queue.ICON_SIZE`), so the names and statuses of all rows start
in one column, whether an image has its thumbnail yet, failed, or waits. A long name
is shortened in the middle, where the part that tells photos apart (a number, the
extension) stays; the tooltip has the full path. The list never scrolls sideways.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QListView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from .entry import Status
from .queue import ICON_SIZE, NAME_ROLE, STATUS_ROLE, STATUS_TEXT_ROLE

Index = QModelIndex | QPersistentModelIndex


class QueueItemDelegate(QStyledItemDelegate):
    """Draws a row: the icon, then the name (one line) above the status (one line)."""

    #: Room around the icon, and between it and the text.
    MARGIN = 4
    GAP = 8

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        lines = 2 * option.fontMetrics.height() + 2
        height = max(ICON_SIZE, lines) + 2 * self.MARGIN
        # Narrow on purpose: the view gives each row its full width, and a wider hint
        # would only bring a horizontal scrollbar.
        return QSize(ICON_SIZE + 2 * self.MARGIN + self.GAP, height)

    def layout(self, option: QStyleOptionViewItem) -> tuple[QRect, QRect, QRect]:
        """The rectangles of the icon, the name and the status in a row at ``option.rect``."""
        rect: QRect = option.rect
        line = option.fontMetrics.height()
        icon = QRect(
            rect.left() + self.MARGIN,
            rect.top() + (rect.height() - ICON_SIZE) // 2,
            ICON_SIZE,
            ICON_SIZE,
        )
        left = icon.right() + 1 + self.GAP
        width = max(0, rect.right() - self.MARGIN - left + 1)
        top = rect.top() + (rect.height() - (2 * line + 2)) // 2
        return (
            icon,
            QRect(left, top, width, line),
            QRect(left, top + line + 2, width, line),
        )

    def name_text(self, option: QStyleOptionViewItem, index: Index) -> str:
        """The name as drawn: whole if it fits, else shortened in the middle."""
        name = str(index.data(NAME_ROLE) or "")
        width = self.layout(option)[1].width()
        fm = option.fontMetrics
        return fm.elidedText(name, Qt.TextElideMode.ElideMiddle, width)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        widget: QWidget | None = opt.widget
        style = widget.style() if widget is not None else QApplication.style()
        # The row's background, selection and focus as the style draws them; the icon
        # and the text are drawn here, where they line up.
        opt.text = ""
        opt.icon = QIcon()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)

        icon_rect, name_rect, status_rect = self.layout(option)
        icon = index.data(Qt.ItemDataRole.DecorationRole)
        if isinstance(icon, QIcon) and not icon.isNull():
            icon.paint(painter, icon_rect)
        state = opt.state
        selected = bool(state & QStyle.StateFlag.State_Selected)
        palette: QPalette = opt.palette
        group = (
            QPalette.ColorGroup.Normal
            if state & QStyle.StateFlag.State_Active
            else QPalette.ColorGroup.Inactive
        )
        text = palette.color(
            group, QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        )
        status = index.data(STATUS_ROLE)
        dim = QColor(text)
        if status is Status.FAILED and not selected:
            dim = QColor(200, 40, 40)
        elif not selected:
            dim.setAlphaF(0.65)
        painter.save()
        painter.setFont(opt.font)
        painter.setPen(text)
        align = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        painter.drawText(name_rect, align, self.name_text(option, index))
        painter.setPen(dim)
        status_text = str(index.data(STATUS_TEXT_ROLE) or "")
        fm = opt.fontMetrics
        painter.drawText(
            status_rect,
            align,
            fm.elidedText(status_text, Qt.TextElideMode.ElideRight, status_rect.width()),
        )
        painter.restore()


class QueueView(QListView):
    """The queue's list view: even rows (:class:`QueueItemDelegate`), no sideways scrolling,
    several rows selectable at once."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setItemDelegate(QueueItemDelegate(self))
        self.setIconSize(QSize(ICON_SIZE, ICON_SIZE))
        self.setUniformItemSizes(True)
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        # Ctrl- and Shift-click select several images (Save Selected, Remove); the actions
        # on one image act on the current one.
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
