"""Dialogs: errors with details, and the batch folder dialog."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QPoint, Qt, QUrl, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDesktopServices,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QKeySequence,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..engine.batch import counts_words
from ..export.options import OPTIONS, ExportOption
from ..export.output import FORMATS
from ..network.families import FAMILIES
from ..network.models import REGISTRY
from .jobs import JobEnd, JobState
from .results import BatchProgress
from .settings import Settings


def ask_family(parent: QWidget | None, filename: str, candidates: tuple[str, ...]) -> str:
    """Ask which family a model file belongs to, among ``candidates`` (its signature fits
    each); "" when the user cancels."""
    items = [f"{name}: {FAMILIES[name].description}" for name in candidates]
    item, ok = QInputDialog.getItem(
        parent,
        "Which kind of model is this?",
        f"{filename} could be a model of several families, which prepare photos "
        "differently.\nChoose the one it was trained as (its author's documentation says):",
        items,
        0,
        False,
    )
    return candidates[items.index(item)] if ok and item in items else ""


def show_error(
    parent: QWidget | None,
    title: str,
    message: str,
    details: str = "",
    technical: str = "",
) -> QMessageBox:
    """An error box that blocks nothing; a bug's traceback sits behind "Show Details",
    and so do a library's own words for an expected failure (``technical``).

    Non-modal: the window stays usable, other work goes on. The same message is
    never shown twice at once: while a box with this title and text is open, that
    box is raised instead of opening another (one model failure reported by several
    queued images is one box).
    """
    if parent is not None:
        for box in parent.findChildren(QMessageBox):
            if box.isVisible() and box.windowTitle() == title and box.text() == message:
                box.raise_()
                return box
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning if not details else QMessageBox.Icon.Critical)
    box.setWindowTitle(title)
    box.setText(message)
    if details:
        box.setInformativeText("This looks like a bug in bgremover; the details help us fix it.")
        box.setDetailedText(details)
    elif technical:
        box.setDetailedText(technical)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.setWindowModality(Qt.WindowModality.NonModal)
    box.show()
    return box


def _eta(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def _counts(p: BatchProgress) -> str:
    """A batch's counts as the command line says them, every count shown: "2 written,
    1 redone: settings changed, 0 already done, 0 failed"."""
    return counts_words(p.done, p.redone, p.skipped, p.failed, every=True)


def settings_summary(settings: Settings) -> str:
    """What a batch started now makes, in one line: model, precision, format, then each
    export option set, named by its record (a masks-only batch has no background)."""
    model = settings.model if settings.model in REGISTRY else Path(settings.model).name
    fmt = FORMATS.get(settings.output_format)
    precision = settings.precision
    if precision == "int8" and settings.int8_guard:
        precision += " (fp32 where int8 is unsure)"
    parts = [model, precision, f"{fmt.label if fmt else settings.output_format} files"]
    if settings.preset:
        parts.append(f"preset {settings.preset}")
    values = settings.values()
    values.pop("format", None)
    if settings.mask_only:
        parts.append("masks only (greyscale)")
        values.pop("background", None)
    elif "background" not in values:
        parts.append("transparent background")
    parts += [option_words(OPTIONS[key], value) for key, value in values.items()]
    if not settings.refine:
        parts.append("edges not refined")
    if settings.providers != "auto":
        parts.append(f"provider {settings.providers}")
    return " · ".join(parts)


def option_words(option: ExportOption, value: Any) -> str:
    """An export option set to ``value``, as the app names it: its record's label (alone
    for a switch that is on), then the value, a file by its name ("background wall.jpg")."""
    label = option.label.rstrip(":")
    label = label[:1].lower() + label[1:]
    if value is True:
        return label
    items = value if isinstance(value, list) else [value]
    shown = (Path(v).name if Path(str(v)).is_absolute() else str(v) for v in items)
    return f"{label} {' + '.join(shown)}"


