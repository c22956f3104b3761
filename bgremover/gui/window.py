"""The main window: wiring between the queue, the views, the settings and the jobs.

What the app knows lives in the queue model (queue.py) and the settings; what
it does runs as jobs (jobs.py) on two threads: the engine thread (cut-outs,
comparisons, batches, model checks; it owns the ONNX Runtime sessions) and the
output thread (saving and copying, so a 12-megapixel PNG never freezes the
window). This class connects them: user actions become jobs, job ends update
the queue, and the display is redrawn from what the queue holds.

Touch-up (edit mode, E): the edit tools (editing.py) turn the mouse into
operations in the photo's pixels; each is recorded in the image's edits at once
and applied as a job, in order (QueueJobs.edit), and only the box it changed is
redrawn. Saves and copies wait for the edits asked for before them.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QAction, QActionGroup, QGuiApplication, QIcon, QImage, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QButtonGroup,
    QDockWidget,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .. import __version__
from ..atomic import write_atomically
from ..edit import Box, Operation, mask_from_image
from ..errors import (
    AmbiguousFamilyError,
    BgRemoverError,
    EditsError,
    ImageReadError,
    ModelError,
)
from ..imaging import IMAGE_EXTENSIONS, LoadedImage, from_array, open_image, walk_images
from ..models import DEFAULT_MODEL, REGISTRY, ModelStore
from ..output import FORMATS, format_for_path
from ..pipeline import EngineConfig, Result
from .compare import ComparisonView
from .dialogs import BatchDialog, ask_family, show_error
from .editing import SIZE_STEP, TOOLS, EditBar, EditTools, overlay_image, tool_tip
from .imageconv import qimage_to_rgba
from .jobs import Job, JobEnd, JobRunner, JobState
from .queue import EditRequest, QueueEntry, QueueModel, Status
from .queue_jobs import QueueJobs, compare_pair
from .queue_view import QueueView
from .results import BatchProgress, BatchRequest, Processed
from .save_many import SaveMany
from .settings import (
    Settings,
    forget_recent,
    load_settings,
    recent_paths,
    remember_recent,
    save_settings,
)
from .settings_panel import SettingsPanel
from .status import LogToStatusBar, PreparationBar
from .unsaved import SAVE_HINT, ask_before_losing, unsaved_words
from .views import DropZone, ImageView
from .wording import app_message, use_menus
from .worker import Worker, composed_image, save

log = logging.getLogger(__name__)

#: The Result view's modes: what Save writes (the output for the current settings:
#: cutout, on its background, or the mask), the photo, the mask.
VIEW_MODES = ("output", "original", "mask")
VIEW_LABELS = {"output": "Output", "original": "Original", "mask": "Mask"}
VIEW_TIPS = {
    "output": "What Save writes, with the current settings",
    "original": "The photo as it was opened",
    "mask": "The mask: white is kept, black removed",
}
#: Held down, shows the original in place of the output (before / after).
HOLD_ORIGINAL_KEY = Qt.Key.Key_Backslash
EMPTY_TEXT = "Nothing open yet."


def raised_buttons(bar: QToolBar) -> None:
    """Draw a tool bar's buttons as buttons (a tool bar draws them flat until pressed)."""
    for button in bar.findChildren(QToolButton):
        if button.objectName() != "qt_toolbar_ext_button":  # its ">>" stays flat
            button.setAutoRaise(False)


