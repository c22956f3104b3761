"""The comparison view's parts: its panes and their layout, the wipe view (A over B,
split by a divider the user drags), the heatmap's legend, and the pictures of a side
(the mask over the photo).

The panes share the space the tab has: side by side, or (for a wide photo, where that
leaves them mostly empty) in rows, whichever shows the photo largest. Their views fit
the photo, and keep fitting it as the window is resized, until the user zooms.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRect, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QImage,
    QLinearGradient,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QPixmap,
    QResizeEvent,
    QTransform,
)
from PySide6.QtWidgets import (
    QFrame,
    QGraphicsItem,
    QGraphicsPixmapItem,
    QGraphicsRectItem,
    QLabel,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ..compare.report import DEFAULT_HEAT_SCALE, HEAT_SCALES, heat_lut, scale_label
from .views import ElidedLabel, ImageView

#: The legend's titles; the colour bar starts after the wider one, so it never moves.
LEGEND_TITLES = ("|Δα|", "|Δraw|")


class HeatLegend(QWidget):
    """The heatmap's colour bar with its scale, 0 to the full scale."""

    BAR_HEIGHT = 12
    TICK = 3
    #: The shortest colour bar: the three labels below it never touch.
    MIN_BAR = 90

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = LEGEND_TITLES[0]
        self.full_scale = DEFAULT_HEAT_SCALE
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def _title_width(self) -> int:
        fm = self.fontMetrics()
        return max(fm.horizontalAdvance(t) for t in (*LEGEND_TITLES, self.title)) + 8

    def _label_width(self) -> int:
        fm = self.fontMetrics()
        return max(fm.horizontalAdvance(scale_label(s, s)) for s in HEAT_SCALES) + 4

    def sizeHint(self) -> QSize:
        return self.minimumSizeHint() + QSize(60, 0)

    def minimumSizeHint(self) -> QSize:
        height = self.BAR_HEIGHT + self.TICK + self.fontMetrics().height() + 2
        return QSize(self._title_width() + self._label_width() + self.MIN_BAR, height)

    def bar_rect(self) -> QRect:
        """Where the colour bar is drawn: right of the title, room for the labels below."""
        half = self._label_width() // 2
        left = self._title_width() + half
        return QRect(left, 0, max(1, self.width() - left - half), self.BAR_HEIGHT)

    def title_rect(self) -> QRect:
        return QRect(0, 0, self._title_width(), self.BAR_HEIGHT + self.TICK)

    def paintEvent(self, event: QPaintEvent) -> None:
        lut = heat_lut()
        painter = QPainter(self)
        bar = self.bar_rect()
        grad = QLinearGradient(bar.topLeft(), bar.topRight())
        for i in (*range(0, 256, 15), 255):
            r, g, b = (int(v) for v in lut[i])
            grad.setColorAt(i / 255, QColor(r, g, b))
        painter.fillRect(bar, grad)
        painter.setPen(self.palette().windowText().color())
        painter.drawText(self.title_rect(), Qt.AlignmentFlag.AlignVCenter, self.title)
        fm = painter.fontMetrics()
        for frac in (0.0, 0.5, 1.0):
            x = bar.left() + round(frac * (bar.width() - 1))
            painter.drawLine(x, bar.bottom(), x, bar.bottom() + self.TICK)
            label = scale_label(frac * self.full_scale, self.full_scale)
            width = fm.horizontalAdvance(label)
            painter.drawText(x - width // 2, bar.bottom() + self.TICK + fm.ascent() + 1, label)
        painter.end()


class ComparePane(QWidget):
    """A title above one of the locked views."""

    def __init__(self, title: str, view: ImageView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self.title = ElidedLabel(title)
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(view, 1)

    def chrome(self) -> QSize:
        """The room the pane takes beyond its view's viewport (title, frame)."""
        frame = 2 * self.view.frameWidth()
        return QSize(frame, self.title.sizeHint().height() + 2 + frame)


class _Message(QLabel):
    """The message over the empty panes; it is re-centred whenever its text changes."""

    def setText(self, text: str) -> None:
        super().setText(text)
        area = self.parentWidget()
        if isinstance(area, PaneArea):
            area.place_message()


class PaneArea(QWidget):
    """Lays the panes shown out to show the photo largest, with a message over them when there
    is no result (the panes keep their place, so the result takes the message's room)."""

    SPACING = 6

    def __init__(self, panes: list[ComparePane], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.panes = panes
        for pane in panes:
            pane.setParent(self)
        #: (width, height) of the photo the arrangement is chosen for; None before any.
        self.image_size: tuple[int, int] | None = None
        #: The panes laid out (the others hidden), and whether a result shows in them.
        self.shown = list(panes)
        self.result_shown = False
        self.columns = len(panes)
        self.placeholder = _Message(self)
        self.placeholder.setWordWrap(True)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setFrameShape(QFrame.Shape.StyledPanel)
        self.placeholder.setAutoFillBackground(True)
        self.placeholder.setMargin(12)
        self.placeholder.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def sizeHint(self) -> QSize:
        return QSize(640, 360)

    def minimumSizeHint(self) -> QSize:
        return QSize(3 * 90 + 2 * self.SPACING, 160)

    def set_image_size(self, size: tuple[int, int] | None) -> None:
        if size is not None and size != self.image_size:
            self.image_size = size
            self._arrange()

    def set_shown(self, panes: list[ComparePane]) -> None:
        """Lay out ``panes`` (of :attr:`panes`, in their order) and hide the others."""
        self.shown = [pane for pane in self.panes if pane in panes]
        self.result_shown = True
        self._arrange()

    def cells(self, columns: int) -> list[QRect]:
        """The shown panes' rectangles with ``columns`` columns (a short last row centred)."""
        count = max(1, len(self.shown))
        rows = -(-count // columns)
        s = self.SPACING
        w = max(1, (self.width() - (columns - 1) * s) // columns)
        h = max(1, (self.height() - (rows - 1) * s) // rows)
        rects = []
        for i in range(count):
            row, col = divmod(i, columns)
            x = col * (w + s)
            if row == rows - 1:  # a short last row is centred
                in_row = count - row * columns
                x += (self.width() - (in_row * w + (in_row - 1) * s)) // 2
            rects.append(QRect(x, row * (h + s), w, h))
        return rects

    def scale(self, columns: int) -> float:
        """How large the photo shows, fitted, with ``columns`` columns."""
        if self.image_size is None:
            return 0.0
        iw, ih = self.image_size
        chrome = self.panes[0].chrome()
        cell = self.cells(columns)[0]
        return min(
            max(1, cell.width() - chrome.width()) / iw, max(1, cell.height() - chrome.height()) / ih
        )

    def best_columns(self) -> int:
        """The columns that show the photo largest: all in a row, ..., one above the other;
        the first wins a tie."""
        count = max(1, len(self.shown))
        if self.image_size is None:
            return min(self.columns, count)
        best, best_scale = count, 0.0
        for columns in range(count, 0, -1):
            scale = self.scale(columns)
            if scale > best_scale * 1.02:  # a clear gain, not a pixel's
                best, best_scale = columns, scale
        return best

    def _arrange(self) -> None:
        self.columns = self.best_columns()
        for pane, rect in zip(self.shown, self.cells(self.columns), strict=False):
            pane.setGeometry(rect)
        for pane in self.panes:
            pane.setVisible(self.result_shown and pane in self.shown)
        self.place_message()

    def place_message(self) -> None:
        width = min(self.width() - 24, 480)
        height = min(self.height() - 24, self.placeholder.heightForWidth(width))
        self.placeholder.setGeometry(
            (self.width() - width) // 2, (self.height() - height) // 2, width, height
        )
        self.placeholder.raise_()

    def show_panes(self, shown: bool) -> None:
        """The empty panes give way to the message (their places are kept for the
        result), so that it reads on its own, not over the panes' frames and titles."""
        self.result_shown = shown
        for pane in self.panes:
            pane.setVisible(shown and pane in self.shown)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._arrange()


class WipeView(ImageView):
    """A and B on one image: A left of a divider, B right of it. Dragging the divider
    moves it; dragging anywhere else pans, and the wheel zooms, as in the other views."""

    #: The divider moved (its place as a fraction of the image's width).
    dividerMoved = Signal(float)

    #: Screen pixels either side of the divider that grab it.
    GRAB = 8

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, checkerboard=True)
        # A is drawn over B, clipped to the left of the divider.
        self._clip = QGraphicsRectItem()
        self._clip.setPen(QPen(Qt.PenStyle.NoPen))
        self._clip.setFlag(QGraphicsItem.GraphicsItemFlag.ItemClipsChildrenToShape)
        self._clip.setZValue(0.5)
        self.scene().addItem(self._clip)
        self._a = QGraphicsPixmapItem(self._clip)
        self._a.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
        self._a_key: int | None = None
        #: Where the divider is, as a fraction of the image's width.
        self.fraction = 0.5
        self._dragging = False
        self.setMouseTracking(True)

    def set_pair(self, a: QImage | None, b: QImage | None, size: tuple[int, int]) -> None:
        """Show ``a`` left of the divider and ``b`` right of it, both stretched to ``size``."""
        self.set_image(b, size)
        if a is None or a.isNull() or b is None:
            self._a.setPixmap(QPixmap())
            self._a_key = None
        elif a.cacheKey() != self._a_key:
            self._a.setPixmap(QPixmap.fromImage(a))
            self._a_key = a.cacheKey()
            self._a.setTransform(QTransform.fromScale(size[0] / a.width(), size[1] / a.height()))
        self._place()

    def set_fraction(self, fraction: float) -> None:
        self.fraction = min(1.0, max(0.0, fraction))
        self._place()
        self.dividerMoved.emit(self.fraction)

    def divider_x(self) -> float:
        """The divider's place in the viewport's pixels."""
        rect = self.sceneRect()
        return self.mapFromScene(QPointF(rect.width() * self.fraction, 0)).x()

    def _place(self) -> None:
        rect = self.sceneRect()
        self._clip.setRect(QRectF(0, 0, rect.width() * self.fraction, rect.height()))
        self.viewport().update()

    def _near_divider(self, event: QMouseEvent) -> bool:
        return self.has_image() and abs(event.position().x() - self.divider_x()) <= self.GRAB

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton and self._near_divider(event):
            self._dragging = True
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._dragging:
            x = self.mapToScene(event.position().toPoint()).x()
            self.set_fraction(x / max(self.sceneRect().width(), 1.0))
            event.accept()
            return
        near = self._near_divider(event)
        self.viewport().setCursor(
            Qt.CursorShape.SplitHCursor if near else Qt.CursorShape.OpenHandCursor
        )
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._dragging:
            self._dragging = False
            event.accept()
            return
        super().mouseReleaseEvent(event)

    def drawForeground(self, painter: QPainter, rect: QRectF | QRect) -> None:
        super().drawForeground(painter, rect)
        if not self.has_image():
            return
        painter.save()
        painter.setTransform(QTransform())  # in screen pixels, one width at any zoom
        image = self.viewportTransform().mapRect(self.sceneRect())
        area = image.intersected(QRectF(self.viewport().rect()))
        x = self.divider_x()
        if area.left() <= x <= area.right():
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(QPen(QColor(0, 0, 0, 160), 4))
            painter.drawLine(QPointF(x, area.top()), QPointF(x, area.bottom()))
            painter.setPen(QPen(QColor(255, 255, 255), 2))
            painter.drawLine(QPointF(x, area.top()), QPointF(x, area.bottom()))
            # The handle, and which side is which.
            middle = QPointF(x, area.center().y())
            painter.setBrush(QColor(255, 255, 255))
            painter.setPen(QPen(QColor(0, 0, 0, 160), 1.5))
            painter.drawEllipse(middle, 9, 9)
            painter.drawText(
                QRectF(x - 9, middle.y() - 9, 18, 18), Qt.AlignmentFlag.AlignCenter, "↔"
            )
            for text, left in (("A", True), ("B", False)):
                box = QRectF(0, area.top() + 6, 22, 18)
                box.moveRight(x - 6) if left else box.moveLeft(x + 6)
                painter.setBrush(QColor(0, 0, 0, 150))
                painter.setPen(Qt.PenStyle.NoPen)
                painter.drawRoundedRect(box, 4, 4)
                painter.setPen(QColor(255, 255, 255))
                painter.drawText(box, Qt.AlignmentFlag.AlignCenter, text)
        painter.restore()


#: What a mask drops, tinted over the photo (what it keeps shows as it is).
DROPPED_TINT = QColor(220, 30, 90)
DROPPED_OPACITY = 0.6


def mask_over_photo(photo: QImage, mask: QImage) -> QImage:
    """``photo`` with what ``mask`` (grey, the photo's size) drops tinted."""
    out = photo.convertToFormat(QImage.Format.Format_RGB32)
    tint = QImage(photo.size(), QImage.Format.Format_ARGB32_Premultiplied)
    tint.fill(DROPPED_TINT)
    dropped = mask.convertToFormat(QImage.Format.Format_Grayscale8)
    dropped.invertPixels()
    tint.setAlphaChannel(dropped)
    painter = QPainter(out)
    painter.setOpacity(DROPPED_OPACITY)
    painter.drawImage(0, 0, tint)
    painter.end()
    return out
