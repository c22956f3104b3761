"""The queue as a model: its images, each one's status and results, and the memory policy.

:class:`QueueModel` is a Qt list model, so the queue's list view draws it and
every change to an entry reaches the view through one call, :meth:`QueueModel.changed`.
The model holds no widgets and starts no work: the main window decides what to
run, the model remembers what is known.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field
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

from ..edit import Edits, Operation
from ..imaging import LoadedImage
from .results import Compared, Processed

#: What the queue's row and the detail pane add for an image the user has edited.
EDITED_MARK = "✎ edited"
#: What the queue's row adds for a result made with a model or precision changed since.
OUT_OF_DATE_MARK = "out of date"


@dataclass(frozen=True)
class EditRequest:
    """One of the user's edit actions waiting to be applied: "apply" ``op``, "undo", or
    "redo" (``op`` is the operation redone)."""

    action: str
    op: Operation | None = None


class Status(enum.Enum):
    """Where an image is; the value is what the queue shows."""

    QUEUED = "queued"
    PROCESSING = "processing"
    DONE = "done"
    FAILED = "failed"
    #: Its job was cancelled (the model download, say): nothing ran, nothing failed.
    STOPPED = "not processed"


@dataclass(eq=False)
class QueueEntry:
    """One image in the queue and everything known about it."""

    item_id: int
    #: A file, or a pasted or dropped image.
    source: Path | LoadedImage
    name: str
    status: Status = Status.QUEUED
    #: Why it failed, or why it was not processed.
    error: str = ""
    processed: Processed | None = None
    compared: Compared | None = None
    #: The engine jobs making its result and its comparison, while they run.
    job: int | None = None
    compare_job: int | None = None
    #: The output-thread job bringing its result up to new settings (refine, look).
    restage_job: int | None = None
    #: The settings (config, options, format) a restage failed for: not tried again
    #: until the settings change (the user was told once).
    restage_failed: tuple | None = None
    compare_error: str = ""
    compare_cancelled: bool = False
    #: The list icon, kept when the full-size result is dropped from memory.
    thumb: QImage | None = None
    #: The user's corrections to the mask, in effect (undone ones left out), in the
    #: photo's full-size pixels: what the user asked for, including requests still being
    #: applied. Small, and never dropped by the memory policy: a remade result gets them
    #: back, and a change of model or refinement replays them on the new mask.
    edits: Edits | None = None
    #: Operations undone, the last undone last: what Redo applies again.
    redo: list[Operation] = field(default_factory=list)
    #: Edit requests not yet applied, oldest first, and the job applying one (an
    #: image's edits run strictly one after another; see QueueJobs.edit).
    edit_queue: deque[EditRequest] = field(default_factory=deque)
    edit_job: int | None = None
    #: Where it was last saved, and the settings (EngineConfig, ComposeOptions) and edits
    #: of the result saved then: a result remade alike (after its memory was freed) stays
    #: saved.
    saved_to: Path | None = None
    saved_with: tuple[Any, Any, Edits | None] | None = None
    #: The model settings (an EngineConfig without refinement) its result was made with,
    #: kept when the result is dropped from memory; None before a result.
    made_with: Any = None
    #: Done with other model settings than the current ones: made again when shown or
    #: saved, and the row says so until then.
    out_of_date: bool = False

    @property
    def edited(self) -> bool:
        """The user has edits in effect on this image (a Reset since undoes them)."""
        return self.edit_count > 0

    @property
    def edit_count(self) -> int:
        """The edits in effect: those since the last Reset (which is not one)."""
        return len(self.edits.effective().operations) if self.edits else 0

    @property
    def unsaved(self) -> bool:
        """It has a result (or edits) not saved as it is now: quitting would lose it."""
        if self.status is not Status.DONE and not self.edits:
            return False
        if self.saved_to is None or self.saved_with is None:
            return True
        if (self.edits or None) != self.saved_with[2]:
            return True
        p = self.processed
        return p is not None and (p.config, p.options) != self.saved_with[:2]

    @property
    def unloaded(self) -> bool:
        """Done, but its full-size result was dropped to bound memory: made again on display."""
        return self.status is Status.DONE and self.processed is None

    @property
    def summary(self) -> str:
        """One line about the result: size, model, precision, inference time."""
        if self.processed is None:
            return ""
        r = self.processed.result
        h, w = r.mask.shape
        text = (
            f"{self.name}: {w}×{h}, {r.model} {r.precision}, "
            f"inference {1000 * r.timings['infer']:.0f} ms"
        )
        if self.edited:
            count = self.edit_count
            text += f", {EDITED_MARK} ({count} edit{'s' if count != 1 else ''})"
        if r.guard is not None and r.guard.in_doubt:
            text += f"\n{r.guard.words()}"
        return text

    @property
    def stale(self) -> bool:
        """Done, with a model or precision that is no longer the setting."""
        return self.out_of_date and self.status is Status.DONE

    @property
    def status_text(self) -> str:
        """The status as the queue's row shows it, with the out-of-date and edited marks."""
        parts = [self.status.value]
        if self.stale:
            parts.append(OUT_OF_DATE_MARK)
        if self.edited:
            parts.append(EDITED_MARK)
        return " · ".join(parts)

    @property
    def stale_note(self) -> str:
        """For a result out of date: what it was made with, and when it is made again."""
        made = self.made_with
        if not self.stale or made is None:
            return ""
        return (
            f"Made with {Path(made.model).name} {made.precision}, which is no longer the "
            "setting: it is made again when you show or save it."
        )

    def pixels(self) -> int:
        """Pixels of full-size data held (a comparison holds two results)."""
        if self.processed is None:
            return 0
        h, w = self.processed.result.mask.shape
        return h * w * (3 if self.compared is not None else 1)


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
            note = entry.stale_note
            return f"{where}: {entry.status_text}" + (f"\n{note}" if note else "")
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
            old.processed, old.compared = None, None
            del self._loaded[item_id]

    def forget_result(self, entry: QueueEntry) -> None:
        """Drop ``entry``'s results (they no longer match what it would show)."""
        entry.processed = entry.compared = None
        self._loaded.pop(entry.item_id, None)
