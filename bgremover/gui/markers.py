"""Touch-up's click markers: where each Add (+) and Remove (−) click in effect landed.

The clicks in effect are the click operations since the last restart of the edits
(:meth:`bgremover.touchup.edit.Edits.clicks`): what the next click is constrained by.
Each gets a marker on the Result view: a disc of the tool's side (green +: kept, red −:
removed) ringed white and black, so that it reads on any photo, the same size on
screen at any zoom. A right-click on a marker asks for that click to be taken out of
the edits (:attr:`ClickMarkers.removeRequested`, with the operation's index); the edit
controller applies that as one undoable edit. The markers are drawn from the edits
the user asked for, so they follow Undo, Redo and Reset at once.

A click that changed nothing the user can see is not kept as an edit (edit_controller.py):
where it landed gets a :class:`ClickNote` instead, a hollow dashed ring with the words
:data:`NOTHING_WORDS` beside it, until the next edit.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, QObject, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QMouseEvent, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from ..touchup.tools import Operation
from .views import ImageView

#: The marker's disc: its radius in screen pixels, at any zoom.
MARKER_RADIUS = 9.0
#: The disc's colours: a kept (+) click's, a removed (−) click's, one that marks neither.
KEEP_COLOR = QColor(30, 170, 70)
DROP_COLOR = QColor(220, 35, 55)
OTHER_COLOR = QColor(120, 120, 120)
#: Drawn above the mask's overlays, below the brush's outline.
MARKER_Z = 15.0
#: What a marker's tooltip and the edit-mode hint say removes it.
REMOVE_WORDS = "right-click a marker to take back its click"
#: What the note beside a click that changed nothing says.
NOTHING_WORDS = "changed nothing"


def tool_color(op: Operation) -> QColor:
    """A click's colour: what it keeps green, what it drops red, any other a third."""
    keeps = op.spec.keeps
    return OTHER_COLOR if keeps is None else KEEP_COLOR if keeps else DROP_COLOR


class ClickMarker(QGraphicsItem):
    """One click's marker, at the click's point in the photo's pixels (the scene's)."""

    def __init__(self, index: int, op: Operation, point: QPointF) -> None:
        super().__init__()
        #: The click's index in the edits (what a removal names).
        self.index = index
        self.op = op
        self.keeps = op.spec.keeps
        self.hovered = False
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        self.setAcceptHoverEvents(True)
        self.setZValue(MARKER_Z)
        self.setPos(point)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip(f"{op.spec.word} at ({point.x():.0f}, {point.y():.0f}): {REMOVE_WORDS}")

    @property
    def color(self) -> QColor:
        return tool_color(self.op)

    @property
    def sign(self) -> str:
        if self.keeps is None:
            return ""
        return "+" if self.keeps else "−"

    def boundingRect(self) -> QRectF:
        r = MARKER_RADIUS + 4
        return QRectF(-r, -r, 2 * r, 2 * r)

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        r = MARKER_RADIUS + 2
        path.addEllipse(QPointF(0, 0), r, r)
        return path

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionGraphicsItem,
        widget: QWidget | None = None,
    ) -> None:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = MARKER_RADIUS + (1.5 if self.hovered else 0.0)
        # A black ring outside a white one: one of the two stands out on any photo.
        painter.setPen(QPen(QColor(0, 0, 0), 4.5))
        painter.setBrush(self.color)
        painter.drawEllipse(QPointF(0, 0), r, r)
        painter.setPen(QPen(QColor(255, 255, 255), 2.0))
        painter.drawEllipse(QPointF(0, 0), r, r)
        arm = 0.5 * r
        lines = [(QPointF(-arm, 0), QPointF(arm, 0))]
        if self.keeps:
            lines.append((QPointF(0, -arm), QPointF(0, arm)))
        elif self.keeps is None:
            lines = []
        for pen in (QPen(QColor(0, 0, 0, 160), 4.0), QPen(QColor(255, 255, 255), 2.2)):
            pen.setCapStyle(Qt.PenCapStyle.RoundCap)
            painter.setPen(pen)
            for a, b in lines:
                painter.drawLine(a, b)

    def hoverEnterEvent(self, event: object) -> None:
        self.hovered = True
        self.update()

    def hoverLeaveEvent(self, event: object) -> None:
        self.hovered = False
        self.update()


