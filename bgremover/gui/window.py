"""The main window: it makes the widgets and the controllers, and connects them.

What the app knows lives in the queue model (queue.py) and the settings; what it does
runs as jobs (jobs.py) on two threads: the engine thread (cut-outs, comparisons, batches,
model checks; it owns the ONNX Runtime sessions) and the output thread (saving, copying).
What the user does is the controllers' (``*_controller.py``, their actions made by menus/);
this class holds the settings and draws the image shown, and is their :class:`~.host.Host`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QFileOpenEvent, QIcon
from PySide6.QtWidgets import QApplication, QMainWindow, QSplitter, QTabWidget

from .. import __version__
from ..network.store import ModelStore
from .batch_controller import BatchController
from .compare import ComparisonView
from .compare_controller import CompareController
from .edit_controller import EditController
from .editing import edit_mode_hint
from .entry import QueueEntry, Status
from .jobs import JobRunner
from .menus.edit import EditMenu
from .menus.file import FileMenu
from .menus.help import HelpMenu
from .menus.touchup import TouchUpMenu
from .menus.view import ViewMenu
from .model_controller import ModelController
from .open_controller import OpenController
from .queue import QueueModel
from .queue_jobs import QueueJobs
from .queue_pane import QueuePane
from .result_page import ResultPage, detail_text, made_text
from .save_controller import SaveController
from .save_many import SaveMany
from .settings import Settings, load_settings, save_settings
from .settings_panel import SettingsPanel
from .status import StatusLine
from .unsaved import SAVE_HINT, ask_before_losing, unsaved_words
from .wording import use_menus
from .worker import Worker


class MainWindow(QMainWindow):
    """The app's window; it is the :class:`~.host.Host` its controllers work through."""

    #: Emitted when every queued image (and a requested comparison) has finished.
    settled = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("bgremover")
        self.setAcceptDrops(True)
        self.settings: Settings = load_settings()
        self.store = ModelStore()
        self.queue = QueueModel(self)
        #: Asked before anything drops unsaved results or edits (quitting, removing,
        #: clearing the queue); tests that close many windows answer it themselves.
        self.confirm_quit = True

        self.worker = Worker(self.store)
        self.engine = JobRunner("engine", self)
        self.output = JobRunner("output", self)
        self.jobs = QueueJobs(
            self.queue, self.worker, self.engine, self.output, lambda: self.settings
        )
        self.jobs.settled.connect(self.settled)
        # An image added that fails gives the selection away before it would be shown.
        self.opening = OpenController(self)
        self.jobs.changed.connect(self._on_entry_changed)

        self._build_central()
        # Before the saving controller: an edit's end is drawn before what waited for it.
        self.editing = EditController(self, self.result_page, self.detail)
        self.panel = SettingsPanel(self.settings, self.store)
        self.panel.changed.connect(lambda changes: self.apply_settings(**changes))
        self.result_page.notice.tryModel.connect(self.panel.choose_model)  # Try Best
        self.export_panel = self.panel.export
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.panel.in_dock(self))
        status = self.status_line = StatusLine(self.statusBar(), self.jobs, self.engine)
        self.preparation, self.provider_label = status.preparation, status.provider_label
        self.saving = SaveController(self)
        self.batches = BatchController(self)
        self.comparing = CompareController(self, self.compare, self.tabs)
        self.model_setting = ModelController(self, self.panel, self.compare)
        # Save Selected / Save All: the folder, the job, its progress and its report.
        self.save_many = SaveMany(self)
        self.save_many.changed.connect(self.update_enabled)
        self.save_many.changed.connect(self.update_title)
        self._build_actions()
        # Edit mode's keys stay in the status bar while the mode lasts, under any message.
        status.hint_while(self.touchup_menu.edit_mode, edit_mode_hint)
        self.model_setting.forget_missing_model_file()
        self.compare.set_current_model(self.settings.model)
        self.show_current()  # the empty window: the drop zone
        # The before/after key, wherever the focus is in this window.
        running_app().installEventFilter(self.result_page)
        self.resize(1280, 800)

    # ------------------------------------------------------------------ layout
    def _build_central(self) -> None:
        left = QueuePane(self.queue)
        self.queue_view, self.detail = left.view, left.detail
        self.queue_view.selectionModel().currentChanged.connect(lambda *_: self.refresh())
        self.queue_view.selectionModel().selectionChanged.connect(lambda *_: self.update_enabled())
        self.result_page = ResultPage()
        self.result_page.modeChosen.connect(self.set_view_mode)
        self.result_page.holdChanged.connect(self.hold_original)
        self.viewer, self.drop_zone = self.result_page.viewer, self.result_page.drop_zone
        self.drop_zone.open_files.clicked.connect(lambda: self.opening.open_files())
        self.drop_zone.open_folder.clicked.connect(lambda: self.opening.open_folder())
        self.compare = ComparisonView(self.store)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.result_page, "Result")
        self.tabs.addTab(self.compare, "Compare A | B")
        self.tabs.currentChanged.connect(lambda *_: self.refresh())

        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(self.tabs)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([260, 1000])
        self.setCentralWidget(splitter)

    def _build_actions(self) -> None:
        self.file_menu = FileMenu(
            self,
            self.opening,
            self.saving,
            lambda: self.save_many.choose_folder_and_save(self.selected_entries()),
            lambda: self.save_many.choose_folder_and_save(self.queue.entries()),
            self.batches,
            self.model_setting,
        )
        self.edit_menu = EditMenu(self, self.reprocess, self.remove_selected, self.clear_queue)
        self.view_menu = ViewMenu(
            self,
            self.set_view_mode,
            lambda: self.compare.a_view if self.comparing.shown else self.viewer,
            self.comparing,
            self.show_result_tab,
        )
        self.touchup_menu = TouchUpMenu(self, self.editing)
        self.editing.use_actions(self.touchup_menu)
        self.result_page.add_edit_tools(self.touchup_menu.edit_button, self.touchup_menu.edit_bar)
        self.help_menu = HelpMenu(self, application_icon())
        # The app's advice on failures, and its notes, name these menu items by their
        # real texts; the settings pane, made before the menus, names them now.
        use_menus(reprocess=self.edit_menu.reprocess, model_file=self.file_menu.model_file)
        self.panel.name_menus()

    # ------------------------------------------------------------------ leaving
    def unsaved_entries(self) -> list[QueueEntry]:
        """Images whose result (or edits) would be lost on quitting: done, not saved since."""
        return [e for e in self.queue.entries() if e.unsaved]

    def _quit_question(self) -> str:
        """What quitting now would lose, in words; "" when nothing."""
        parts = [
            unsaved_words(self.queue.entries()),
            self.save_many.quit_words(),
            self.batches.quit_words(),
        ]
        return " ".join(p for p in parts if p)

    def may_drop(self, entries: list[QueueEntry], title: str, verb: str) -> bool:
        """Whether ``entries`` may be dropped: the user is asked first when that would lose
        a cutout not saved, or edits (the same question as quitting's)."""
        question = unsaved_words(entries) if self.confirm_quit else ""
        return not question or ask_before_losing(self, title, question, verb, SAVE_HINT)

    def closeEvent(self, event: QCloseEvent) -> None:
        question = self._quit_question() if self.confirm_quit else ""
        hint = SAVE_HINT if self.unsaved_entries() else ""
        if question and not ask_before_losing(self, "Quit bgremover?", question, "Quit", hint):
            event.ignore()
            return
        running_app().removeEventFilter(self.result_page)
        # Stop the engine's work (a batch finishes the images it is writing); saves the
        # user asked for still complete. Then leave.
        self.engine.shutdown()
        self.output.shutdown(cancel=False)
        self.worker.pool.clear()  # the sessions' memory goes now, not when Python collects
        save_settings(self.settings)
        self.status_line.close()
        # Drop the results (and their QImages) while Qt is still fully alive,
        # rather than leaving them to garbage collection at interpreter exit.
        self.queue.clear()
        self.compare.clear()
        super().closeEvent(event)

    # ------------------------------------------------------------------ settings
    def apply_settings(self, **changes: Any) -> None:
        """Take new settings, remember them, and apply them at once.

        Images still waiting run with them; the image shown is brought up to them now,
        running again only the stages they affect (see :meth:`QueueJobs.update`); the
        other finished images are when they are shown or saved.
        """
        before = self.settings
        if "model" in changes and "family" not in changes:
            changes["family"] = ""  # the family a model file was said to be stays with it
        after = self.settings = replace(before, **changes)
        save_settings(after)
        self.batches.show_settings(after)
        self.panel.show_settings(after)
        self.compare.set_current_model(after.model)
        engine = after.engine() != before.engine()
        if engine:
            self.jobs.requeue_waiting()
        if engine or (after.compose(), after.output_format) != (
            before.compose(),
            before.output_format,
        ):
            self.request_current()
            self.show_current()
        if engine:
            self.jobs.release_for_settings()  # a download or build for the old settings

    # ------------------------------------------------------------------ input
    def add_paths(self, paths: list[Path]) -> int:
        """Queue image files; folders are walked (see :meth:`OpenController.add_paths`)."""
        return self.opening.add_paths(paths)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() or event.mimeData().hasImage():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        self.opening.drop(event.mimeData())
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
        self.refresh()
        self.jobs.check_settled()

    def clear_queue(self) -> None:
        """Empty the queue (asking first when that loses unsaved work)."""
        if not self.may_drop(self.queue.entries(), "Clear the queue?", "Clear"):
            return
        for entry in self.queue.entries():
            self.jobs.stop(entry)
        self.queue.clear()
        self.refresh()
        self.jobs.check_settled()

    def reprocess(self) -> None:
        """Every image again with the current settings (the one way finished ones change)."""
        self.jobs.reprocess()
        self.request_current()
        self.show_current()

    def comparison_current(self, entry: QueueEntry) -> bool:
        """``entry`` has the comparison of the sides chosen now."""
        return self.comparing.is_current(entry)

    # ------------------------------------------------------------------ display
    def _on_entry_changed(self, entry: QueueEntry) -> None:
        """An image's job ended or started: the image shown is redrawn (and brought up to
        settings changed while it was made)."""
        if entry is not self.current_entry():
            self.update_title()
            return
        if entry.status is Status.DONE:
            self.jobs.update(entry)  # a result made with settings changed meanwhile
        if not self.jobs.edits_busy(entry):
            self.editing.tools.clear_pending()  # a remade result has the edits drawn
        self.show_current()

    def refresh(self) -> None:
        """The user looks at another image or tab: start what it needs, then show it."""
        self.opening.auto_selected = False
        self.editing.tools.clear_pending()  # the previous image's strokes apply to it still
        self.queue.current = self.current_entry()
        self.request_current()
        self.show_current()

    def request_current(self) -> None:
        """Submit the work the current view needs and does not have (never more): its
        result, made again if memory was freed, brought up to the settings if they
        changed, and its comparison on the Compare tab."""
        entry = self.current_entry()
        if entry is None:
            return
        if entry.unloaded and entry.cutout.job is None:
            self.jobs.process(entry)  # its result was dropped to bound memory: remake it
        elif entry.status is Status.DONE:
            self.jobs.update(entry)
        self.comparing.request(entry)

    def set_view_mode(self, mode: str) -> None:
        self.result_page.mode = mode
        self.result_page.show_mode(mode)
        self.show_result_tab()
        self.show_current()

    def show_result_tab(self) -> None:
        self.tabs.setCurrentIndex(0)

    def hold_original(self, held: bool) -> None:
        """Before / after: while held, the Result view shows the photo instead."""
        if held != self.result_page.holding:
            self.result_page.holding = held
            self.show_current()

    def show_current(self) -> None:
        """Draw the current entry as the queue knows it. Starts nothing."""
        entry = self.current_entry()
        self.update_enabled()
        self.update_title()
        p = entry.processed if entry is not None else None
        self.export_panel.show_enlarged(p.enlarged if p is not None else None)
        self.detail.setText(detail_text(entry, len(self.queue), self.settings))
        self.provider_label.setText(made_text(p.result, p.ran) if p is not None else "")
        if p is None:
            self.result_page.show_no_image(entry, len(self.queue))
        if entry is None:
            self.compare.clear()
            return
        if p is not None:
            self.queue.keep_loaded(entry)
            image, overlay = self.editing.display_images(p)
            # In edit mode, what is shown without the overlay is redrawn edit by edit.
            editable = self.editing.edit_mode and overlay is None
            self.result_page.show_image(image, overlay, editable)
            self.result_page.notice.show_for(None if self.editing.edit_mode else entry)
            self.panel.show_fallbacks(p.result.fallbacks)
        if self.comparing.shown:
            self.comparing.show(entry)

    def update_title(self) -> None:
        entry = self.current_entry()
        # "[*]" is where Qt marks unsaved work (an asterisk; a dot in the close button on
        # macOS). The mark is the image shown's, as in any editor; quitting counts the queue's.
        name = f"{entry.name.replace('[*]', '[**]')}[*] — " if entry is not None else ""
        self.setWindowTitle(f"{name}bgremover")
        self.setWindowModified(entry is not None and entry.shown_unsaved)

    def update_enabled(self) -> None:
        selected, queued = bool(self.selected_entries()), len(self.queue) > 0
        self.edit_menu.update_enabled(selected, queued)
        self.file_menu.update_enabled(selected, queued, self.save_many.running)
        self.editing.update_enabled(self.current_entry())


class Application(QApplication):
    """The app object; turns the macOS "open this file" events into a signal."""

    fileOpened = Signal(Path)

    def event(self, event: QEvent) -> bool:
        if isinstance(event, QFileOpenEvent):  # PySide gives a FileOpen event its class
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


def running_app() -> QApplication:
    """The running application (a window exists only once it does)."""
    running = QApplication.instance()
    assert isinstance(running, QApplication)
    return running


def application_icon() -> QIcon:
    return QIcon(str(Path(__file__).with_name("icon.png")))
