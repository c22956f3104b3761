"""Image views: zoom (wheel, fit, 100 %), pan, a checkerboard under transparency,
an overlay over the image (the mask while editing), redrawing only a changed box,
a lock that keeps several views on the same zoom and position, the drop zone
an empty window shows, and a label that shortens itself to its room."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtCore import QEvent, QPointF, QRect, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFontMetrics,
    QImage,
    QPainter,
    QPixmap,
    QResizeEvent,
    QTransform,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QFrame,
    QGraphicsPixmapItem,
    QGraphicsScene,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

MIN_ZOOM, MAX_ZOOM = 0.02, 64.0


def checkerboard_brush(cell: int = 10) -> QBrush:
    tile = QPixmap(2 * cell, 2 * cell)
    tile.fill(QColor(204, 204, 204))
    painter = QPainter(tile)
    painter.fillRect(0, 0, cell, cell, QColor(245, 245, 245))
    painter.fillRect(cell, cell, cell, cell, QColor(245, 245, 245))
    painter.end()
    return QBrush(tile)


class ImageView(QGraphicsView):
    """Shows one image; wheel zooms around the cursor, dragging pans.

    ``viewChanged`` fires whenever zoom or position change through the user,
    so that a :class:`ViewLock` can mirror it in other views.
    """

    viewChanged = Signal()

    def __init__(self, parent: QWidget | None = None, checkerboard: bool = True) -> None:
        super().__init__(parent)
        self._scene = QGraphicsScene(self)
        self.setScene(self._scene)
        self._item = QGraphicsPixmapItem()
        self._item.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
        self._scene.addItem(self._item)
        #: Drawn over the image (the mask's overlay while editing), at the image's size.
        self._overlay = QGraphicsPixmapItem()
        self._overlay.setZValue(1)
        self._overlay.setVisible(False)
        self._scene.addItem(self._overlay)
        #: What the image item shows (the QImage's cache key and the size asked for), so
        #: that showing the same image again costs nothing.
        self._shown: tuple[int, tuple[int, int] | None] | None = None
        #: Whether the image item's pixmap has pixels of its own (see set_image).
        self._owned = False
        self._overlay_shown: int | None = None
        self._checker = checkerboard_brush() if checkerboard else None
        self._fit = True
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        self.setBackgroundBrush(self.palette().window())
        self.horizontalScrollBar().valueChanged.connect(self._user_moved)
        self.verticalScrollBar().valueChanged.connect(self._user_moved)
        self._syncing = False

    # -- content -------------------------------------------------------
    def set_image(
        self, image: QImage | None, size: tuple[int, int] | None = None, editable: bool = False
    ) -> None:
        """Show ``image``; ``size`` (w, h) stretches it (e.g. a 320² raw output over a photo).

        ``editable``: it will be redrawn in parts (:meth:`update_region`). The pixmap then
        gets pixels of its own now: one shared with ``image`` (Qt's cheap default) would
        be copied whole by the first partial redraw, in the middle of painting.
        """
        if image is None or image.isNull():
            self._item.setPixmap(QPixmap())
            self._scene.setSceneRect(QRectF())
            self._shown = None
            self.set_overlay(None)
            return
        key = (image.cacheKey(), size)
        if key == self._shown and (self._owned or not editable):
            return  # already on screen: a 12-megapixel pixmap is not made again
        self._shown, self._owned = key, editable
        pixmap = QPixmap.fromImage(image.copy() if editable else image)
        self._item.setPixmap(pixmap)
        w, h = size or (pixmap.width(), pixmap.height())
        self._item.setTransform(QTransform.fromScale(w / pixmap.width(), h / pixmap.height()))
        self._item.setTransformationMode(
            Qt.TransformationMode.FastTransformation
            if size and size[0] > pixmap.width()
            else Qt.TransformationMode.SmoothTransformation
        )
        if self._scene.sceneRect().size().toSize() != QSize(w, h):
            # Another size (an export cropped or on a canvas, then the photo): a zoom and
            # position chosen for the other picture would show an arbitrary part of it.
            self._fit = True
        self._scene.setSceneRect(QRectF(0, 0, w, h))
        if self._fit:
            self.fit()

    def has_image(self) -> bool:
        return not self._item.pixmap().isNull()

    def update_region(self, image: QImage, box: tuple[int, int, int, int]) -> None:
        """``image`` replaces the one shown, which differs from it only inside ``box``
        (x0, y0, x1, y1 in its pixels): only that part is converted and drawn."""
        if (image.cacheKey(), None) == self._shown:
            return  # the same picture (the photo under the overlay): nothing changed
        if not _patch(self._item, image, box):
            self.set_image(image, editable=True)
            return
        self._shown, self._owned = (image.cacheKey(), None), True

    def set_overlay(self, image: QImage | None) -> None:
        """Draw ``image`` (the image's size, translucent) over the image; None hides it."""
        if image is None or image.isNull():
            self._overlay.setVisible(False)
            self._overlay.setPixmap(QPixmap())
            self._overlay_shown = None
            return
        if image.cacheKey() != self._overlay_shown:
            self._overlay.setPixmap(QPixmap.fromImage(image))
            self._overlay_shown = image.cacheKey()
        self._overlay.setTransform(self._item.transform())
        self._overlay.setVisible(True)

    def update_overlay(self, image: QImage, box: tuple[int, int, int, int]) -> None:
        """Like :meth:`update_region`, for the overlay."""
        if not self._overlay.isVisible() or not _patch(self._overlay, image, box):
            self.set_overlay(image)
            return
        self._overlay_shown = image.cacheKey()

    def overlay_shown(self) -> bool:
        return self._overlay.isVisible()

    def set_checkerboard(self, shown: bool) -> None:
        """A checkerboard under the image's transparency, or the window's colour."""
        if shown != (self._checker is not None):
            self._checker = checkerboard_brush() if shown else None
            self.viewport().update()

    # -- zoom ----------------------------------------------------------
    @property
    def zoom(self) -> float:
        return self.transform().m11()

    def set_zoom(self, factor: float) -> None:
        factor = min(MAX_ZOOM, max(MIN_ZOOM, factor))
        self._fit = False
        self.setTransform(QTransform.fromScale(factor, factor))
        self.viewChanged.emit()

    def zoom_by(self, step: float) -> None:
        self.set_zoom(self.zoom * step)

    def actual_size(self) -> None:
        self.set_zoom(1.0)

    def fit(self) -> None:
        self._fit = True
        if self._scene.sceneRect().isEmpty():
            return
        self.fitInView(self._scene.sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)
        self.viewChanged.emit()

    def show_region(self, region: QRectF) -> None:
        """Zoom to show ``region`` (in the image's pixels) whole, in the middle."""
        self._fit = False
        self.fitInView(region, Qt.AspectRatioMode.KeepAspectRatio)
        self.viewChanged.emit()

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120.0
        if steps:
            self.zoom_by(1.25**steps)
        event.accept()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self._fit:
            self.fit()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # the system went dark or light
            self.setBackgroundBrush(self.palette().window())

    def drawBackground(self, painter: QPainter, rect: QRectF | QRect) -> None:
        super().drawBackground(painter, rect)
        if self._checker is not None and self.has_image():
            painter.save()
            painter.setTransform(QTransform())  # a checkerboard of screen-sized cells
            # Exactly under the image: a polygon's bounding box would be a pixel wider,
            # and show as a dotted line beside an opaque output.
            area = self.viewportTransform().mapRect(self._scene.sceneRect())
            painter.fillRect(area, self._checker)
            painter.restore()

    # -- view lock -----------------------------------------------------
    def _user_moved(self) -> None:
        if not self._syncing:
            self.viewChanged.emit()

    def center_point(self) -> QPointF:
        return self.mapToScene(self.viewport().rect().center())

    def follow(self, other: ImageView) -> None:
        """Take ``other``'s zoom and centre, or fit as it does, without echoing a change back."""
        self._syncing = True
        try:
            self._fit = other._fit
            if self._fit:  # fitted, each in its own room (panes differ by a pixel or a pane)
                self.fitInView(self._scene.sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)
            else:
                self.setTransform(other.transform())
                self.centerOn(other.center_point())
        finally:
            self._syncing = False


def _patch(item: QGraphicsPixmapItem, image: QImage, box: tuple[int, int, int, int]) -> bool:
    """Paint ``box`` of ``image`` into ``item``'s pixmap in place; False if it cannot."""
    pixmap = item.pixmap()
    if pixmap.isNull() or pixmap.size() != image.size():
        return False
    x0, y0, x1, y1 = box
    rect = QRect(x0, y0, x1 - x0, y1 - y0).intersected(image.rect())
    if rect.isEmpty():
        return True
    # The item lets go of the pixmap while it is painted, so that painting does not
    # copy all of it first (a pixmap shared with the item would be detached).
    item.setPixmap(QPixmap())
    painter = QPainter(pixmap)
    painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_Source)
    painter.drawImage(rect.topLeft(), image.copy(rect))
    painter.end()
    item.setPixmap(pixmap)
    return True


class ViewLock:
    """Keeps views on the same zoom and position: what one does, the others do.

    Only views showing pictures of one size follow each other: the same zoom and
    position mean nothing on a picture of another size (a cropped export)."""

    def __init__(self, *views: ImageView) -> None:
        self.views = views
        self._busy = False
        for view in views:
            view.viewChanged.connect(lambda v=view: self._mirror(v))

    @contextmanager
    def held(self) -> Iterator[None]:
        """What the views do inside is not mirrored: the caller places them itself."""
        busy, self._busy = self._busy, True
        try:
            yield
        finally:
            self._busy = busy

    def _mirror(self, source: ImageView) -> None:
        # A view laid aside (the comparison's panes not shown) follows, never leads:
        # its size, and so its fit, is not the one on screen.
        if self._busy or not source.isVisibleTo(source.window()):
            return
        self._busy = True
        try:
            size = source.sceneRect().size()
            for view in self.views:
                if view is not source and view.sceneRect().size() == size:
                    view.follow(source)
        finally:
            self._busy = False


class DropZone(QFrame):
    """What the viewer shows when there is no image to show.

    With an empty queue: an invitation to drop photos, with Open buttons. Otherwise
    a message about the image selected (why it failed, that it is on its way).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setFrameShadow(QFrame.Shadow.Sunken)
        self.title = QLabel()
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.6)
        self.title.setFont(font)
        self.text = QLabel()
        self.text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.open_files = QPushButton("Open Images…")
        self.open_folder = QPushButton("Open Folder…")
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.open_files)
        buttons.addWidget(self.open_folder)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addWidget(self.title)
        layout.addWidget(self.text)
        layout.addSpacing(12)
        layout.addLayout(buttons)
        layout.addStretch(2)
        self.show_empty()

    def show_empty(self) -> None:
        self.show_message(
            "Drop photos or folders here",
            "Folders are searched for images. You can also paste an image (Ctrl+V).",
            buttons=True,
        )

    def show_message(self, title: str, text: str = "", buttons: bool = False) -> None:
        self.title.setText(title)
        self.text.setText(text)
        self.text.setVisible(bool(text))
        self.open_files.setVisible(buttons)
        self.open_folder.setVisible(buttons)


def elide_at_word(text: str, fm: QFontMetrics, width: int, tail: str = "") -> str:
    """``text + tail`` where it fits in ``width`` pixels; else ``text`` up to its last
    whole word that fits, "…", and ``tail`` whole (a time left is never cut): a word is
    never cut in two. "…" alone (and the tail) where not even the first word fits."""
    whole = text + tail
    if fm.horizontalAdvance(whole) <= width:
        return whole
    tail = tail.lstrip(", ")
    after = f"… {tail}" if tail else "…"
    room = width - fm.horizontalAdvance(after)
    kept = ""
    for space in re.finditer(r"\s+", text):
        head = text[: space.start()].rstrip(" ,;:·—–-(")
        if fm.horizontalAdvance(head) > room:
            break
        kept = head
    return kept + after


class ElidedLabel(QLabel):
    """One line that ends in "…" where it is too long for its room (the whole text in
    its tooltip), instead of being cut at both ends. With ``at_word``, it is shortened
    at a word (:func:`elide_at_word`), and a ``tail`` given to :meth:`setText` is always
    shown whole."""

    def __init__(
        self, text: str = "", parent: QWidget | None = None, at_word: bool = False
    ) -> None:
        super().__init__(parent)
        self.at_word = at_word
        self._tail = ""
        self.setText(text)

    def setText(self, text: str, tail: str = "") -> None:
        changed = text + tail != getattr(self, "_full", None)
        self._full, self._tail = text + tail, tail
        self.setToolTip(self._full)
        self._elide()
        if changed:  # the layout asks the whole text's size again: the room to show it
            self.updateGeometry()

    def text(self) -> str:
        return self._full

    def sizeHint(self) -> QSize:  # the whole text's, not the shortened one's
        width = self.fontMetrics().horizontalAdvance(self._full) + 2 * self.margin() + 4
        return QSize(width, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        height = super().minimumSizeHint().height()
        kept = f"… {self._tail.lstrip(', ')}" if self._tail else "……"
        width = self.fontMetrics().horizontalAdvance(kept) + 2 * self.margin() + 4
        return QSize(max(width, 4 * self.fontMetrics().horizontalAdvance("…")), height)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        fm, width = self.fontMetrics(), self.contentsRect().width()
        if self.at_word:
            head = self._full[: len(self._full) - len(self._tail)]
            shown = elide_at_word(head, fm, width, self._tail)
        else:
            shown = fm.elidedText(self._full, Qt.TextElideMode.ElideRight, self.width())
        super().setText(shown)