class ClickNote(QGraphicsItem):
    """Where a click that changed nothing landed: a hollow dashed ring of its tool's colour
    and, beside it, :data:`NOTHING_WORDS` on a dark label; ``tip`` (what to try instead)
    is its tooltip. The same size on screen at any zoom."""

    def __init__(self, op: Operation, point: QPointF, tip: str) -> None:
        super().__init__()
        self.op = op
        self.text = NOTHING_WORDS
        self.color = tool_color(op)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        self.setZValue(MARKER_Z + 1)
        self.setPos(point)
        self.setToolTip(tip)
        self._font = QFont()
        self._font.setBold(True)
        metrics = QFontMetricsF(self._font)
        self._label = QRectF(MARKER_RADIUS + 6, -metrics.height() / 2 - 3, 0, 0)
        self._label.setSize(metrics.size(0, self.text) + QRectF(0, 0, 12, 6).size())

    def boundingRect(self) -> QRectF:
        r = MARKER_RADIUS + 4
        return QRectF(-r, -r, 2 * r, 2 * r).united(self._label.adjusted(-1, -1, 1, 1))

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionGraphicsItem,
        widget: QWidget | None = None,
    ) -> None:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = MARKER_RADIUS
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(QPen(QColor(0, 0, 0), 4.5))
        painter.drawEllipse(QPointF(0, 0), r, r)
        dashed = QPen(self.color, 2.5, Qt.PenStyle.DashLine)
        painter.setPen(dashed)
        painter.drawEllipse(QPointF(0, 0), r, r)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(0, 0, 0, 190))
        painter.drawRoundedRect(self._label, 4, 4)
        painter.setPen(QColor(255, 255, 255))
        painter.setFont(self._font)
        painter.drawText(self._label, Qt.AlignmentFlag.AlignCenter, self.text)


class ClickMarkers(QObject):
    """The markers of the clicks in effect on ``view``; a right-click on one emits
    :attr:`removeRequested` with its click's index in the edits."""

    removeRequested = Signal(int)

    def __init__(self, view: ImageView, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self._items: list[ClickMarker] = []
        self._shown: tuple[tuple[int, Operation], ...] = ()
        #: The note of a click that changed nothing (None: none shown).
        self.note: ClickNote | None = None
        view.viewport().installEventFilter(self)

    def show(self, clicks: Sequence[tuple[int, Operation]], scale: tuple[float, float]) -> None:
        """Markers for ``clicks`` (index in the edits, operation), whose points are scaled
        by ``scale`` (x, y) to the scene's pixels; those shown before go. Costs nothing
        when they are the ones shown."""
        wanted = tuple(clicks)
        if wanted == self._shown and self._items:
            return
        self.clear()
        sx, sy = scale
        for index, op in wanted:
            x, y = op.points[0]
            item = ClickMarker(index, op, QPointF(x * sx, y * sy))
            self.view.scene().addItem(item)
            self._items.append(item)
        self._shown = wanted

    def clear(self) -> None:
        for item in self._items:
            self.view.scene().removeItem(item)
        self._items.clear()
        self._shown = ()

    def show_note(self, op: Operation, point: QPointF, tip: str) -> None:
        """The note that ``op``, a click at ``point`` (the scene's pixels), changed nothing;
        ``tip`` says what to try instead. Replaces the note shown before."""
        if self.note is not None and self.note.op is op and self.note.pos() == point:
            return
        self.clear_note()
        self.note = ClickNote(op, point, tip)
        self.view.scene().addItem(self.note)

    def clear_note(self) -> None:
        if self.note is not None:
            self.view.scene().removeItem(self.note)
            self.note = None

    def markers(self) -> list[ClickMarker]:
        """The markers shown, oldest click first."""
        return list(self._items)

    def marker_at(self, at: QPointF) -> ClickMarker | None:
        """The marker under the viewport's point ``at`` (the newest when they overlap)."""
        if not self._items:
            return None
        for item in self.view.items(at.toPoint()):
            if isinstance(item, ClickMarker):
                return item
        return None

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.MouseButtonPress and isinstance(event, QMouseEvent):
            if event.button() == Qt.MouseButton.RightButton:
                marker = self.marker_at(event.position())
                if marker is not None:
                    self.removeRequested.emit(marker.index)
                    return True
        elif kind == QEvent.Type.ContextMenu and self._items:
            return True  # a right-click here is the markers'
        return False
