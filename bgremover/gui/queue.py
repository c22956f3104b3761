"""The queue as a model: its images, each one's status and results, and the memory policy.

:class:`QueueModel` is a Qt list model, so the queue's list view draws it and
every change to an entry reaches the view through one call, :meth:`QueueModel.changed`.
The model holds no widgets and starts no work: the main window decides what to
run, the model remembers what is known.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRect,
    QRectF,
    QSize,
    Qt,
)
from PySide6.QtGui import QColor, QIcon, QImage, QPainter, QPixmap
from PySide6.QtWidgets import QApplication, QStyle

from ..files.imaging import LoadedImage
from .entry import QueueEntry, Status

#: Full-size results (colour, masks and their display images: about 17 bytes a pixel)
#: kept in memory for the queue, in pixels: two 12-megapixel photos or twelve of 2 MP.
#: Older ones keep their thumbnail and are made again when shown, so a folder of hundreds
#: of camera photos does not fill the memory (measured: 12 camera photos took 2.5 GB
#: without this, 1.1 GB with it; 36 take 1.2 GB). The image on screen always stays.
RESULT_CACHE_PIXELS = 25_000_000

ID_ROLE = Qt.ItemDataRole.UserRole
#: The entry's name and its :class:`Status`, each on its own, for the list's delegate.
NAME_ROLE = Qt.ItemDataRole.UserRole + 1
STATUS_ROLE = Qt.ItemDataRole.UserRole + 2
#: The status as words, with the edited mark when the user has edited the image.
STATUS_TEXT_ROLE = Qt.ItemDataRole.UserRole + 3

#: The side of every row's icon, in device-independent pixels: thumbnails are
#: letterboxed into this square, and an image without one gets a tile of the same size.
ICON_SIZE = 56


def icon_tile(image: QImage | None = None, symbol: QIcon | None = None) -> QIcon:
    """A square :data:`ICON_SIZE` icon: a faint tile with ``image`` letterboxed on it
    (its aspect kept, centred) or ``symbol`` small in its middle."""
    app = QApplication.instance()
    ratio = app.devicePixelRatio() if isinstance(app, QApplication) else 1.0
    side = round(ICON_SIZE * ratio)
    pixmap = QPixmap(side, side)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor(128, 128, 128, 40))
    painter.drawRoundedRect(QRectF(0, 0, side, side), 4 * ratio, 4 * ratio)
    if image is not None and not image.isNull():
        inner = side - round(4 * ratio)
        fitted = QSize(image.width(), image.height()).scaled(
            inner, inner, Qt.AspectRatioMode.KeepAspectRatio
        )
        target = QRect(
            (side - fitted.width()) // 2,
            (side - fitted.height()) // 2,
            fitted.width(),
            fitted.height(),
        )
        painter.drawImage(target, image)
    elif symbol is not None:
        small = round(ICON_SIZE * 0.55 * ratio)
        offset = (side - small) // 2
        symbol.paint(painter, QRect(offset, offset, small, small))
    painter.end()
    pixmap.setDevicePixelRatio(ratio)
    return QIcon(pixmap)


class QueueModel(QAbstractListModel):
    """The queue's entries in display order, found by id in one step."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[QueueEntry] = []
        self._by_id: dict[int, QueueEntry] = {}
        #: Ids of entries whose full-size result is in memory, least recently used first.
        self._loaded: dict[int, None] = {}
        self._next_id = 1
        #: The entry on screen, whose result the memory policy always keeps.
        self.current: QueueEntry | None = None
        #: Each entry's list icon, made once per thumbnail, and the tiles of those without.
        self._icons: dict[int, tuple[QImage, QIcon]] = {}
        self._tiles: dict[str, QIcon] = {}

    # -- Qt's model interface ----------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        entry = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{entry.name}\n{entry.status_text}"
        if role == NAME_ROLE:
            return entry.name
        if role == STATUS_ROLE:
            return entry.status
        if role == STATUS_TEXT_ROLE:
            return entry.status_text
        if role == Qt.ItemDataRole.ToolTipRole:
            where = str(entry.source) if isinstance(entry.source, Path) else entry.name
            if entry.error:
                return f"{where}\n{entry.error}"
            notes = [n for n in (entry.stale_note, entry.doubt_note) if n]
            return "\n".join([f"{where}: {entry.status_text}", *notes])
        if role == Qt.ItemDataRole.DecorationRole:
            return self._icon(entry)
        if role == ID_ROLE:
            return entry.item_id
        return None

    def _icon(self, entry: QueueEntry) -> QIcon:
        """The thumbnail, letterboxed; a failure's tile (never an older result's thumbnail
        under a new failure); or, while there is none yet, a tile that waits for one."""
        if entry.status is Status.FAILED or entry.thumb is None:
            kind = "failed" if entry.status is Status.FAILED else "waiting"
            return self._tiles.get(kind) or self._tile(kind)
        cached = self._icons.get(entry.item_id)
        if cached is not None and cached[0] is entry.thumb:
            return cached[1]
        icon = icon_tile(entry.thumb)
        self._icons[entry.item_id] = (entry.thumb, icon)
        return icon

    def _tile(self, kind: str) -> QIcon:
        symbol = (
            QStyle.StandardPixmap.SP_MessageBoxWarning
            if kind == "failed"
            else QStyle.StandardPixmap.SP_FileIcon
        )
        icon = self._tiles[kind] = icon_tile(symbol=QApplication.style().standardIcon(symbol))
        return icon

    # -- entries -------------------------------------------------------------------
    def add(self, source: Path | LoadedImage, name: str) -> QueueEntry:
        entry = QueueEntry(self._next_id, source, name)
        self._next_id += 1
        row = len(self._rows)
        self.beginInsertRows(QModelIndex(), row, row)
        self._rows.append(entry)
        self._by_id[entry.item_id] = entry
        self.endInsertRows()
        return entry

    def remove(self, entry: QueueEntry) -> None:
        if entry is self.current:
            self.current = None
        row = self._rows.index(entry)
        self.beginRemoveRows(QModelIndex(), row, row)
        del self._rows[row]
        self._by_id.pop(entry.item_id, None)
        self._loaded.pop(entry.item_id, None)
        self._icons.pop(entry.item_id, None)
        self.endRemoveRows()

    def clear(self) -> None:
        self.current = None
        self.beginResetModel()
        self._rows.clear()
        self._by_id.clear()
        self._loaded.clear()
        self._icons.clear()
        self.endResetModel()

    def get(self, item_id: int | None) -> QueueEntry | None:
        return self._by_id.get(item_id) if item_id is not None else None

    def entries(self) -> list[QueueEntry]:
        return list(self._rows)

    def at(self, row: int) -> QueueEntry | None:
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def index_of(self, entry: QueueEntry) -> QModelIndex:
        return self.index(self._rows.index(entry), 0)

    def __len__(self) -> int:
        return len(self._rows)

    def changed(self, entry: QueueEntry) -> None:
        """Tell the view that ``entry``'s status, text or icon changed."""
        if entry.item_id in self._by_id:
            index = self.index_of(entry)
            self.dataChanged.emit(index, index)

    # -- the memory policy -----------------------------------------------------------
    def keep_loaded(self, entry: QueueEntry) -> None:
        """Mark ``entry``'s result as the most recently used; drop the oldest over budget.

        A dropped entry keeps its thumbnail, its status and the user's edits: only the
        full-size arrays and images go, and :attr:`QueueEntry.unloaded` says so.
        """
        self._loaded.pop(entry.item_id, None)
        if entry.processed is not None:
            self._loaded[entry.item_id] = None
        held = sum(e.pixels() for i in self._loaded if (e := self._by_id.get(i)) is not None)
        for item_id in list(self._loaded):
            if held <= RESULT_CACHE_PIXELS:
                break
            old = self._by_id.get(item_id)
            if old is None or old is self.current or old is entry:
                continue
            held -= old.pixels()
            old.cutout.unload()
            old.comparison.unload()
            del self._loaded[item_id]

    def forget_result(self, entry: QueueEntry) -> None:
        """Drop ``entry``'s results (they no longer match what it would show)."""
        entry.cutout.unload()
        entry.comparison.unload()
        self._loaded.pop(entry.item_id, None)
