"""Touch-up on the Result view: the edit tools turn the mouse into edit operations.

The tools are the engine's table (:data:`bgremover.touchup.tools.TOOLS`): what each is given
(its kind) says what the mouse draws for it, and its record gives the preview's
colour and the hint's words. The pixels are the engine's. Here a brush stroke is only a
path drawn as the mouse moves (at screen resolution, the brush's true width at any
zoom), a click a point, a box a rectangle: each becomes an
:class:`~bgremover.touchup.edit.Operation` in the photo's full-size pixel coordinates (the
scene's: the Result view shows the photo at its own size), which the window has
applied as a job. What was drawn stays until the job has applied it. A circle of
the brush's size follows the mouse; its light ring is dashed while the brush is
edge-aware. The overlay (overlay.py) shows the mask over the photo.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QAction, QColor, QMouseEvent, QPainterPath, QPen
from PySide6.QtWidgets import (
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QSpinBox,
    QToolBar,
    QToolButton,
    QWidget,
)

from ..touchup.tools import TOOLS, Kind, Operation, Tool
from .markers import REMOVE_WORDS
from .views import ImageView

DEFAULT_RADIUS = 24.0
MIN_RADIUS, MAX_RADIUS = 1.0, 2000.0
#: ``[`` and ``]`` change the brush's size by this factor.
SIZE_STEP = 1.25
#: The kinds of tool picked and then used with the mouse on the photo.
DRAWN = tuple(kind for kind in Kind if kind.drawn)


def preview_color(tool: Tool) -> QColor:
    """The colour of what is drawn for ``tool``'s operation until the job has applied it."""
    if tool.preview is None:
        raise ValueError(f"The {tool.name!r} tool draws nothing to preview.")
    return QColor(*tool.preview)


def brush_words(tool: Tool, edge_aware: bool) -> str:
    """A brush's button text: its word, and that it is edge-aware when it is."""
    return f"{tool.word} (edge-aware)" if edge_aware else tool.word


def edit_mode_hint() -> str:
    """What edit mode's status message says: every tool's key (from the tools' table)
    and the keys of the brush, the overlay and leaving."""
    keys = ", ".join(
        f"{t.key} {t.word.lower()}" for t in TOOLS.values() if t.kind in (*DRAWN, Kind.WHOLE)
    )
    return (
        f"Edit mode: {keys}; [ ] brush size; O overlay; {REMOVE_WORDS}; middle button pans; "
        "E when done."
    )