class MainWindow(QMainWindow):
    #: Emitted when every queued image (and a requested comparison) has finished.
    settled = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("bgremover")
        self.setAcceptDrops(True)
        self.settings: Settings = load_settings()
        self.store = ModelStore()
        self.queue = QueueModel(self)
        self.view_mode = "output"
        #: The original is shown while the before/after key or button is held.
        self._holding_original = False
        #: The current image was selected by adding it, not by the user's click: if it
        #: fails, the selection moves on to an image that can be shown.
        self._auto_selected = False
        #: Asked before anything drops unsaved results or edits (quitting, removing,
        #: clearing the queue); tests that close many windows answer it themselves.
        self.confirm_quit = True
        self._paste_count = 0
        #: Files opened by name, by queue item: remembered in Open Recent once their
        #: cutout is made (a file that fails is not offered again).
        self._recent_files: dict[int, str] = {}
        self._batch_dialog: BatchDialog | None = None
        self._batch_job: int | None = None
        #: Edit mode: the Result view's mouse is the edit tools' (see editing.py).
        self.edit_mode = False
        #: The overlay made for the result shown, reused while it is the same result.
        self._overlay_for: tuple[object, QImage] | None = None
        #: Per image id: what waits for its edits being applied (a save, a copy).
        self._after_edits: dict[int, list] = {}

        self.worker = Worker(self.store)
        self.engine = JobRunner("engine", self)
        self.output = JobRunner("output", self)
        self.jobs = QueueJobs(
            self.queue, self.worker, self.engine, self.output, lambda: self.settings
        )
        self.jobs.changed.connect(self._on_entry_changed)
        self.jobs.settled.connect(self.settled)
        self.jobs.failed.connect(self._report_failure)
        self.jobs.prepared.connect(self._on_model_prepared)
        self.jobs.edited.connect(self._on_edited)

        self._build_central()
        self._build_settings_dock()
        self._build_status_bar()
        # Save Selected / Save All: the folder, the job, its progress and its report.
        self.save_many = SaveMany(
            self,
            self.queue,
            self.worker,
            self.engine,
            self.jobs.prepare,
            lambda: self.settings,
            lambda folder: self._apply(last_output_folder=str(folder)),
        )
        self.save_many.changed.connect(lambda: (self._update_enabled(), self._update_title()))
        self._build_actions()
        self._forget_missing_model_file()
        self.compare.set_current_model(self.settings.model)
        self._show_current()  # the empty window: the drop zone
        QApplication.instance().installEventFilter(self)  # the before/after key, anywhere
        self.resize(1280, 800)

    # ------------------------------------------------------------------ layout
    def _build_central(self) -> None:
        self.queue_view = QueueView()
        self.queue_view.setModel(self.queue)
        self.queue_view.setMinimumWidth(160)
        self.queue_view.selectionModel().currentChanged.connect(lambda *_: self._on_selection())
        self.queue_view.selectionModel().selectionChanged.connect(lambda *_: self._update_enabled())
        self.detail = QLabel(EMPTY_TEXT)
        self.detail.setWordWrap(True)
        self.detail.setMinimumHeight(3 * self.detail.fontMetrics().lineSpacing())
        self.detail.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        left = QWidget()
        lay = QVBoxLayout(left)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(QLabel("Queue"))
        lay.addWidget(self.queue_view, 1)
        lay.addWidget(self.detail)

        self.viewer = ImageView()
        self.viewer.viewChanged.connect(self._show_zoom)
        self.edit_tools = EditTools(self.viewer, self)
        self.edit_tools.operation.connect(self._on_edit_operation)
        self.drop_zone = DropZone()
        self.drop_zone.open_files.clicked.connect(lambda: self.open_files())
        self.drop_zone.open_folder.clicked.connect(lambda: self.open_folder())
        self.view_stack = QStackedWidget()
        self.view_stack.addWidget(self.drop_zone)
        self.view_stack.addWidget(self.viewer)
        self.mode_buttons = QButtonGroup(self)
        # A tool bar, so that a narrow window (1024 px) shows what does not fit behind
        # its ">>" button instead of refusing to be that narrow.
        bar = QToolBar()
        bar.setMovable(False)
        bar.setFloatable(False)
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        for i, mode in enumerate(VIEW_MODES):
            button = QToolButton()
            button.setText(VIEW_LABELS[mode])
            button.setCheckable(True)
            button.setChecked(mode == self.view_mode)
            button.setToolTip(f"{VIEW_TIPS[mode]} ({i + 1})")
            self.mode_buttons.addButton(button, i)
            bar.addWidget(button)
        self.mode_buttons.idClicked.connect(lambda i: self.set_view_mode(VIEW_MODES[i]))
        self.before_button = QToolButton()
        self.before_button.setText("Hold for Original")
        self.before_button.setToolTip("Hold to see the photo before; release for the output (\\)")
        self.before_button.pressed.connect(lambda: self.hold_original(True))
        self.before_button.released.connect(lambda: self.hold_original(False))
        gap = QWidget()
        gap.setFixedWidth(12)
        bar.addWidget(gap)
        bar.addWidget(self.before_button)
        self._mode_bar = bar
        stretch = QWidget()
        stretch.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self._edit_button_at = bar.addWidget(stretch)  # Edit Mask goes before it
        self.zoom_label = QLabel("")
        self.zoom_label.setToolTip("Zoom: wheel, Ctrl++ / Ctrl+-; Ctrl+0 fits, Ctrl+1 is 100 %")
        self.zoom_label.setMinimumWidth(self.zoom_label.fontMetrics().horizontalAdvance("6400 %"))
        self.zoom_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        bar.addWidget(self.zoom_label)
        self.zoom_buttons: list[QToolButton] = []
        for text, slot, tip in (
            ("Fit", lambda: self.viewer.fit(), "Fit the image to the view (Ctrl+0)"),
            ("100 %", lambda: self.viewer.actual_size(), "One image pixel a screen pixel (Ctrl+1)"),
        ):
            button = QToolButton()
            button.setText(text)
            button.setToolTip(tip)
            button.clicked.connect(slot)
            bar.addWidget(button)
            self.zoom_buttons.append(button)
        viewer_page = QWidget()
        vl = QVBoxLayout(viewer_page)
        vl.setContentsMargins(0, 0, 0, 0)
        vl.addWidget(bar)
        row = QHBoxLayout()
        row.addWidget(self.view_stack, 1)
        self._view_row = row  # the edit tools go beside the view
        vl.addLayout(row, 1)

        self.compare = ComparisonView(self.store)
        self.compare.sides_changed.connect(self._on_sides_changed)
        self.tabs = QTabWidget()
        self.tabs.addTab(viewer_page, "Result")
        self.tabs.addTab(self.compare, "Compare A | B")
        self.tabs.currentChanged.connect(lambda *_: self._on_selection())

        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(self.tabs)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([260, 1000])
        self.setCentralWidget(splitter)

    def _build_settings_dock(self) -> None:
        self.panel = SettingsPanel(self.settings, self.store)
        self.panel.changed.connect(lambda changes: self._apply(**changes))
        self.export_panel = self.panel.export
        # The settings and the Export panel below them scroll when the window is short.
        scroll = QScrollArea()
        scroll.setWidget(self.panel)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setMinimumWidth(self.panel.sizeHint().width() + 16)
        dock = QDockWidget("Settings", self)
        dock.setObjectName("settings")
        dock.setWidget(scroll)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)

    def _build_status_bar(self) -> None:
        self.preparation = PreparationBar()
        self.preparation.cancelRequested.connect(self.cancel_preparation)
        self.jobs.preparing.connect(self.preparation.show_progress)
        # Whichever way a job ends, its model preparation is no longer shown.
        self.engine.ended.connect(lambda end: self.preparation.finish(end.job_id))
        # A preparation nothing waits for any more is stopped: the bar and the status
        # line say what and why.
        self.jobs.released.connect(lambda _text, ids: self.preparation.stopping(ids))
        self.jobs.released.connect(lambda text, _ids: self.statusBar().showMessage(text, 15000))
        self.statusBar().addPermanentWidget(self.preparation)
        self.provider_label = QLabel("")
        self.statusBar().addPermanentWidget(self.provider_label)
        # While a model is prepared, its bar has the room: the two never overlap.
        self.jobs.preparing.connect(lambda *_: self.provider_label.hide())
        self.engine.ended.connect(
            lambda _end: self.provider_label.setVisible(self.preparation.isHidden())
        )
        # The engine's warnings and notes (a model obtained from a mirror, a fallback)
        # reach the user here; the handler goes when the window does.
        self._log_handler = LogToStatusBar()
        self._log_handler.relay.message.connect(
            lambda text: self.statusBar().showMessage(text, 8000)
        )
        logging.getLogger("bgremover").addHandler(self._log_handler)

    def _build_actions(self) -> None:
        def action(text, shortcut, slot, menu, tip=""):
            a = QAction(text, self)
            if shortcut:
                a.setShortcut(QKeySequence(shortcut))
            a.setStatusTip(tip or text.replace("&", "").replace("…", ""))
            a.triggered.connect(slot)
            menu.addAction(a)
            return a

        file_menu = self.menuBar().addMenu("&File")
        self.act_open = action(
            "&Open Images…", QKeySequence.StandardKey.Open, self.open_files, file_menu
        )
        self.act_open_folder = action("Open &Folder…", "Ctrl+Shift+O", self.open_folder, file_menu)
        self.recent_menu = QMenu("Open &Recent", self)
        file_menu.addMenu(self.recent_menu)
        self._fill_recent_menu(recent_paths())
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
        self.act_save_selected = action(
            "Save Selec&ted…",
            "Ctrl+Alt+S",
            self.save_selected,
            file_menu,
            "Save the cutouts of the images selected in the queue into a folder",
        )
        self.act_save_all = action(
            "Save &All…",
            "Ctrl+Alt+Shift+S",
            self.save_all,
            file_menu,
            "Save the cutout of every image in the queue into a folder",
        )
        file_menu.addSeparator()
        # triggered(bool) must not reach open_batch's folder argument.
        self.act_batch = action("&Batch Folder…", "Ctrl+B", lambda: self.open_batch(), file_menu)
        self.act_model_file = action("Use a Model &File…", "", self.choose_model_file, file_menu)
        file_menu.addSeparator()
        action("&Quit", QKeySequence.StandardKey.Quit, self.close, file_menu, "Quit bgremover")

        edit_menu = self.menuBar().addMenu("&Edit")
        self.act_reprocess = action(
            "&Reprocess All with Current Settings", "Ctrl+R", self.reprocess, edit_menu
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
        action("&Compare A | B", "Ctrl+K", self.show_compare, view_menu)
        action("&Result", "Ctrl+J", lambda: self.tabs.setCurrentIndex(0), view_menu)

        self._build_edit_actions(action)

        # The app's advice on failures names these menu items by their real texts.
        use_menus(reprocess=self.act_reprocess, model_file=self.act_model_file)

        help_menu = self.menuBar().addMenu("&Help")
        action("&About bgremover", "", self.about, help_menu, "About bgremover")

    def _build_edit_actions(self, action) -> None:
        """The Touch Up menu and the edit bar: edit mode, the tools, undo and the rest."""
        menu = self.menuBar().addMenu("&Touch Up")

        def tipped(a: QAction, tip: str) -> QAction:
            a.setToolTip(
                tool_tip(tip, a.shortcut().toString(QKeySequence.SequenceFormat.NativeText))
            )
            a.setStatusTip(tip)
            return a

        self.act_edit_mode = tipped(
            action("&Edit Mask", "E", self.set_edit_mode, menu),
            "Edit mode: touch up the mask with brushes, clicks and boxes",
        )
        self.act_edit_mode.setCheckable(True)
        menu.addSeparator()
        self.tool_group = QActionGroup(self)
        self.tool_actions: dict[str, QAction] = {}
        for name, (label, key, tip) in TOOLS.items():
            a = tipped(action(label, key, lambda _=False, n=name: self.set_tool(n), menu), tip)
            a.setCheckable(True)
            a.setChecked(name == self.edit_tools.tool)
            self.tool_group.addAction(a)
            self.tool_actions[name] = a
        menu.addSeparator()
        self.act_smaller = tipped(
            action("S&maller Brush", "[", lambda: self.edit_tools.grow(1 / SIZE_STEP), menu),
            "A smaller brush",
        )
        self.act_bigger = tipped(
            action("&Bigger Brush", "]", lambda: self.edit_tools.grow(SIZE_STEP), menu),
            "A bigger brush",
        )
        self.act_edge_aware = tipped(
            action("Ed&ge-Aware Brush", "G", self._set_edge_aware, menu),
            "Edge-aware: the brush follows the photo's edges (paint roughly along hair: "
            "the hair is kept, the background between it goes)",
        )
        self.act_edge_aware.setCheckable(True)
        self.act_overlay = tipped(
            action("Mask &Overlay", "O", lambda: self._show_current(), menu),
            "While editing, show the photo with what is removed tinted red (hold \\ for the "
            "model's mask before your edits); off: the output",
        )
        self.act_overlay.setCheckable(True)
        self.act_overlay.setChecked(True)
        menu.addSeparator()
        self.act_undo = tipped(
            action("&Undo Edit", QKeySequence.StandardKey.Undo, lambda: self.edit("undo"), menu),
            "Take back the last edit",
        )
        self.act_redo = tipped(
            action("&Redo Edit", QKeySequence.StandardKey.Redo, lambda: self.edit("redo"), menu),
            "Make the last edit taken back again",
        )
        self.act_reset = tipped(
            action("Re&set to Model's Mask", "Shift+R", self.reset_edits, menu),
            "Back to the model's mask: every edit undone (Undo brings them back)",
        )
        menu.addSeparator()
        self.act_load_mask = tipped(
            action("&Load Mask…", "Ctrl+L", self.load_mask, menu),
            "Replace the mask with one from a file: a mask image, or a cutout's transparency",
        )
        self.act_export_edits = tipped(
            action("E&xport Edits…", "Ctrl+E", self.export_edits, menu),
            "Save the edits as a file that `bgremover remove PHOTO --edits FILE` applies",
        )
        # Short words on the edit bar's buttons; the menu has the full names.
        for a, short in (
            (self.act_smaller, "−"),
            (self.act_bigger, "+"),
            (self.act_edge_aware, "Edge-aware"),
            (self.act_overlay, "Overlay"),
            (self.act_undo, "Undo"),
            (self.act_redo, "Redo"),
            (self.act_reset, "Reset"),
        ):
            a.setIconText(short)
        self.edit_bar = EditBar(
            self.edit_tools,
            self.tool_actions,
            (self.act_smaller, self.act_bigger),
            [
                self.act_edge_aware,
                None,
                self.act_overlay,
                None,
                self.act_undo,
                self.act_redo,
                self.act_reset,
                None,
                self.act_load_mask,
                self.act_export_edits,
            ],
        )
        self.edit_bar.setVisible(False)
        self._view_row.insertWidget(0, self.edit_bar)
        self.edit_button = QToolButton()
        self.edit_button.setDefaultAction(self.act_edit_mode)
        self._mode_bar.insertWidget(self._edit_button_at, self.edit_button)
        raised_buttons(self._mode_bar)

    def _current_view(self) -> ImageView:
        return self.compare.a_view if self.tabs.currentWidget() is self.compare else self.viewer

    def _zoom(self, step: float) -> None:
        self._current_view().zoom_by(step)

    def about(self) -> QMessageBox:
        """The About box, with the app's own icon (never a generic warning sign)."""
        box = QMessageBox(self)
        box.setWindowTitle("About bgremover")
        box.setIconPixmap(application_icon().pixmap(64, 64))
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

    # ------------------------------------------------------------------ leaving
    def unsaved_entries(self) -> list[QueueEntry]:
        """Images whose result (or edits) would be lost on quitting: done, not saved since."""
        return [e for e in self.queue.entries() if e.unsaved]

    def _quit_question(self) -> str:
        """What quitting now would lose, in words; "" when nothing."""
        parts = [unsaved_words(self.queue.entries()), self.save_many.quit_words()]
        if self._batch_job is not None:
            parts.append(
                "A batch is running: quitting stops it once the images being written are "
                "finished (start it again later to resume)."
            )
        return " ".join(p for p in parts if p)

    def may_drop(self, entries: list[QueueEntry], title: str, verb: str) -> bool:
        """Whether ``entries`` may be dropped: the user is asked first when that would lose
        a cutout not saved, or edits (the same question as quitting's)."""
        question = unsaved_words(entries) if self.confirm_quit else ""
        return not question or ask_before_losing(self, title, question, verb, SAVE_HINT)

    def closeEvent(self, event) -> None:
        question = self._quit_question() if self.confirm_quit else ""
        hint = SAVE_HINT if self.unsaved_entries() else ""
        if question and not ask_before_losing(self, "Quit bgremover?", question, "Quit", hint):
            event.ignore()
            return
        QApplication.instance().removeEventFilter(self)
        # Stop the engine's work (a batch finishes the images it is writing); saves the
        # user asked for still complete. Then leave.
        self.engine.shutdown()
        self.output.shutdown(cancel=False)
        self.worker.pool.clear()  # the sessions' memory goes now, not when Python collects
        save_settings(self.settings)
        logging.getLogger("bgremover").removeHandler(self._log_handler)
        # Drop the results (and their QImages) while Qt is still fully alive,
        # rather than leaving them to garbage collection at interpreter exit.
        self.queue.clear()
        self.compare.clear()
        super().closeEvent(event)

    # ------------------------------------------------------------------ settings
    def _apply(self, **changes: Any) -> None:
        """Take new settings, remember them, and apply them at once.

        Images still waiting run with them; the image shown is brought up to them now,
        running again only the stages they affect (see :meth:`QueueJobs.update`); the
        other finished images are when they are shown or saved.
        """
        before = self.settings
        if "model" in changes and "family" not in changes:
            changes["family"] = ""  # the family a model file was said to be stays with it
        self.settings = replace(self.settings, **changes)
        save_settings(self.settings)
        if self._batch_dialog is not None:
            self._batch_dialog.show_settings(self.settings)
        self.panel.show_settings(self.settings)
        self.compare.set_current_model(self.settings.model)
        if self.settings.engine() != before.engine():
            self.jobs.requeue_waiting()
        if (
            self.settings.engine() != before.engine()
            or self.settings.compose() != before.compose()
            or self.settings.output_format != before.output_format
        ):
            self._request_current()
            self._show_current()
        if self.settings.engine() != before.engine():
            self.jobs.release_for_settings()  # a download or build for the old settings

    def _forget_missing_model_file(self) -> None:
        """A model file remembered from an earlier run that is gone: back to the default."""
        model = self.settings.model
        if model in REGISTRY or Path(model).is_file():
            return
        self.settings = replace(self.settings, model=DEFAULT_MODEL)
        save_settings(self.settings)
        self.panel.forget_model_file(model)
        self.panel.show_model(DEFAULT_MODEL)
        self.statusBar().showMessage(
            f"The model file {model} is no longer there; using {DEFAULT_MODEL}.", 10000
        )

    def choose_model_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Choose an ONNX model", "", "ONNX models (*.onnx)"
        )
        if path:
            self.use_model_file(Path(path))

    def use_model_file(self, path: Path, family: str = "") -> Job:
        """Try ``path`` as a model on the engine thread; it becomes the setting only if it
        loads. A file whose signature fits several families makes the app ask which one
        it is (``family``), then try again."""
        config = replace(self.settings.engine(), model=str(path), precision="fp32", family=family)

        def ended(end: JobEnd) -> None:
            if end.ok:
                self.panel.show_model(str(path))
                self._apply(model=str(path), family=family)
                self.statusBar().showMessage(f"Using the model file {path.name}.", 6000)
            elif isinstance(end.error, AmbiguousFamilyError):
                chosen = ask_family(self, path.name, end.error.candidates)
                if chosen:
                    self.use_model_file(path, chosen)
            elif end.state is JobState.FAILED:
                show_error(
                    self,
                    "This file cannot be used as a model",
                    f"{end.message}\n\nThe model setting is unchanged.",
                    end.details,
                )

        return self.engine.submit(
            "check",
            lambda ctx: self.worker.check_model(ctx, config),
            tag=("check", None, config),
            on_end=ended,
            on_progress=self.jobs.report_progress,
        )

    # ------------------------------------------------------------------ input
    def add_paths(self, paths: list[Path]) -> int:
        """Queue image files; folders are walked. The first image added is selected and
        shown. Returns how many images were added."""
        added: list[QueueEntry] = []
        folders: list[str] = []
        for path in paths:
            if path.is_dir():
                found = [self._enqueue(f, f.name) for f in walk_images(path)]
                if found:
                    folders.append(str(path.absolute()))
                added.extend(found)
            else:  # a file named explicitly is tried even if its name is odd
                entry = self._enqueue(path, path.name)
                self._recent_files[entry.item_id] = str(path.absolute())
                added.append(entry)
        if folders:
            self._fill_recent_menu(remember_recent(folders))
        if added:
            self._select_added(added[0])
            self.statusBar().showMessage(
                f"Added {len(added)} image{'s' if len(added) > 1 else ''}.", 4000
            )
        return len(added)

    def _enqueue(self, source: Path | LoadedImage, name: str) -> QueueEntry:
        entry = self.queue.add(source, name)
        self.jobs.process(entry)
        self._update_enabled()
        return entry

    def _select_added(self, entry: QueueEntry) -> None:
        self.select(entry)
        self._auto_selected = True

    def _fill_recent_menu(self, paths: list[str]) -> None:
        menu = self.recent_menu
        menu.clear()
        for path in paths:
            shown = path if len(path) <= 70 else f"{path[:30]}…{path[-39:]}"
            a = menu.addAction(shown.replace("&", "&&"))
            a.setStatusTip(path)
            a.triggered.connect(lambda _=False, p=path: self.open_recent(p))
        if paths:
            menu.addSeparator()
            menu.addAction("Clear Menu", lambda: self._fill_recent_menu(forget_recent()))
        else:
            menu.addAction("No recent files").setEnabled(False)

    def open_recent(self, path: str) -> None:
        if not Path(path).exists():
            self._fill_recent_menu(forget_recent(path))
            self.statusBar().showMessage(f"{path} is no longer there; removed from the list.", 8000)
            return
        if not self.add_paths([Path(path)]) and Path(path).is_dir():
            self.statusBar().showMessage(f"No images found in {path}.", 6000)

    def _next_paste_name(self, what: str) -> str:
        self._paste_count += 1
        return f"{what} image {self._paste_count}"

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
        name = self._next_paste_name("Pasted")
        self._select_added(self._enqueue(from_array(qimage_to_rgba(image), name), name))

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls() or event.mimeData().hasImage():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        data = event.mimeData()
        paths = [Path(u.toLocalFile()) for u in data.urls() if u.isLocalFile()]
        if paths:
            self.add_paths(paths)
        elif data.hasImage():
            name = self._next_paste_name("Dropped")
            entry = self._enqueue(from_array(qimage_to_rgba(QImage(data.imageData())), name), name)
            self._select_added(entry)
        event.acceptProposedAction()

    # ------------------------------------------------------------------ the queue
    def current_entry(self) -> QueueEntry | None:
        return self.queue.at(self.queue_view.currentIndex().row())

    def select(self, entry: QueueEntry) -> None:
        self.queue_view.setCurrentIndex(self.queue.index_of(entry))

    def selected_entries(self) -> list[QueueEntry]:
        """The images selected in the queue, in its order (the current one when none is)."""
        rows = sorted({i.row() for i in self.queue_view.selectionModel().selectedIndexes()})
        chosen = [e for r in rows if (e := self.queue.at(r)) is not None]
        current = self.current_entry()
        return chosen or ([current] if current is not None else [])

    def remove_selected(self) -> None:
        """Remove the selected images (asking first when that loses unsaved work)."""
        entries = self.selected_entries()
        if not entries or not self.may_drop(entries, "Remove from the queue?", "Remove"):
            return
        for entry in entries:
            self.jobs.stop(entry)
            self.queue.remove(entry)
        self._on_selection()
        self.jobs.check_settled()

    def clear_queue(self) -> None:
        """Empty the queue (asking first when that loses unsaved work)."""
        if not self.may_drop(self.queue.entries(), "Clear the queue?", "Clear"):
            return
        for entry in self.queue.entries():
            self.jobs.stop(entry)
        self.queue.clear()
        self._on_selection()
        self.jobs.check_settled()

    def save_selected(self) -> Job | None:
        """The selected images' outputs into a folder asked for once (see save_many.py)."""
        return self.save_many.choose_folder_and_save(self.selected_entries())

    def save_all(self) -> Job | None:
        """Every image's output into a folder asked for once (see save_many.py)."""
        return self.save_many.choose_folder_and_save(self.queue.entries())

    def reprocess(self) -> None:
        """Every image again with the current settings (the one way finished ones change)."""
        self.jobs.reprocess()
        self._request_current()
        self._show_current()

    # ------------------------------------------------------------------ job ends
    def _on_entry_changed(self, entry: QueueEntry) -> None:
        if entry.status in (Status.DONE, Status.FAILED) and entry.item_id in self._recent_files:
            path = self._recent_files.pop(entry.item_id)
            done = entry.status is Status.DONE
            self._fill_recent_menu(remember_recent([path]) if done else forget_recent(path))
        if entry is not self.current_entry():
            self._update_title()
            return
        if entry.status is Status.FAILED and self._auto_selected:
            following = self._next_showable(entry)
            if following is not None:
                self._select_added(following)  # a photo that can be shown, not a failure
                return
        if entry.status is Status.DONE:
            self.jobs.update(entry)  # a result made with settings changed meanwhile
        if not self.jobs.edits_busy(entry):
            self.edit_tools.clear_pending()  # a remade result has the edits drawn
        self._show_current()

    def _next_showable(self, entry: QueueEntry) -> QueueEntry | None:
        """The first image after ``entry`` that has not failed."""
        entries = self.queue.entries()
        later = entries[entries.index(entry) + 1 :]
        return next((e for e in later if e.status is not Status.FAILED), None)

    def _report_failure(self, end: JobEnd) -> None:
        """What the user must hear of beyond the queue (a bad image only shows there).

        A model that cannot be obtained or loaded: once, however many images waited for
        it. A bug: with its traceback behind Show Details.
        """
        technical = getattr(end.error, "technical", "")
        if not isinstance(end.error, ModelError):
            show_error(self, "bgremover", end.message, end.details, technical)
            return
        config = end.tag[-1]
        message = end.message
        if config.model not in REGISTRY and self.settings.model == config.model:
            # A model file that does not load must not stay the setting: every later
            # launch would fail every image.
            self._apply(model=DEFAULT_MODEL)
            self.panel.forget_model_file(config.model)
            self.panel.show_model(DEFAULT_MODEL)
            message += f"\n\nbgremover went back to the default model, {DEFAULT_MODEL}."
        show_error(self, "The model could not be used", message, end.details, technical)

    def cancel_preparation(self, job_id: int) -> None:
        """The user's Cancel on a model download (or int8 build): that job stops, and the
        work waiting for it ends unrun. Cancelling is not a failure: no dialog."""
        self.engine.cancel(job_id)

    # ------------------------------------------------------------------ display
    def _on_selection(self) -> None:
        """The user looks at another image or tab: start what it needs, then show it."""
        self._auto_selected = False
        self.edit_tools.clear_pending()  # the previous image's strokes apply to it still
        self.queue.current = self.current_entry()
        self._request_current()
        self._show_current()

    def _refresh_model_labels(self) -> None:
        """A model was prepared (maybe downloaded): the model lists say it is cached."""
        self.panel.refresh_model_labels()
        self.compare.refresh_model_labels()

    def _on_model_prepared(self, config: EngineConfig) -> None:
        """A model is ready: the lists say it is cached, and the note of its download
        ("Obtaining … from …") gives way to the news instead of outliving it."""
        self._refresh_model_labels()
        if self.statusBar().currentMessage().startswith(f"Obtaining {config.model} from "):
            self.statusBar().showMessage(f"The model {config.model} is ready.", 5000)

    def compare_pair(self) -> tuple[EngineConfig, EngineConfig]:
        """The configs of the comparison's sides A and B as chosen now."""
        return compare_pair(self.settings.engine(), self.compare.sides())

    def comparison_current(self, entry: QueueEntry) -> bool:
        """``entry`` has the comparison of the sides chosen now."""
        return entry.compared is not None and entry.compared.pair == self.compare_pair()

    def _on_sides_changed(self) -> None:
        """The user chose another A or B: the image shown is compared again (the work
        for the sides before is cancelled)."""
        entry = self.current_entry()
        if entry is not None and not self.comparison_current(entry):
            self.jobs.drop_comparison(entry)
            self.jobs.check_settled()
        self._request_current()
        self.jobs.release_for_sides(self.compare.sides())  # e.g. the old B's int8 build
        self._show_current()

    def show_compare(self) -> None:
        """Ctrl+K: the comparison tab; a comparison that failed or was cancelled is retried."""
        entry = self.current_entry()
        if entry is not None and entry.compare_job is None and not self.comparison_current(entry):
            entry.compare_error, entry.compare_cancelled = "", False
        if self.tabs.currentWidget() is self.compare:
            self._on_selection()
        else:
            self.tabs.setCurrentWidget(self.compare)

    def _request_current(self) -> None:
        """Submit the work the current view needs and does not have (never more): its
        result, made again if memory was freed, brought up to the settings if they
        changed, and its comparison on the Compare tab."""
        entry = self.current_entry()
        if entry is None:
            return
        if entry.unloaded and entry.job is None:
            self.jobs.process(entry)  # its result was dropped to bound memory: remake it
        elif entry.status is Status.DONE:
            self.jobs.update(entry)
        if self.tabs.currentWidget() is not self.compare or entry.status is Status.FAILED:
            return
        pair = self.compare_pair()
        pending = self.jobs.compare_pending(entry)
        if (pending is not None and pending != pair) or (
            entry.compared is not None and entry.compared.pair != pair
        ):
            self.jobs.drop_comparison(entry)  # made for other sides
        if entry.compared is None and entry.compare_job is None and not entry.compare_error:
            self.jobs.compare(entry, self.compare.sides())

    def set_view_mode(self, mode: str) -> None:
        self.view_mode = mode
        self.mode_buttons.button(VIEW_MODES.index(mode)).setChecked(True)
        self.tabs.setCurrentIndex(0)
        self._show_current()

    def hold_original(self, held: bool) -> None:
        """Before / after: while held, the Result view shows the photo instead."""
        if held != self._holding_original:
            self._holding_original = held
            self._show_current()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if (
            kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease)
            and event.key() == HOLD_ORIGINAL_KEY
            and self.isActiveWindow()
        ):
            if not event.isAutoRepeat():
                self.hold_original(kind == QEvent.Type.KeyPress)
            return True
        return super().eventFilter(watched, event)

    def _show_current(self) -> None:
        """Draw the current entry as the queue knows it. Starts nothing."""
        entry = self.current_entry()
        self._update_enabled()
        self._update_title()
        p = entry.processed if entry is not None else None
        self.export_panel.show_enlarged(p.enlarged if p is not None else None)
        if p is None:
            self.viewer.set_image(None)
            self.view_stack.setCurrentWidget(self.drop_zone)
            self._show_zoom()
        if entry is None:
            self.compare.clear()
            if len(self.queue):
                self.drop_zone.show_message("No image selected", "Select an image in the queue.")
                self.detail.setText("")
            else:
                self.drop_zone.show_empty()
                self.detail.setText(EMPTY_TEXT)
            self.provider_label.setText("")
            return
        if p is not None:
            self.queue.keep_loaded(entry)
            image, overlay = self._display_images(p)
            self.view_stack.setCurrentWidget(self.viewer)
            # In edit mode, what is shown without the overlay is redrawn edit by edit.
            self.viewer.set_image(image, editable=self.edit_mode and overlay is None)
            self.viewer.set_overlay(overlay)
            self._show_zoom()
            r = p.result
            settings = self.settings
            stale = p.stage_for(settings.engine(), settings.compose(), settings.output_format)
            stale = stale is not None
            if entry.status in (Status.QUEUED, Status.PROCESSING):
                note = f"\nBeing made again ({entry.status.value})…"
            else:
                note = "\nApplying the new settings…" if stale else ""
            self.detail.setText(entry.summary + note)
            active = ", ".join(x.replace("ExecutionProvider", "") for x in r.providers)
            made = f"{r.model} {r.precision}"
            if r.guard is not None and r.guard.ran_fp32:
                made += " (int8 was unsure of it)"
            self.provider_label.setText(f"This image: {made} on {active}")
            self.panel.show_fallbacks(r.fallbacks)
        else:
            self.provider_label.setText("")
            if entry.status is Status.FAILED:
                self.detail.setText(f"Failed: {entry.error}")
                self.drop_zone.show_message(f"{entry.name} could not be processed", entry.error)
            elif entry.status is Status.STOPPED:
                self.detail.setText(f"{entry.name}: {entry.error}")
                self.drop_zone.show_message(f"{entry.name} was not processed", entry.error)
            else:
                state = "loading…" if entry.unloaded else f"{entry.status.value}…"
                self.detail.setText(f"{entry.name}: {state}")
                self.drop_zone.show_message(f"{entry.name}", state.capitalize())
        if self.tabs.currentWidget() is self.compare:
            self._show_comparison(entry)

    def _display_images(self, p: Processed) -> tuple[QImage, QImage | None]:
        """What the Result view shows of ``p``, and the overlay over it (None: none).

        In edit mode with the overlay on: the photo, with the mask's removed part tinted
        (holding for the original shows the model's mask so, before the edits); otherwise
        the view mode's picture (holding for the original: the photo alone).
        """
        overlay = self.edit_mode and self.act_overlay.isChecked()
        output = p.output
        if self.edit_mode and p.edit_output is not None:
            # The edit tools draw in photo pixels: the output at the photo's frame, until
            # edit mode ends and the export's frame (crop, canvas) returns.
            output = p.edit_output
        if self._holding_original:
            if overlay and p.editor is not None:
                # Before / after while editing: the model's mask, before the edits.
                return p.original, self._overlay(p.editor, p.editor.base)
            return p.original, None
        if overlay:
            return p.original, self._overlay(p, p.result.alpha)
        return {"original": p.original, "output": output, "mask": p.mask}[self.view_mode], None

    def _overlay(self, owner: object, alpha) -> QImage:
        """The overlay of ``alpha``, made once while ``owner`` (a result, an editor) stays."""
        if self._overlay_for is None or self._overlay_for[0] is not owner:
            self._overlay_for = (owner, overlay_image(alpha))
        return self._overlay_for[1]

    def _show_zoom(self) -> None:
        shown = self.viewer.has_image() and self.view_stack.currentWidget() is self.viewer
        self.zoom_label.setText(f"{self.viewer.zoom * 100:.0f} %" if shown else "")
        for button in (*self.mode_buttons.buttons(), self.before_button, *self.zoom_buttons):
            button.setEnabled(shown)

    def _update_title(self) -> None:
        entry = self.current_entry()
        if entry is None:
            self.setWindowTitle("bgremover")
            self.setWindowModified(False)
            return
        # "[*]" is where Qt marks unsaved work (an asterisk; a dot in the close button
        # on macOS).
        self.setWindowTitle(f"{entry.name.replace('[*]', '[**]')}[*] — bgremover")
        # The mark is the image shown's, as in any editor; quitting counts the queue's.
        self.setWindowModified(entry.unsaved)

    def _show_comparison(self, entry: QueueEntry) -> None:
        if entry.compared is not None and self.comparison_current(entry):
            self.compare.set_result(entry.compared)
            return
        size = None  # the photo's, so the panes are arranged for it before the result
        if entry.processed is not None:
            h, w = entry.processed.result.mask.shape
            size = (w, h)
        elif entry.thumb is not None:
            size = (entry.thumb.width(), entry.thumb.height())
        self.compare.clear(size)
        if entry.compare_error:
            text = f"The comparison failed: {entry.compare_error}"
        elif entry.compare_job is not None:
            a, b = self.compare_pair()
            text = f"Comparing {a.model} {a.precision} and {b.model} {b.precision}…"
        elif entry.compare_cancelled:
            text = "The comparison was cancelled. Press Ctrl+K to compare again."
        elif entry.status is Status.FAILED:
            text = "This image could not be read, so there is nothing to compare."
        else:
            text = "Press Ctrl+K to compare side A and side B for this image."
        self.compare.placeholder.setText(text)

    def _update_enabled(self) -> None:
        entry = self.current_entry()
        self.act_remove.setEnabled(bool(self.selected_entries()))
        self.act_clear.setEnabled(len(self.queue) > 0)
        saving = self.save_many.running
        self.act_save_selected.setEnabled(not saving and bool(self.selected_entries()))
        self.act_save_all.setEnabled(not saving and len(self.queue) > 0)
        self.act_reprocess.setEnabled(len(self.queue) > 0)
        self._update_edit_enabled(entry)

    def _update_edit_enabled(self, entry: QueueEntry | None) -> None:
        """The edit actions, from one state: edit mode, and what the image has."""
        ready = entry is not None and entry.processed is not None
        editing = self.edit_mode and ready
        for a in (
            *self.tool_actions.values(),
            self.act_smaller,
            self.act_bigger,
            self.act_edge_aware,
            self.act_overlay,
            self.act_reset,
            self.act_load_mask,
        ):
            a.setEnabled(editing)
        self.act_undo.setEnabled(ready and entry is not None and bool(entry.edits))
        self.act_redo.setEnabled(ready and entry is not None and bool(entry.redo))
        self.act_export_edits.setEnabled(entry is not None and bool(entry.edits))
        self.edit_tools.set_active(editing)
        # Edit mode needs an image with (or about to have) a cutout; leaving it always works.
        self.act_edit_mode.setEnabled(self.edit_mode or not self.why_not_editable(entry))

    def why_not_editable(self, entry: QueueEntry | None) -> str:
        """Why edit mode cannot be entered on ``entry``; "" when it can."""
        if entry is None:
            return "Open or drop a photo first: there is nothing to edit yet."
        if entry.status in (Status.FAILED, Status.STOPPED):
            return f"{entry.name} has no cutout to edit ({entry.status.value})."
        return ""

    # ------------------------------------------------------------------ output
    def why_nothing_to_save(self, entry: QueueEntry | None) -> str:
        """Why there is no output to save or copy for ``entry``; "" when there is."""
        if entry is None:
            return "Nothing to save yet: open or drop a photo first."
        if entry.status is Status.FAILED:
            return f"{entry.name} could not be processed, so there is nothing to save."
        if entry.status is Status.STOPPED:
            return f"{entry.name} was not processed: Reprocess (Ctrl+R) to make its cutout."
        if entry.processed is None or entry.job is not None:
            return f"{entry.name} is still being processed; save it when it shows done."
        return ""

    def default_save_path(self, entry: QueueEntry, mask_only: bool) -> Path:
        """``NAME-cutout.png`` (or ``NAME-mask.png``) in the folder saved to last, else
        next to the photo: never the photo's own name. (A batch's output folder is the
        batch dialog's, not Save's.)"""
        fmt = FORMATS[self.settings.output_format]
        stem = Path(entry.name).stem + ("-mask" if mask_only else "-cutout")
        source_folder = entry.source.parent if isinstance(entry.source, Path) else None
        folder = self.settings.last_save_folder or source_folder or self.settings.last_folder
        return Path(folder or Path.home()) / f"{stem}{fmt.extension}"

    def _save(self, mask_only: bool) -> None:
        entry = self.current_entry()
        reason = self.why_nothing_to_save(entry)
        if reason or entry is None:
            self.statusBar().showMessage(reason, 6000)
            return
        chosen = FORMATS[self.settings.output_format]
        filters = [chosen, *(f for f in FORMATS.values() if f is not chosen)]
        start = str(self.default_save_path(entry, mask_only))
        while True:
            # bgremover asks before replacing a file itself, after it has refused the
            # photo's own name: Qt's own question would come first and offer that.
            path, _ = QFileDialog.getSaveFileName(
                self,
                "Save mask" if mask_only else "Save cutout",
                start,
                ";;".join(f.dialog_filter for f in filters),
                options=QFileDialog.Option.DontConfirmOverwrite,
            )
            if not path:
                return
            target = self.save_target(Path(path))
            if isinstance(entry.source, Path) and target.resolve() == entry.source.resolve():
                QMessageBox.warning(
                    self,
                    "Choose another name",
                    f"{target.name} is the original photo. bgremover never replaces it: "
                    "choose another name.",
                )
                start = str(self.default_save_path(entry, mask_only))
                continue
            if target.exists():
                answer = QMessageBox.question(
                    self,
                    "Replace the file?",
                    f"{target.name} already exists in {target.parent}. Replace it?",
                    QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                    QMessageBox.StandardButton.No,
                )
                if answer != QMessageBox.StandardButton.Yes:
                    start = str(target)
                    continue
            chosen_fmt = format_for_path(target)
            if not mask_only and chosen_fmt and chosen_fmt.name != self.settings.output_format:
                # Another format chosen in the dialog: it becomes the setting, so that the
                # view (a lossy format's pixels) is what is written.
                self._apply(output_format=chosen_fmt.name, preset="")
            self.save_result(entry, target, mask_only)
            return

    def save_target(self, path: Path) -> Path:
        """The file a save to ``path`` writes: the chosen format's ending is added to a
        name without one the writers know."""
        if format_for_path(path) is None:
            return path.with_name(path.name + FORMATS[self.settings.output_format].extension)
        return path

    def save_result(self, entry: QueueEntry, path: Path, mask_only: bool = False) -> Job | None:
        """Write what the Result view shows for ``entry`` (or its mask) atomically, on the
        output thread; None if refused.

        The file's format comes from its name (see :meth:`save_target`). A result still
        being brought up to changed settings is saved once it is; the status bar, or an
        error box, says how it went.
        """
        path = self.save_target(path)
        fmt = format_for_path(path)
        assert fmt is not None
        if isinstance(entry.source, Path) and path.resolve() == entry.source.resolve():
            show_error(self, "Not saved", f"{path} is the original photo; choose another name.")
            return None
        problem = self.export_problem(fmt.name, mask_only)
        if problem:
            self.statusBar().showMessage(f"Not saved: {problem}", 10000)
            show_error(self, "Not saved", f"{path.name} was not saved. {problem}")
            return None
        if self.jobs.edits_busy(entry):
            # What is saved is what the edits asked for make: saved once they are applied.
            self.statusBar().showMessage(f"Saving {path.name} once the edits are applied…")
            self._after_edits.setdefault(entry.item_id, []).append(
                lambda: self.save_result(entry, path, mask_only)
            )
            return None
        ready = self._up_to_date(entry, "save")
        if ready is None:
            return None
        pending, current = ready
        # Save Mask writes the mask; Save writes what the view shows (the mask too when
        # the setting says so).
        options, name = self.settings.compose(True if mask_only else None), fmt.name
        edits = entry.edits or None  # applied: the edits the result saved has
        config = self.settings.engine()  # what the result is brought up to: its record says so

        def ended(end: JobEnd) -> None:
            if end.ok:
                saved = entry.processed  # brought up to date before the save ran
                entry.saved_to = path
                entry.saved_with = (saved.config, saved.options, edits) if saved else None
                self.queue.changed(entry)
                self._apply(last_save_folder=str(path.parent))
                self._update_title()
                self.statusBar().showMessage(f"Saved {path}", 5000)
            elif end.state is JobState.FAILED:
                technical = getattr(end.error, "technical", "")
                show_error(self, "Could not save", end.message, end.details, technical)
            elif end.blocked_by is not None:
                self.statusBar().showMessage("Not saved: the settings changed; save again.", 6000)

        self.statusBar().showMessage(f"Saving {path.name}…")
        return self.output.submit(
            "save",
            lambda ctx: save(ctx, current(), options, path, name, config, edits),
            tag=path,
            on_end=ended,
            after=pending,
        )

    def export_problem(self, fmt: str, mask_only: bool = False) -> str:
        """Why the export settings cannot be written as a ``fmt`` file, in words (what is
        wrong and what to do); "" when they can."""
        settings = replace(self.settings, output_format=fmt)
        if mask_only:
            settings = replace(settings, mask_only=True)
        problem = settings.export_problem()
        if problem is None:
            return ""
        return f"{problem.message} {problem.fix}".strip()

    def _up_to_date(self, entry: QueueEntry | None, verb: str):
        """For writing ``entry``'s output: the job bringing its result up to the settings
        (None when it is) and a function giving that result on the output thread once it
        ran; None, with the reason in the status bar, when there is nothing to write yet."""
        reason = self.why_nothing_to_save(entry)
        pending = self.jobs.update(entry) if entry is not None and not reason else None
        if entry is not None and pending is not None and pending.kind != "restage":
            reason = f"{entry.name} is being made again with the new model settings; save it "
            reason += "when it shows done."
            self._show_current()  # the pane says so too
        if reason or entry is None or entry.processed is None:
            self.statusBar().showMessage(reason.replace("save", verb), 6000)
            return None
        earlier = entry.processed

        def current() -> Result:
            end = pending.end if pending is not None else None
            return (end.result if end is not None and end.ok else earlier).result

        return pending, current

    def save_cutout(self) -> None:
        self._save(mask_only=False)

    def save_mask(self) -> None:
        self._save(mask_only=True)

    def copy_cutout(self) -> Job | None:
        """Copy what the Result view shows (the output for the current settings)."""
        entry = self.current_entry()
        if entry is not None and self.jobs.edits_busy(entry):
            self._after_edits.setdefault(entry.item_id, []).append(self.copy_cutout)
            return None
        ready = self._up_to_date(entry, "copy")
        if ready is None:
            return None
        pending, current = ready
        options = self.settings.compose()

        def ended(end: JobEnd) -> None:
            if end.ok:
                QGuiApplication.clipboard().setImage(end.result)
                what = "Mask" if options.mask_only else "Cutout"
                self.statusBar().showMessage(f"{what} copied to the clipboard.", 4000)

        return self.output.submit(
            "copy",
            lambda ctx: composed_image(ctx, current(), options),
            on_end=ended,
            after=pending,
        )

    # ------------------------------------------------------------------ editing
    def set_edit_mode(self, on: bool) -> None:
        """Edit mode on the Result view: the mouse uses the edit tools (E)."""
        on = bool(on)
        why = self.why_not_editable(self.current_entry()) if on else ""
        if why:
            self.act_edit_mode.setChecked(False)
            self.statusBar().showMessage(why, 6000)
            return
        self.edit_mode = on
        self.act_edit_mode.setChecked(on)
        self.edit_bar.setVisible(on)
        if on:
            self.tabs.setCurrentIndex(0)
            self.statusBar().showMessage(
                "Edit mode: B restore, X erase, A / R click to keep / remove a region, "
                "M box; [ ] brush size; O overlay; middle button pans; E when done.",
                10000,
            )
        else:
            self._overlay_for = None
            self.statusBar().clearMessage()
        self._show_current()

    def set_tool(self, tool: str) -> None:
        self.edit_tools.set_tool(tool)
        self.tool_actions[tool].setChecked(True)

    def _set_edge_aware(self, on: bool) -> None:
        self.edit_tools.edge_aware = bool(on)

    def _on_edit_operation(self, op: Operation) -> None:
        """An operation drawn by the user on the current image: applied as a job."""
        entry = self.current_entry()
        if entry is None or not self.jobs.edit(entry, "apply", op):
            self.edit_tools.applied(op)
        self._edits_requested(entry)

    def edit(self, action: str, op: Operation | None = None) -> bool:
        """An edit of the current image: "apply" ``op``, "undo", "redo"."""
        entry = self.current_entry()
        done = entry is not None and self.jobs.edit(entry, action, op)
        if entry is not None:
            self._edits_requested(entry)
        return done

    def reset_edits(self) -> bool:
        """Back to the model's mask (an edit itself: Undo takes it back)."""
        return self.edit("apply", Operation("reset"))

    def _edits_requested(self, entry: QueueEntry | None) -> None:
        self._update_enabled()
        self._update_title()
        if entry is not None and entry is self.current_entry() and entry.processed is not None:
            self.detail.setText(entry.summary)

    def _on_edit_end_display(self, entry: QueueEntry, box: Box | None) -> None:
        """Redraw only the box an edit changed of what the Result view shows."""
        p = entry.processed
        if p is None or box is None or self.view_stack.currentWidget() is not self.viewer:
            return
        image, overlay = self._display_images(p)
        self.viewer.update_region(image, box)
        if overlay is not None:
            self.viewer.update_overlay(overlay, box)

    def _on_edited(self, entry: QueueEntry, box: Box | None, request: EditRequest) -> None:
        busy = self.jobs.edits_busy(entry)
        if entry is self.current_entry():
            self.edit_tools.applied(request.op)
            if not busy:
                self.edit_tools.clear_pending()  # requests made into a remade result
            self._on_edit_end_display(entry, box)
            self._show_current()  # costs nothing more: the view already has these images
        else:
            self._update_title()
        if not busy:
            for later in self._after_edits.pop(entry.item_id, []):
                later()

    def load_mask(self) -> None:
        patterns = " ".join(f"*{e}" for e in sorted(IMAGE_EXTENSIONS))
        path, _ = QFileDialog.getOpenFileName(
            self, "Load a mask", self.settings.last_folder, f"Images ({patterns})"
        )
        if path:
            self.load_mask_from(Path(path))

    def load_mask_from(self, path: Path) -> Job | None:
        """Replace the current image's mask with ``path``'s (a mask, or a cutout's alpha),
        read and resized on the output thread, then applied as an edit."""
        entry = self.current_entry()
        if entry is None or entry.processed is None:
            return None
        h, w = entry.processed.result.mask.shape

        def read(ctx) -> Operation:
            advice = "Choose a mask image (white kept, black removed) or a cutout PNG."
            try:
                # Through the allow-list of formats, as photos are: an EPS given as a
                # mask is refused in the same words and never reaches Ghostscript.
                with open_image(path) as img:
                    img.load()
                    return Operation.load(mask_from_image(img, (h, w)))
            except ImageReadError as exc:
                raise EditsError(
                    f"{path.name} could not be read as a mask. {exc.message}",
                    fix=exc.fix or advice,
                    app_fix=exc.app_fix or advice,
                    technical=exc.technical,
                ) from exc
            except (OSError, ValueError) as exc:
                raise EditsError(
                    f"{path.name} could not be read as a mask: {exc}.", fix=advice
                ) from exc

        def ended(end: JobEnd) -> None:
            if end.ok:
                if self.jobs.edit(entry, "apply", end.result):
                    self.statusBar().showMessage(f"Mask loaded from {path.name}.", 5000)
                self._edits_requested(entry)
            elif end.state is JobState.FAILED:
                show_error(self, "Could not load the mask", end.message, end.details)

        return self.output.submit("load-mask", read, on_end=ended)

    def export_edits(self) -> None:
        entry = self.current_entry()
        if entry is None or not entry.edits:
            self.statusBar().showMessage("No edits to export for this image.", 5000)
            return
        folder = entry.source.parent if isinstance(entry.source, Path) else None
        start = Path(folder or self.settings.last_save_folder or Path.home())
        path, _ = QFileDialog.getSaveFileName(
            self,
            "Export edits",
            str(start / f"{Path(entry.name).stem}-edits.json"),
            "bgremover edits (*.json)",
        )
        if path:
            self.export_edits_to(entry, Path(path))

    def export_edits_to(self, entry: QueueEntry, path: Path) -> bool:
        """Write ``entry``'s edits (JSON, atomically): what ``bgremover remove PHOTO -o OUT
        --edits FILE`` applies."""
        if not entry.edits:
            return False
        text = entry.edits.to_json().encode("utf-8")
        try:
            write_atomically(path, lambda fh: fh.write(text))
        except BgRemoverError as exc:
            show_error(self, "Could not export the edits", app_message(exc))
            return False
        self.statusBar().showMessage(f"Edits exported to {path}.", 5000)
        return True

    # ------------------------------------------------------------------ batch
    def open_batch(self, folder: Path | None = None) -> BatchDialog:
        if self._batch_dialog is None:
            dialog = BatchDialog(
                self, str(folder or self.settings.last_folder), self.settings.last_output_folder
            )
            dialog.startRequested.connect(self.start_batch)
            dialog.cancelRequested.connect(self.cancel_batch)
            self._batch_dialog = dialog
        elif folder is not None:
            self._batch_dialog.input_edit.setText(str(folder))
        self._batch_dialog.show_settings(self.settings)
        self._batch_dialog.show()
        self._batch_dialog.raise_()
        return self._batch_dialog

    def start_batch(self, src: Path, dst: Path, overwrite: bool) -> Job | None:
        dialog = self._batch_dialog
        assert dialog is not None
        if self._batch_job is not None:
            return None  # one batch at a time; Start is disabled while one runs
        problem = self.export_problem(self.settings.output_format)
        if problem:
            show_error(dialog, "Batch not started", f"The batch was not started. {problem}")
            return None
        options, config = self.settings.compose(), self.settings.engine()
        edits = tuple(
            (e.source.resolve(), e.edits)
            for e in self.queue.entries()
            if isinstance(e.source, Path) and e.edits
        )
        request = BatchRequest(
            (src,), dst, config, options, self.settings.output_format, overwrite, edits
        )

        def progress(job_id: int, payload: object) -> None:
            if isinstance(payload, BatchProgress):
                if payload.kind == "started":  # the folders were accepted: remember them
                    self._apply(last_folder=str(src), last_output_folder=str(dst))
                dialog.on_progress(payload)
            else:
                self.jobs.report_progress(job_id, payload)

        def ended(end: JobEnd) -> None:
            self._batch_job = None
            dialog.on_end(end)
            if end.details:
                show_error(self, "bgremover", end.message, end.details)

        job = self.engine.submit(
            "batch",
            lambda ctx: self.worker.batch(ctx, request),
            tag=("batch", None, config),
            on_end=ended,
            on_progress=progress,
            after=self.jobs.prepare(config),
        )
        self._batch_job = job.id
        dialog.set_running(True)
        return job

    def cancel_batch(self) -> None:
        """The batch dialog's Cancel: this batch's job, and nothing else."""
        if self._batch_job is not None:
            self.engine.cancel(self._batch_job)


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
    assert isinstance(app, QApplication)
    app.setApplicationName("bgremover")
    app.setOrganizationName("bgremover")
    app.setApplicationVersion(__version__)
    app.setWindowIcon(application_icon())
    return app


def application_icon() -> QIcon:
    return QIcon(str(Path(__file__).with_name("icon.png")))