class FailureList(QTreeWidget):
    """The batch's failures: one row per file, its name and the reason, each in a column.

    The full path is in the name's tooltip; Ctrl+C (or the context menu) copies the
    selected rows, or every row, as "path<Tab>reason" lines.
    """

    PATH_ROLE = Qt.ItemDataRole.UserRole

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setColumnCount(2)
        self.setHeaderLabels(["File", "Reason"])
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.header()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.setColumnWidth(0, 200)
        self.copy_action = QAction("Copy", self)
        self.copy_action.setShortcut(QKeySequence.StandardKey.Copy)
        self.copy_action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        self.copy_action.triggered.connect(self.copy_selected)
        self.addAction(self.copy_action)
        self.copy_all_action = QAction("Copy All", self)
        self.copy_all_action.triggered.connect(self.copy_all)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)

    def add(self, path: Path | None, reason: str, root: Path | None = None) -> QTreeWidgetItem:
        """A row for ``path``, named relative to ``root`` (the input folder) when inside it."""
        full = str(path) if path is not None else ""
        for prefix in (f"{full}: ", f"{path.name}: " if path is not None else ""):
            if prefix and reason.startswith(prefix):  # the path has its own column
                reason = reason[len(prefix) :]
                reason = reason[:1].upper() + reason[1:]
                break
        name = full
        if path is not None:
            try:
                name = str(path.relative_to(root)) if root is not None else path.name
            except ValueError:
                name = path.name
        item = QTreeWidgetItem([name, reason])
        item.setData(0, self.PATH_ROLE, full)
        item.setToolTip(0, full)
        item.setToolTip(1, reason)
        self.addTopLevelItem(item)
        return item

    def rows(self, items: list[QTreeWidgetItem] | None = None) -> str:
        chosen = items if items is not None else self._all()
        return "\n".join(f"{i.data(0, self.PATH_ROLE)}\t{i.text(1)}" for i in chosen)

    def _all(self) -> list[QTreeWidgetItem]:
        items = (self.topLevelItem(i) for i in range(self.topLevelItemCount()))
        return [item for item in items if item is not None]

    def copy_selected(self) -> None:
        """The selected rows to the clipboard (all of them when none is selected)."""
        chosen = [i for i in self._all() if i.isSelected()] or self._all()
        QGuiApplication.clipboard().setText(self.rows(chosen))

    def copy_all(self) -> None:
        QGuiApplication.clipboard().setText(self.rows())

    def _menu(self, pos: QPoint) -> None:
        menu = QMenu(self)
        menu.addAction(self.copy_action)
        menu.addAction(self.copy_all_action)
        menu.exec(self.viewport().mapToGlobal(pos))