class EditTools(QObject):
    """The edit tools on an :class:`ImageView`: mouse events in, operations out.

    Inactive, the view pans and zooms as always; active, the left button uses the tool
    and the middle button pans (the wheel still zooms).
    """

    #: An operation the user made, in the photo's full-size pixels.
    operation = Signal(object)  # Operation
    #: The brush's radius changed (in the photo's pixels).
    radiusChanged = Signal(float)
    toolChanged = Signal(str)

    def __init__(self, view: ImageView, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self.active = False
        #: The tool the mouse uses: the first one the tools' table lists.
        self.tool = next(t.name for t in TOOLS.values() if t.kind.drawn)
        self.radius = DEFAULT_RADIUS
        self.hardness = 0.8
        self.edge_aware = False
        scene = view.scene()
        # The brush's outline: a dark and a light circle, one screen pixel each, seen on
        # any photo; their size is the brush's, in the photo's pixels, at any zoom.
        self._cursor: list[QGraphicsEllipseItem] = []
        for color, width in ((QColor(0, 0, 0, 200), 3.0), (QColor(255, 255, 255), 1.2)):
            item = QGraphicsEllipseItem()
            pen = QPen(color, width)
            pen.setCosmetic(True)
            item.setPen(pen)
            item.setZValue(20)
            item.setVisible(False)
            scene.addItem(item)
            self._cursor.append(item)
        # Where a soft brush starts to fade: a dotted circle inside.
        self._inner = QGraphicsEllipseItem()
        pen = QPen(QColor(255, 255, 255, 200), 1.0, Qt.PenStyle.DotLine)
        pen.setCosmetic(True)
        self._inner.setPen(pen)
        self._inner.setZValue(20)
        self._inner.setVisible(False)
        scene.addItem(self._inner)
        self._cursor_at = QPointF()
        self._cursor_inside = False
        self._points: list[tuple[float, float]] = []
        self._drawing: QGraphicsPathItem | QGraphicsRectItem | None = None
        self._path = QPainterPath()
        self._anchor = QPointF()
        #: Where a middle-button drag (panning) was last, while it lasts.
        self._panning: QPointF | None = None
        #: What was drawn for operations not yet applied, by the operation's id.
        self._pending: dict[int, QGraphicsItem] = {}
        view.viewport().setMouseTracking(True)
        view.viewport().installEventFilter(self)

    # -- state ---------------------------------------------------------------------
    def set_active(self, on: bool) -> None:
        if on == self.active:
            return
        self.active = on
        self._cancel_drawing()
        self.view.setDragMode(
            QGraphicsView.DragMode.NoDrag if on else QGraphicsView.DragMode.ScrollHandDrag
        )
        self._update_cursor()

    def set_tool(self, tool: str) -> None:
        """Use ``tool`` (a tool the mouse gives, :data:`DRAWN`) on the photo."""
        if tool not in TOOLS or not TOOLS[tool].kind.drawn:
            raise ValueError(f"{tool!r} is not an edit tool used with the mouse")
        self._cancel_drawing()
        self.tool = tool
        self._update_cursor()
        self.toolChanged.emit(tool)

    def set_radius(self, radius: float) -> None:
        radius = min(MAX_RADIUS, max(MIN_RADIUS, float(radius)))
        if radius != self.radius:
            self.radius = radius
            self._place_cursor(self._cursor_at)
            self.radiusChanged.emit(radius)

    def set_edge_aware(self, on: bool) -> None:
        """Brush strokes follow the photo's edges (or not); the brush's outline says which:
        its light ring is dashed while they do."""
        self.edge_aware = bool(on)
        pen = self._cursor[1].pen()
        pen.setStyle(Qt.PenStyle.DashLine if self.edge_aware else Qt.PenStyle.SolidLine)
        self._cursor[1].setPen(pen)

    def set_hardness(self, hardness: float) -> None:
        self.hardness = min(1.0, max(0.0, float(hardness)))
        self._place_cursor(self._cursor_at)
        self._update_cursor()

    def grow(self, factor: float) -> None:
        """``]`` / ``[``: a bigger or smaller brush."""
        self.set_radius(self.radius * factor)

    def _update_cursor(self) -> None:
        brush = self.active and TOOLS[self.tool].kind is Kind.BRUSH
        shape = Qt.CursorShape.BlankCursor if brush else Qt.CursorShape.CrossCursor
        if self.active:
            self.view.viewport().setCursor(shape)
        else:
            self.view.viewport().unsetCursor()
        for item in self._cursor:
            item.setVisible(brush and self._cursor_inside)
        self._inner.setVisible(brush and self._cursor_inside and self.hardness < 1.0)

    def _place_cursor(self, pos: QPointF) -> None:
        self._cursor_at = pos
        r = self.radius
        for item in self._cursor:
            item.setRect(QRectF(pos.x() - r, pos.y() - r, 2 * r, 2 * r))
        inner = r * self.hardness
        self._inner.setRect(QRectF(pos.x() - inner, pos.y() - inner, 2 * inner, 2 * inner))

    # -- operations in flight --------------------------------------------------------
    def applied(self, op: Operation | None) -> None:
        """``op`` has been applied (or refused): what was drawn for it goes."""
        item = self._pending.pop(id(op), None) if op is not None else None
        if item is not None:
            self.view.scene().removeItem(item)

    def clear_pending(self) -> None:
        for item in self._pending.values():
            self.view.scene().removeItem(item)
        self._pending.clear()

    def pending(self) -> int:
        return len(self._pending)

    # -- the mouse -------------------------------------------------------------------
    def _scene_pos(self, event: QMouseEvent) -> QPointF:
        inverse, _ = self.view.viewportTransform().inverted()
        return inverse.map(event.position())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if not self.active or not self.view.has_image():
            return False
        kind = event.type()
        if kind == QEvent.Type.Leave:
            self._cursor_inside = False
            self._update_cursor()
            return False
        if kind not in (
            QEvent.Type.MouseButtonPress,
            QEvent.Type.MouseMove,
            QEvent.Type.MouseButtonRelease,
        ):
            return False
        assert isinstance(event, QMouseEvent)
        pos = self._scene_pos(event)
        if self._panning is not None or event.button() == Qt.MouseButton.MiddleButton:
            return self._pan(kind, event)
        if kind == QEvent.Type.MouseMove:
            if not self._cursor_inside:
                self._cursor_inside = True
                self._update_cursor()
            self._place_cursor(pos)
            if self._drawing is not None:
                self._extend(pos)
                return True
            return False
        if event.button() != Qt.MouseButton.LeftButton:
            return False
        if kind == QEvent.Type.MouseButtonPress:
            self._begin(pos)
        else:
            self._finish(pos)
        return True

    def _pan(self, kind: QEvent.Type, event: QMouseEvent) -> bool:
        """The middle button drags the view while the left one is the tool's."""
        at = event.position()
        if kind == QEvent.Type.MouseButtonPress:
            self._panning = at
        elif self._panning is not None:
            delta = at - self._panning
            self._panning = None if kind == QEvent.Type.MouseButtonRelease else at
            h, v = self.view.horizontalScrollBar(), self.view.verticalScrollBar()
            h.setValue(h.value() - round(delta.x()))
            v.setValue(v.value() - round(delta.y()))
        return True

    def _begin(self, pos: QPointF) -> None:
        """The button pressed: a brush starts its stroke, a box its rectangle, a click is
        made at once."""
        self._cancel_drawing()
        scene = self.view.scene()
        tool = TOOLS[self.tool]
        if tool.kind is Kind.BRUSH:
            self._points = [(pos.x(), pos.y())]
            self._path = QPainterPath(pos)
            self._path.lineTo(pos + QPointF(0.01, 0))  # a dab shows as a dot
            item = QGraphicsPathItem(self._path)
            pen = QPen(preview_color(tool), 2 * self.radius)
            pen.setCapStyle(Qt.PenCapStyle.RoundCap)
            pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
            item.setPen(pen)
            item.setZValue(10)
            scene.addItem(item)
            self._drawing = item
        elif tool.kind is Kind.BOX:
            self._anchor = pos
            rect = QGraphicsRectItem(QRectF(pos, pos))
            pen = QPen(QColor(255, 255, 255), 1.5, Qt.PenStyle.DashLine)
            pen.setCosmetic(True)
            rect.setPen(pen)
            rect.setBrush(preview_color(tool))
            rect.setZValue(10)
            scene.addItem(rect)
            self._drawing = rect
        elif tool.kind is Kind.CLICK:  # applied at once; a marker shows where until it is
            op = Operation(tool.name, ((pos.x(), pos.y()),))
            marker = QGraphicsEllipseItem()
            marker.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
            marker.setRect(QRectF(-5, -5, 10, 10))
            marker.setPos(pos)
            pen = QPen(QColor(255, 255, 255), 2)
            marker.setPen(pen)
            marker.setBrush(preview_color(tool))
            marker.setZValue(10)
            scene.addItem(marker)
            self._pending[id(op)] = marker
            self.operation.emit(op)
        else:
            raise ValueError(f"The {tool.name!r} tool is not used with the mouse.")

    def _extend(self, pos: QPointF) -> None:
        item = self._drawing
        if isinstance(item, QGraphicsPathItem):
            last = self._points[-1]
            # Points closer than a pixel of the photo add nothing to the stroke.
            if (pos.x() - last[0]) ** 2 + (pos.y() - last[1]) ** 2 < 1.0:
                return
            self._points.append((pos.x(), pos.y()))
            self._path.lineTo(pos)
            item.setPath(self._path)
        elif isinstance(item, QGraphicsRectItem):
            item.setRect(QRectF(self._anchor, pos).normalized())

    def _finish(self, pos: QPointF) -> None:
        item = self._drawing
        if item is None:
            return
        self._extend(pos)  # the stroke goes up to where the button was released
        self._drawing = None
        if isinstance(item, QGraphicsPathItem):
            op = Operation.stroke(
                self.tool, self._points, self.radius, self.hardness, self.edge_aware
            )
        else:
            rect = QRectF(self._anchor, pos).normalized()
            if rect.width() < 4 or rect.height() < 4:  # a slip, not a box
                self.view.scene().removeItem(item)
                return
            corners = ((rect.left(), rect.top()), (rect.right(), rect.bottom()))
            op = Operation(self.tool, corners)
        self._pending[id(op)] = item
        self.operation.emit(op)

    def _cancel_drawing(self) -> None:
        if self._drawing is not None:
            self.view.scene().removeItem(self._drawing)
            self._drawing = None


class EditBar(QToolBar):
    """The column of edit tools beside the Result view, shown in edit mode: the tool
    buttons, the brush's size and hardness, and the edit actions (``None``: a
    separator)."""

    def __init__(
        self,
        tools: EditTools,
        tool_actions: dict[str, QAction],
        size_actions: tuple[QAction, QAction],
        actions: list[QAction | None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.tools = tools
        self.setOrientation(Qt.Orientation.Vertical)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.setMovable(False)
        self.setFloatable(False)
        for action in tool_actions.values():
            self.addAction(action)
        self.addSeparator()
        self.addWidget(QLabel("Brush size"))
        smaller, bigger = size_actions
        self.size_spin = QSpinBox()
        self.size_spin.setRange(int(MIN_RADIUS), int(MAX_RADIUS))
        self.size_spin.setSuffix(" px")
        self.size_spin.setValue(round(tools.radius))
        self.size_spin.setToolTip("The brush's radius in pixels of the photo ([ smaller, ] bigger)")
        self.size_spin.valueChanged.connect(lambda v: tools.set_radius(float(v)))
        tools.radiusChanged.connect(self._show_radius)
        self.addWidget(_row(_button(smaller), self.size_spin, _button(bigger)))
        self.addWidget(QLabel("Hardness"))
        self.hardness_spin = QSpinBox()
        self.hardness_spin.setRange(0, 100)
        self.hardness_spin.setSuffix(" %")
        self.hardness_spin.setValue(round(100 * tools.hardness))
        self.hardness_spin.setToolTip(
            "100 %: the brush paints fully up to its edge; lower: it fades towards its edge"
        )
        self.hardness_spin.valueChanged.connect(lambda v: tools.set_hardness(v / 100))
        self.addWidget(self.hardness_spin)
        for extra in actions:
            if extra is None:
                self.addSeparator()
            else:
                self.addAction(extra)
        # Every tool and action looks like a button (a tool bar draws them flat until
        # one is checked), and the column's buttons are one width.
        for button in self.buttons():
            button.setAutoRaise(False)
            button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def buttons(self) -> list[QToolButton]:
        """The bar's buttons, one per action, top to bottom."""
        found = (self.widgetForAction(action) for action in self.actions())
        return [b for b in found if isinstance(b, QToolButton)]

    def _show_radius(self, radius: float) -> None:
        self.size_spin.blockSignals(True)
        self.size_spin.setValue(round(radius))
        self.size_spin.blockSignals(False)


def _button(action: QAction) -> QToolButton:
    button = QToolButton()
    button.setDefaultAction(action)
    return button


def _row(*widgets: QWidget) -> QWidget:
    row = QWidget()
    layout = QHBoxLayout(row)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    for widget in widgets:
        layout.addWidget(widget)
    return row


def tool_tip(text: str, shortcut: str) -> str:
    """A tooltip with its key, as the app's other tooltips show it."""
    return f"{text} ({shortcut})" if shortcut else text
