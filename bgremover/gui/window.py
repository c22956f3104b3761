"""The main window: queue, viewer, comparison view, settings, batch."""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from PySide6.QtCore import QEvent, QSize, Qt, QThread, Signal
from PySide6.QtGui import QAction, QGuiApplication, QIcon, QImage, QKeySequence, QPixmap
from PySide6.QtWidgets import (
    QApplication,
    QButtonGroup,
    QCheckBox,
    QColorDialog,
    QComboBox,
    QDockWidget,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QProgressDialog,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .. import __version__
from ..compose import ComposeOptions, compose, parse_color
from ..errors import BgRemoverError
from ..imaging import IMAGE_EXTENSIONS, from_array, walk_images
from ..models import REGISTRY, ModelStore
from ..output import write_output
from ..session import available_providers
from .compare import ComparisonView
from .dialogs import BatchDialog, show_error
from .imageconv import qimage_to_rgba, to_qimage
from .settings import Settings, load_settings, save_settings
from .views import ImageView
from .worker import (
    BatchRequest,
    Compared,
    CompareRequest,
    Processed,
    ProcessRequest,
    Worker,
)

log = logging.getLogger(__name__)

QUEUED, PROCESSING, DONE, FAILED = "queued", "processing", "done", "failed"
VIEW_MODES = ("original", "cutout", "mask")


@dataclass
class QueueEntry:
    """One image in the queue and everything known about it."""

    item_id: int
    source: object  # Path, or a LoadedImage for pasted images
    name: str
    status: str = QUEUED
    error: str = ""
    processed: Processed | None = None
    compared: Compared | None = None
    compare_pending: bool = False
    compare_error: str = ""
    #: Its row in the queue list (results arrive by id; no search through the list).
    item: QListWidgetItem | None = None
    #: The list icon, kept when the full-size result is dropped from memory.
    thumb: QImage | None = None
    #: A one-line description of the result (size, model, inference time).
    summary: str = ""

    @property
    def unloaded(self) -> bool:
        """Done, but its full-size result was dropped to bound memory: made again on display."""
        return self.status == DONE and self.processed is None

    def pixels(self) -> int:
        """Pixels of full-size data held (a comparison holds two results)."""
        if self.processed is None:
            return 0
        h, w = self.processed.result.image.rgb.shape[:2]
        return h * w * (3 if self.compared is not None else 1)


#: Full-size results (colour, masks and their display images: about 15 bytes a pixel)
#: kept in memory for the queue, in pixels: two 12-megapixel photos or twelve of 2 MP.
#: Older ones keep their thumbnail and are made again when shown, so a folder of hundreds
#: of camera photos does not fill the memory (measured: 12 camera photos took 2.5 GB
#: before, 1.1 GB with this; 36 take 1.2 GB). The image on screen always stays.
RESULT_CACHE_PIXELS = 25_000_000


class MainWindow(QMainWindow):
    submit = Signal(object)  # a request for the worker thread
    #: Emitted when every queued image (and a requested comparison) has finished.
    settled = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("bgremover")
        self.setAcceptDrops(True)
        self.settings: Settings = load_settings()
        self.entries: dict[int, QueueEntry] = {}
        #: Ids of entries whose full-size result is in memory, least recently used first.
        self._loaded: dict[int, None] = {}
        self._ids = itertools.count(1)
        self._paste_count = itertools.count(1)
        self.view_mode = "cutout"
        self._progress_dialog: QProgressDialog | None = None
        self._batch_dialog: BatchDialog | None = None
        self._busy = False

        self._start_worker()
        self._build_central()
        self._build_settings_dock()
        self._build_actions()
        self._update_enabled()
        self.resize(1280, 800)

    # ------------------------------------------------------------------ worker
    def _start_worker(self) -> None:
        self.thread_ = QThread(self)
        self.thread_.setObjectName("bgremover-worker")
        self.worker = Worker()
        self.worker.moveToThread(self.thread_)
        self.submit.connect(self.worker.handle)
        self.worker.started.connect(self._on_started)
        self.worker.processed.connect(self._on_processed)
        self.worker.failed.connect(self._on_failed)
        self.worker.compared.connect(self._on_compared)
        self.worker.preparing.connect(self._on_preparing)
        self.worker.sessionInfo.connect(self._on_session_info)
        self.worker.busy.connect(self._on_busy)
        self.thread_.finished.connect(self.worker.deleteLater)
        self.thread_.start()

    def closeEvent(self, event) -> None:
        # Stop between images, let the current one finish writing, then leave.
        self.worker.cancel()
        self.thread_.quit()
        self.thread_.wait()
        save_settings(self.settings)
        # Drop the results (and their QImages) while Qt is still fully alive,
        # rather than leaving them to garbage collection at interpreter exit.
        self.entries.clear()
        self._loaded.clear()
        self.queue.clear()
        self.compare.clear()
        super().closeEvent(event)

    # ------------------------------------------------------------------ layout
    def _build_central(self) -> None:
        self.queue = QListWidget()
        self.queue.setIconSize(QSize(56, 56))
        self.queue.setMinimumWidth(220)
        self.queue.currentItemChanged.connect(lambda *_: self._show_current())
        self.detail = QLabel("Drop images or folders here, or use File ▸ Open.")
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        left = QWidget()
        lay = QVBoxLayout(left)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(QLabel("Queue"))
        lay.addWidget(self.queue, 1)
        lay.addWidget(self.detail)

        self.viewer = ImageView()
        self.mode_buttons = QButtonGroup(self)
        bar = QHBoxLayout()
        for i, mode in enumerate(VIEW_MODES):
            button = QToolButton()
            button.setText(mode.capitalize())
            button.setCheckable(True)
            button.setChecked(mode == self.view_mode)
            button.setToolTip(f"Show the {mode} ({i + 1})")
            self.mode_buttons.addButton(button, i)
            bar.addWidget(button)
        self.mode_buttons.idClicked.connect(lambda i: self.set_view_mode(VIEW_MODES[i]))
        bar.addStretch(1)
        for text, slot, tip in (
            ("Fit", lambda: self.viewer.fit(), "Ctrl+0"),
            ("100 %", lambda: self.viewer.actual_size(), "Ctrl+1"),
        ):
            button = QToolButton()
            button.setText(text)
            button.setToolTip(tip)
            button.clicked.connect(slot)
            bar.addWidget(button)
        viewer_page = QWidget()
        vl = QVBoxLayout(viewer_page)
        vl.setContentsMargins(0, 0, 0, 0)
        vl.addLayout(bar)
        vl.addWidget(self.viewer, 1)

        self.compare = ComparisonView()
        self.tabs = QTabWidget()
        self.tabs.addTab(viewer_page, "Result")
        self.tabs.addTab(self.compare, "Compare fp32 | int8")
        self.tabs.currentChanged.connect(lambda *_: self._show_current())

        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(self.tabs)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([260, 1000])
        self.setCentralWidget(splitter)
        self.provider_label = QLabel("")
        self.statusBar().addPermanentWidget(self.provider_label)

    def _build_settings_dock(self) -> None:
        s = self.settings
        self.model_box = QComboBox()
        store = ModelStore()
        for name, spec in REGISTRY.items():
            cached = store.cached_path(spec) is not None
            self.model_box.addItem(
                f"{name}{'' if cached else '  (download ' + f'{spec.bytes / 1e6:.0f} MB)'}", name
            )
            self.model_box.setItemData(
                self.model_box.count() - 1, spec.description, Qt.ItemDataRole.ToolTipRole
            )
        if s.model not in REGISTRY and Path(s.model).is_file():
            self.model_box.addItem(Path(s.model).name, s.model)
        self._select(self.model_box, s.model)
        self.precision_box = QComboBox()
        self.precision_box.addItem("fp32 (exact)", "fp32")
        self.precision_box.addItem("int8 (faster; see Compare)", "int8")
        self._select(self.precision_box, s.precision)
        self.provider_box = QComboBox()
        self.provider_box.addItem("Auto", "auto")
        for name in available_providers():
            self.provider_box.addItem(name.replace("ExecutionProvider", ""), name)
        self._select(self.provider_box, s.providers)
        self.threads_box = QSpinBox()
        self.threads_box.setRange(0, 64)
        self.threads_box.setSpecialValueText("automatic")
        self.threads_box.setValue(s.threads)
        self.format_box = QComboBox()
        self.format_box.addItem("PNG", "png")
        self.format_box.addItem("WebP", "webp")
        self._select(self.format_box, s.output_format)
        self.background_button = QPushButton()
        self.background_button.clicked.connect(self._choose_background)
        self.clear_background = QToolButton()
        self.clear_background.setText("Transparent")
        self.clear_background.clicked.connect(lambda: self._apply(background=""))
        self.mask_only_box = QCheckBox("Mask only")
        self.mask_only_box.setChecked(s.mask_only)
        self.refine_box = QCheckBox("Refine edges")
        self.refine_box.setToolTip(
            "Sharpen the mask's edges with the photo's colours (about 10-50 ms). Off gives "
            "the network's mask exactly as rembg computes it."
        )
        self.refine_box.setChecked(s.refine)
        self.decontaminate_box = QCheckBox("Decontaminate colours")
        self.decontaminate_box.setToolTip(
            "When saving: re-estimate the subject's colours in see-through hair so no tint of "
            "the old background remains on a new one (slower)."
        )
        self.decontaminate_box.setChecked(s.decontaminate)
        self._paint_background_button()

        bg_row = QWidget()
        bl = QHBoxLayout(bg_row)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(self.background_button, 1)
        bl.addWidget(self.clear_background)
        form = QFormLayout()
        form.addRow("Model:", self.model_box)
        form.addRow("Precision:", self.precision_box)
        form.addRow("Provider:", self.provider_box)
        form.addRow("Threads:", self.threads_box)
        form.addRow("Output format:", self.format_box)
        form.addRow("Background:", bg_row)
        form.addRow("", self.refine_box)
        form.addRow("", self.decontaminate_box)
        form.addRow("", self.mask_only_box)
        self.fallback_label = QLabel("")
        self.fallback_label.setWordWrap(True)
        form.addRow(self.fallback_label)
        panel = QWidget()
        panel.setLayout(form)
        panel.setMaximumWidth(340)
        dock = QDockWidget("Settings", self)
        dock.setObjectName("settings")
        dock.setWidget(panel)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)

        self.model_box.currentIndexChanged.connect(
            lambda: self._apply(model=self.model_box.currentData())
        )
        self.precision_box.currentIndexChanged.connect(
            lambda: self._apply(precision=self.precision_box.currentData())
        )
        self.provider_box.currentIndexChanged.connect(
            lambda: self._apply(providers=self.provider_box.currentData())
        )
        self.threads_box.valueChanged.connect(lambda v: self._apply(threads=v))
        self.format_box.currentIndexChanged.connect(
            lambda: self._apply(output_format=self.format_box.currentData())
        )
        self.mask_only_box.toggled.connect(lambda v: self._apply(mask_only=v))
        self.refine_box.toggled.connect(lambda v: self._apply(refine=v))
        self.decontaminate_box.toggled.connect(lambda v: self._apply(decontaminate=v))

    @staticmethod
    def _select(box: QComboBox, value: str) -> None:
        index = box.findData(value)
        box.setCurrentIndex(max(index, 0))

    def _apply(self, **changes) -> None:
        engine_before = self.settings.engine()
        self.settings = replace(self.settings, **changes)
        save_settings(self.settings)
        self._paint_background_button()
        if self.settings.engine() != engine_before:
            self.statusBar().showMessage("Settings changed: Reprocess (Ctrl+R) applies them.", 5000)
            for entry in self.entries.values():
                entry.compared = None
            self._show_current()

    def _paint_background_button(self) -> None:
        bg = self.settings.background
        self.background_button.setText(bg or "none (transparent)")
        self.background_button.setStyleSheet(f"background: {bg};" if bg else "")

    def _choose_background(self) -> None:
        from PySide6.QtGui import QColor

        start = QColor(self.settings.background or "#ffffff")
        color = QColorDialog.getColor(
            start, self, "Background colour", QColorDialog.ColorDialogOption.ShowAlphaChannel
        )
        if color.isValid():
            self._apply(
                background=color.name(
                    QColor.NameFormat.HexArgb if color.alpha() < 255 else QColor.NameFormat.HexRgb
                )
            )

    def _build_actions(self) -> None:
        def action(text, shortcut, slot, menu, tip=""):
            a = QAction(text, self)
            if shortcut:
                a.setShortcut(QKeySequence(shortcut))
            a.setStatusTip(tip or text.replace("…", ""))
            a.triggered.connect(slot)
            menu.addAction(a)
            return a

        file_menu = self.menuBar().addMenu("&File")
        self.act_open = action(
            "&Open Images…", QKeySequence.StandardKey.Open, self.open_files, file_menu
        )
        self.act_open_folder = action("Open &Folder…", "Ctrl+Shift+O", self.open_folder, file_menu)
        self.act_paste = action(
            "&Paste Image", QKeySequence.StandardKey.Paste, self.paste, file_menu
        )
        file_menu.addSeparator()
        self.act_save = action(
            "&Save Cutout…", QKeySequence.StandardKey.Save, self.save_cutout, file_menu
        )
        self.act_save_mask = action("Save &Mask…", "Ctrl+Shift+S", self.save_mask, file_menu)
        self.act_copy = action(
            "&Copy Cutout", QKeySequence.StandardKey.Copy, self.copy_cutout, file_menu
        )
        file_menu.addSeparator()
        self.act_batch = action("&Batch Folder…", "Ctrl+B", self.open_batch, file_menu)
        self.act_model_file = action("Use a Model &File…", "", self.choose_model_file, file_menu)
        file_menu.addSeparator()
        action("&Quit", QKeySequence.StandardKey.Quit, self.close, file_menu)

        edit_menu = self.menuBar().addMenu("&Edit")
        self.act_reprocess = action(
            "&Reprocess with Current Settings", "Ctrl+R", self.reprocess, edit_menu
        )
        self.act_remove = action(
            "Remove from &Queue", QKeySequence.StandardKey.Delete, self.remove_selected, edit_menu
        )
        self.act_clear = action("C&lear Queue", "Ctrl+Shift+Del", self.clear_queue, edit_menu)

        view_menu = self.menuBar().addMenu("&View")
        for i, mode in enumerate(VIEW_MODES):
            action(
                mode.capitalize(),
                str(i + 1),
                lambda _=False, m=mode: self.set_view_mode(m),
                view_menu,
            )
        view_menu.addSeparator()
        action("Zoom &In", QKeySequence.StandardKey.ZoomIn, lambda: self._zoom(1.25), view_menu)
        action("Zoom &Out", QKeySequence.StandardKey.ZoomOut, lambda: self._zoom(0.8), view_menu)
        action("&Fit", "Ctrl+0", lambda: self._current_view().fit(), view_menu)
        action(
            "&Actual Size (100 %)", "Ctrl+1", lambda: self._current_view().actual_size(), view_menu
        )
        view_menu.addSeparator()
        action(
            "&Compare fp32 | int8",
            "Ctrl+K",
            lambda: self.tabs.setCurrentWidget(self.compare),
            view_menu,
        )
        action("&Result", "Ctrl+J", lambda: self.tabs.setCurrentIndex(0), view_menu)

        help_menu = self.menuBar().addMenu("&Help")
        action("&About bgremover", "", self._about, help_menu)

    def _current_view(self) -> ImageView:
        return self.compare.fp32_view if self.tabs.currentWidget() is self.compare else self.viewer

    def _zoom(self, step: float) -> None:
        self._current_view().zoom_by(step)

    def _about(self) -> None:
        show_error(
            self,
            "About bgremover",
            f"bgremover {__version__}\nBackground removal with U²-Net models through "
            "ONNX Runtime, offline. Models: Apache-2.0 (U²-Net / DIS).",
        )

    # ------------------------------------------------------------------ input
    def add_paths(self, paths: list[Path]) -> int:
        """Queue image files; folders are walked. Returns how many images were added."""
        added = 0
        for path in paths:
            files = walk_images(path) if path.is_dir() else [path]
            for f in files:  # a file named explicitly is tried even if its name is odd
                self._enqueue(f, f.name)
                added += 1
        if added:
            self.statusBar().showMessage(f"Added {added} image(s).", 4000)
        return added

    def _enqueue(self, source: object, name: str) -> QueueEntry:
        entry = QueueEntry(next(self._ids), source, name)
        self.entries[entry.item_id] = entry
        item = QListWidgetItem(name)
        item.setData(Qt.ItemDataRole.UserRole, entry.item_id)
        entry.item = item
        self.queue.addItem(item)
        self._paint_item(entry)
        self.submit.emit(ProcessRequest(entry.item_id, source, self.settings.engine()))
        if self.queue.currentItem() is None:
            self.queue.setCurrentItem(item)
        self._update_enabled()
        return entry

    def open_files(self) -> None:
        patterns = " ".join(f"*{e}" for e in sorted(IMAGE_EXTENSIONS))
        files, _ = QFileDialog.getOpenFileNames(
            self, "Open images", self.settings.last_folder, f"Images ({patterns});;All files (*)"
        )
        if files:
            self._apply(last_folder=str(Path(files[0]).parent))
            self.add_paths([Path(f) for f in files])

    def open_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Open a folder of images", self.settings.last_folder
        )
        if folder:
            self._apply(last_folder=folder)
            if not self.add_paths([Path(folder)]):
                self.statusBar().showMessage(f"No images found in {folder}.", 6000)

    def paste(self) -> None:
        data = QGuiApplication.clipboard().mimeData()
        if data is not None and data.hasUrls() and any(u.isLocalFile() for u in data.urls()):
            self.add_paths([Path(u.toLocalFile()) for u in data.urls() if u.isLocalFile()])
            return
        image = QGuiApplication.clipboard().image()
        if image.isNull():
            self.statusBar().showMessage("The clipboard holds no image.", 4000)
            return
        n = next(self._paste_count)
        loaded = from_array(qimage_to_rgba(image), f"Pasted image {n}")
        self._enqueue(loaded, f"Pasted image {n}")

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls() or event.mimeData().hasImage():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        data = event.mimeData()
        paths = [Path(u.toLocalFile()) for u in data.urls() if u.isLocalFile()]
        if paths:
            self.add_paths(paths)
        elif data.hasImage():
            image = QImage(data.imageData())
            n = next(self._paste_count)
            self._enqueue(
                from_array(qimage_to_rgba(image), f"Dropped image {n}"), f"Dropped image {n}"
            )
        event.acceptProposedAction()

    def choose_model_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Choose an ONNX model", "", "ONNX models (*.onnx)"
        )
        if path:
            if self.model_box.findData(path) < 0:
                self.model_box.addItem(Path(path).name, path)
            self._select(self.model_box, path)

    # ------------------------------------------------------------------ queue
    def current_entry(self) -> QueueEntry | None:
        item = self.queue.currentItem()
        return self.entries.get(item.data(Qt.ItemDataRole.UserRole)) if item else None

    def _paint_item(self, entry: QueueEntry) -> None:
        item = entry.item
        if item is None:
            return
        item.setText(f"{entry.name}\n{entry.status}")
        item.setToolTip(entry.error or f"{entry.name}: {entry.status}")
        if entry.thumb is not None:
            item.setIcon(QIcon(QPixmap.fromImage(entry.thumb)))
        elif entry.status == FAILED:
            item.setIcon(
                self.style().standardIcon(self.style().StandardPixmap.SP_MessageBoxWarning)
            )

    def remove_selected(self) -> None:
        entry = self.current_entry()
        if entry is None:
            return
        self.queue.takeItem(self.queue.currentRow())
        self.entries.pop(entry.item_id, None)
        self._loaded.pop(entry.item_id, None)
        entry.item = None
        self._show_current()
        self._update_enabled()

    def clear_queue(self) -> None:
        self.queue.clear()
        self.entries.clear()
        self._loaded.clear()
        self._show_current()
        self._update_enabled()

    def _keep_loaded(self, entry: QueueEntry) -> None:
        """Mark ``entry``'s result as the most recently used; drop the oldest over budget."""
        self._loaded.pop(entry.item_id, None)
        if entry.processed is not None:
            self._loaded[entry.item_id] = None
        current = self.current_entry()
        held = sum(e.pixels() for i in self._loaded if (e := self.entries.get(i)) is not None)
        for item_id in list(self._loaded):
            if held <= RESULT_CACHE_PIXELS:
                break
            old = self.entries.get(item_id)
            if old is None or old is current or old is entry:
                continue
            held -= old.pixels()
            old.processed, old.compared = None, None
            del self._loaded[item_id]

    def _reload(self, entry: QueueEntry) -> None:
        """Make a dropped result again (same engine settings as the queue now has)."""
        entry.status = QUEUED
        self._paint_item(entry)
        self.submit.emit(ProcessRequest(entry.item_id, entry.source, self.settings.engine()))

    def reprocess(self) -> None:
        for entry in self.entries.values():
            entry.status, entry.error, entry.compared = QUEUED, "", None
            self._paint_item(entry)
            self.submit.emit(ProcessRequest(entry.item_id, entry.source, self.settings.engine()))
        self._show_current()

    # ------------------------------------------------------------------ worker signals
    def _on_started(self, item_id: int) -> None:
        entry = self.entries.get(item_id)
        if entry is not None and entry.status != DONE:
            entry.status = PROCESSING
            self._paint_item(entry)

    def _on_processed(self, p: Processed) -> None:
        entry = self.entries.get(p.item_id)
        if entry is None:
            return
        entry.status, entry.error, entry.processed = DONE, "", p
        entry.thumb = p.thumb
        rgb = p.result.image.rgb
        t = p.result.timings
        entry.summary = (
            f"{entry.name}: {rgb.shape[1]}×{rgb.shape[0]}, {p.result.model} "
            f"{p.result.precision}, inference {1000 * t['infer']:.0f} ms"
        )
        self._keep_loaded(entry)
        self._paint_item(entry)
        if entry is self.current_entry():
            self._show_current()
        self._update_enabled()
        self._check_settled()

    def _on_failed(self, item_id: int, message: str, details: str) -> None:
        entry = self.entries.get(item_id)
        if entry is not None and entry.compare_pending:
            entry.compare_pending = False
            entry.compare_error = message
            self.statusBar().showMessage(f"Comparison failed: {message}", 10000)
        elif entry is not None:
            entry.status, entry.error = FAILED, message
            self._paint_item(entry)
        if details or entry is None or "model" in message.lower():
            show_error(self, "bgremover", message, details)
        if entry is not None and entry is self.current_entry():
            self._show_current()
        self._check_settled()

    def _on_compared(self, c: Compared) -> None:
        entry = self.entries.get(c.item_id)
        if entry is None:
            return
        entry.compared, entry.compare_pending = c, False
        if entry.processed is not None:
            self._keep_loaded(entry)
        if entry is self.current_entry():
            self._show_current()
        self._check_settled()

    def _on_session_info(self, precision: str, info) -> None:
        self.provider_label.setText(
            f"{precision}: {', '.join(p.replace('ExecutionProvider', '') for p in info.active)}"
        )
        self.fallback_label.setText("\n".join(f"Fallback — {r}" for r in info.fallbacks))

    def _on_busy(self, busy: bool) -> None:
        self._busy = busy
        if not busy and self._progress_dialog is not None:
            self._progress_dialog.close()
            self._progress_dialog = None

    def _on_preparing(self, model: str, task: str, done: int, total: int) -> None:
        if not task:
            if self._progress_dialog is not None:
                self._progress_dialog.close()
                self._progress_dialog = None
            return
        if self._progress_dialog is None:
            dialog = QProgressDialog(self)
            dialog.setWindowTitle("Preparing the model")
            dialog.setCancelButtonText("Cancel")
            dialog.setMinimumDuration(300)
            dialog.canceled.connect(self.worker.cancel, Qt.ConnectionType.DirectConnection)
            self._progress_dialog = dialog
        d = self._progress_dialog
        if task == "download":
            d.setLabelText(
                f"Downloading {model}… {done / 1e6:.1f}"
                + (f" / {total / 1e6:.1f} MB" if total > 0 else " MB")
            )
            d.setRange(0, max(total, 0) // 1024 if total > 0 else 0)
            d.setValue(done // 1024 if total > 0 else 0)
        else:
            d.setLabelText(f"Making the int8 version of {model} (done once, then cached)…")
            d.setRange(0, max(total, 1))
            d.setValue(done)

    def _check_settled(self) -> None:
        if any(
            e.status in (QUEUED, PROCESSING) or e.compare_pending for e in self.entries.values()
        ):
            return
        self.settled.emit()

    # ------------------------------------------------------------------ display
    def set_view_mode(self, mode: str) -> None:
        self.view_mode = mode
        self.mode_buttons.button(VIEW_MODES.index(mode)).setChecked(True)
        self.tabs.setCurrentIndex(0)
        self._show_current()

    def _show_current(self) -> None:
        entry = self.current_entry()
        self._update_enabled()
        if entry is None:
            self.viewer.set_image(None)
            self.compare.clear()
            self.detail.setText("Drop images or folders here, or use File ▸ Open.")
            return
        if entry.status == FAILED:
            self.detail.setText(f"Failed: {entry.error}")
        else:
            self.detail.setText(f"{entry.name}: {entry.status}")
        if entry.unloaded:
            self._reload(entry)
            self.detail.setText(f"{entry.name}: loading…")
        p = entry.processed
        if p is not None:
            self._keep_loaded(entry)
            image = {"original": p.original, "cutout": p.cutout, "mask": p.mask}[self.view_mode]
            self.viewer.set_image(image)
            self.detail.setText(entry.summary)
        else:
            self.viewer.set_image(None)
        if self.tabs.currentWidget() is self.compare:
            if entry.compared is not None:
                self.compare.set_result(entry.compared)
            else:
                self.compare.clear()
                if entry.compare_error:
                    self.compare.placeholder.setText(
                        f"The comparison failed: {entry.compare_error}"
                    )
                elif entry.status != FAILED and not entry.compare_pending:
                    entry.compare_pending = True
                    self.submit.emit(
                        CompareRequest(entry.item_id, entry.source, self.settings.engine())
                    )
                    self.compare.placeholder.setText("Comparing fp32 and int8…")

    def _update_enabled(self) -> None:
        entry = self.current_entry()
        has_result = entry is not None and entry.processed is not None
        for a in (self.act_save, self.act_save_mask, self.act_copy):
            a.setEnabled(has_result)
        self.act_remove.setEnabled(entry is not None)
        self.act_clear.setEnabled(bool(self.entries))
        self.act_reprocess.setEnabled(bool(self.entries))

    # ------------------------------------------------------------------ output
    def _compose_options(self, mask_only: bool | None = None) -> ComposeOptions:
        bg = self.settings.background
        return ComposeOptions(
            mask_only=self.settings.mask_only if mask_only is None else mask_only,
            background=parse_color(bg) if bg else None,
            decontaminate=self.settings.decontaminate,
        )

    def _save(self, mask_only: bool) -> None:
        entry = self.current_entry()
        if entry is None or entry.processed is None:
            return
        fmt = self.settings.output_format
        stem = Path(entry.name).stem + ("_mask" if mask_only else "")
        folder = self.settings.last_output_folder or self.settings.last_folder
        path, _ = QFileDialog.getSaveFileName(
            self,
            "Save mask" if mask_only else "Save cutout",
            str(Path(folder) / f"{stem}.{fmt}"),
            "PNG image (*.png);;WebP image (*.webp)"
            if fmt == "png"
            else "WebP image (*.webp);;PNG image (*.png)",
        )
        if path:
            self.save_result(entry, Path(path), mask_only)

    def save_result(self, entry: QueueEntry, path: Path, mask_only: bool = False) -> bool:
        """Write the entry's output (atomically); errors become a dialog."""
        fmt = path.suffix.lower().lstrip(".")
        if fmt not in ("png", "webp"):
            fmt = self.settings.output_format
            path = path.with_suffix(f".{fmt}")
        if isinstance(entry.source, Path) and path.resolve() == entry.source.resolve():
            show_error(self, "Not saved", f"{path} is the original photo; choose another name.")
            return False
        assert entry.processed is not None
        r = entry.processed.result
        try:
            write_output(r.image.rgb, r.alpha, self._compose_options(mask_only), path, fmt)
        except BgRemoverError as exc:
            show_error(self, "Could not save", str(exc))
            return False
        self._apply(last_output_folder=str(path.parent))
        self.statusBar().showMessage(f"Saved {path}", 5000)
        return True

    def save_cutout(self) -> None:
        self._save(mask_only=False)

    def save_mask(self) -> None:
        self._save(mask_only=True)

    def copy_cutout(self) -> None:
        entry = self.current_entry()
        if entry is None or entry.processed is None:
            return
        r = entry.processed.result
        img = np.asarray(compose(r.image.rgb, r.alpha, self._compose_options()))
        QGuiApplication.clipboard().setImage(to_qimage(img))
        self.statusBar().showMessage("Cutout copied to the clipboard.", 4000)

    # ------------------------------------------------------------------ batch
    def open_batch(self, folder: Path | None = None) -> BatchDialog:
        if self._batch_dialog is None:
            dialog = BatchDialog(
                self, str(folder or self.settings.last_folder), self.settings.last_output_folder
            )
            dialog.startRequested.connect(self.start_batch)
            dialog.cancelRequested.connect(self.worker.cancel, Qt.ConnectionType.DirectConnection)
            self.worker.batchProgress.connect(dialog.on_progress)
            self._batch_dialog = dialog
        elif folder is not None:
            self._batch_dialog.input_edit.setText(str(folder))
        self._batch_dialog.show()
        self._batch_dialog.raise_()
        return self._batch_dialog

    def start_batch(self, src: Path, dst: Path, overwrite: bool) -> None:
        self._apply(last_folder=str(src), last_output_folder=str(dst))
        try:
            options = self._compose_options()
        except BgRemoverError as exc:
            show_error(self, "Batch not started", str(exc))
            return
        assert self._batch_dialog is not None
        self._batch_dialog.set_running(True)
        self._batch_dialog.status.setText("Starting…")
        self.submit.emit(
            BatchRequest(
                (src,), dst, self.settings.engine(), options, self.settings.output_format, overwrite
            )
        )


class Application(QApplication):
    """The app object; turns the macOS "open this file" events into a signal."""

    fileOpened = Signal(Path)

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.FileOpen:
            self.fileOpened.emit(Path(event.file()))
            return True
        return super().event(event)


def application() -> QApplication:
    app = QApplication.instance() or Application([])
    app.setApplicationName("bgremover")
    app.setOrganizationName("bgremover")
    app.setApplicationVersion(__version__)
    app.setWindowIcon(QIcon(str(Path(__file__).with_name("icon.png"))))
    return app  # type: ignore[return-value]