class BatchDialog(QDialog):
    """Pick an input and an output folder, run the engine's batch, follow it, cancel it."""

    startRequested = Signal(Path, Path, bool)  # input, output, overwrite
    #: The user asked to stop the running batch (Cancel, or closing the dialog).
    cancelRequested = Signal()

    def __init__(self, parent: QWidget | None = None, input_dir: str = "", output_dir: str = ""):
        super().__init__(parent)
        self.setWindowTitle("Batch: cut out a folder")
        self.setAcceptDrops(True)
        self.input_edit = QLineEdit(input_dir)
        self.output_edit = QLineEdit(output_dir)
        self.input_edit.setPlaceholderText("folder of photos (or drop one here)")
        self.output_edit.setPlaceholderText("where the cutouts go; the folder tree is mirrored")
        self.overwrite = QCheckBox("Redo images whose output already exists")
        self.settings_label = QLabel("the app's current settings")
        self.settings_label.setWordWrap(True)
        self.settings_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.settings_label.setToolTip(
            "A batch uses the app's settings; change them in the Settings pane before Start."
        )
        form = QFormLayout()
        form.addRow("Input folder:", self._with_browse(self.input_edit))
        form.addRow("Output folder:", self._with_browse(self.output_edit))
        form.addRow("", self.overwrite)
        form.addRow("Settings:", self.settings_label)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m")
        self.status = QLabel("Pick the folders, then Start.")
        self.status.setWordWrap(True)
        self.failures_label = QLabel()
        self.failures = FailureList()
        self.failures_label.setBuddy(self.failures)
        self.failures_label.hide()
        self.failures.hide()
        self.buttons = QDialogButtonBox()
        self.open_button = QPushButton("Open Output Folder")
        self.open_button.setToolTip("Show the cutouts in the file manager")
        self.open_button.hide()
        self.start_button = self.buttons.addButton("Start", QDialogButtonBox.ButtonRole.AcceptRole)
        self.cancel_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.close_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self.cancel_button.setEnabled(False)
        self.open_button.clicked.connect(self.open_output_folder)
        self.start_button.clicked.connect(self._start)
        self.cancel_button.clicked.connect(self._cancel)
        self.close_button.clicked.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(self.failures_label)
        layout.addWidget(self.failures, 1)
        layout.addStretch(0)  # the room the failures take once there are some
        bottom = QHBoxLayout()
        bottom.addWidget(self.open_button)
        bottom.addStretch(1)
        bottom.addWidget(self.buttons)
        layout.addLayout(bottom)
        self.resize(640, 280)
        self.running = False
        self._started_at = 0.0
        self._last = BatchProgress("started")  # the latest progress, for the counts
        #: The folders of the batch started last.
        self._input: Path | None = None
        self._output: Path | None = None
        #: The settings line to show once the running batch (which keeps its own) ends.
        self._next_settings: str | None = None

    def show_settings(self, settings: Settings) -> None:
        """Show what a batch started now will use. The window calls this when it opens the
        dialog and whenever the settings change; a running batch keeps showing its own."""
        text = settings_summary(settings)
        if self.running:
            self._next_settings = text
            return
        self.settings_label.setText(text)
        model = settings.model
        self.settings_label.setToolTip(
            (f"Model file: {model}\n" if model not in REGISTRY else "")
            + "A batch uses the app's settings; change them in the Settings pane before Start."
        )

    def _with_browse(self, edit: QLineEdit) -> QWidget:
        row = QWidget()
        lay = QHBoxLayout(row)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(edit)
        button = QPushButton("Browse…")
        button.clicked.connect(lambda: self._browse(edit))
        lay.addWidget(button)
        return row

    def _browse(self, edit: QLineEdit) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Choose a folder", edit.text())
        if folder:
            edit.setText(folder)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        for url in event.mimeData().urls():
            if url.isLocalFile() and Path(url.toLocalFile()).is_dir():
                self.input_edit.setText(url.toLocalFile())
                break

    def _start(self) -> None:
        src, dst = self.input_edit.text().strip(), self.output_edit.text().strip()
        if not src or not Path(src).is_dir():
            self.status.setText("The input folder does not exist: choose a folder of photos.")
            return
        if not dst:
            self.status.setText("Choose an output folder.")
            return
        if Path(src).resolve() == Path(dst).resolve():
            self.status.setText(
                "The output folder is the input folder: the cutouts would mix with the "
                "photos they came from. Choose another output folder."
            )
            return
        self.failures.clear()
        self.failures.hide()
        self.failures_label.hide()
        self.open_button.hide()
        self._input, self._output = Path(src), Path(dst)
        self.startRequested.emit(Path(src), Path(dst), self.overwrite.isChecked())

    def _cancel(self) -> None:
        self.status.setText("Cancelling after the images being written…")
        self.cancel_button.setEnabled(False)
        self.cancelRequested.emit()

    def set_running(self, running: bool) -> None:
        """Running: Start is off and Cancel on, and the other way round. The window calls
        this with True when it has started the batch's job, and :meth:`on_end` with its end."""
        self.running = running
        self.start_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        if running:
            self.status.setText("Starting…")
            self._last = BatchProgress("started")
        elif self._next_settings is not None:
            self.settings_label.setText(self._next_settings)
            self._next_settings = None

    def on_progress(self, p: BatchProgress) -> None:
        self._last = p
        if p.kind == "started":
            self._started_at = time.monotonic()
            self.progress.setRange(0, max(p.total, 1))
            self.progress.setValue(0)
            self.status.setText(f"{p.total} images to process…")
            for path, reason in p.problems:
                self._add_failure(path, reason)
            return
        if p.kind in ("done", "skipped", "failed"):
            count = p.done + p.skipped + p.failed  # items complete out of order: count them
            self.progress.setValue(count)
            processed = max(p.done + p.failed, 1)
            left = (time.monotonic() - self._started_at) / processed * (p.total - count)
            self.status.setText(
                f"{count} / {p.total} · {_counts(p)} · about {_eta(left)} left · "
                f"{p.source.name if p.source else ''}"
            )
            if p.kind == "failed":
                self._add_failure(p.source, p.reason)

    def on_end(self, end: JobEnd[BatchProgress]) -> None:
        """The batch's job ended, whichever way: the dialog is ready for the next one."""
        self.set_running(False)
        p = self._last
        cause = end.cause  # the batch's own end, or that of the model it waited for
        if end.state is JobState.DONE:
            p = end.result
            text = f"Finished in {p.elapsed:.1f} s: {_counts(p)}."
            if p.reason:
                text += f" Stopped early: {p.reason}"
            if p.note:
                text += f" {p.note}"
        elif cause.state is JobState.CANCELLED:
            text = f"Cancelled: {_counts(p)}. Finished files are complete; start again to resume."
        else:
            text = f"The batch could not run: {cause.message}"
        self.status.setText(text)
        self.open_button.setVisible(self._output is not None and self._output.is_dir())

    def open_output_folder(self) -> bool:
        """The output folder in the system's file manager; whether one was started. Where
        none can be (no file manager, no desktop), the dialog says so and gives the path,
        copied to the clipboard."""
        if self._output is None:
            return False
        if QDesktopServices.openUrl(QUrl.fromLocalFile(str(self._output))):
            return True
        QGuiApplication.clipboard().setText(str(self._output))
        self.status.setText(
            f"{self.status.text()}\nNo file manager could be started to show the folder. The "
            f"cutouts are in {self._output} (the path is copied to the clipboard)."
        )
        return False

    def _add_failure(self, path: Path | None, reason: str) -> None:
        if self.failures.isHidden():
            self.failures.show()
            self.failures_label.show()
            self.resize(self.width(), max(self.height(), 440))  # room for a few rows
        self.failures.add(path, reason, self._input)
        count = self.failures.topLevelItemCount()
        self.failures_label.setText(
            f"{count} image{'s' if count != 1 else ''} failed (Ctrl+C copies the selected rows):"
        )

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.running:
            self.cancelRequested.emit()
        super().closeEvent(event)
