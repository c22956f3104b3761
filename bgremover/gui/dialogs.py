"""Dialogs: errors with details, and the batch folder dialog."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from .jobs import JobEnd, JobState
from .worker import BatchProgress


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
        form = QFormLayout()
        form.addRow("Input folder:", self._with_browse(self.input_edit))
        form.addRow("Output folder:", self._with_browse(self.output_edit))
        form.addRow("", self.overwrite)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m")
        self.status = QLabel("Pick the folders, then Start.")
        self.status.setWordWrap(True)
        self.failures = QListWidget()
        self.failures.setToolTip("Files that failed, with the reason")
        self.failures.hide()
        self.buttons = QDialogButtonBox()
        self.start_button = self.buttons.addButton("Start", QDialogButtonBox.ButtonRole.AcceptRole)
        self.cancel_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.close_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self.cancel_button.setEnabled(False)
        self.start_button.clicked.connect(self._start)
        self.cancel_button.clicked.connect(self._cancel)
        self.close_button.clicked.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(self.failures)
        layout.addWidget(self.buttons)
        self.resize(620, 260)
        self.running = False
        self._started_at = 0.0
        self._last = BatchProgress("started")  # the latest progress, for the counts

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

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
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
                f"{count} / {p.total} · {p.done} written, {p.skipped} already done, "
                f"{p.failed} failed · about {_eta(left)} left · {p.source.name if p.source else ''}"
            )
            if p.kind == "failed":
                self._add_failure(p.source, p.reason)

    def on_end(self, end: JobEnd) -> None:
        """The batch's job ended, whichever way: the dialog is ready for the next one."""
        self.set_running(False)
        p = self._last
        cause = end.cause  # the batch's own end, or that of the model it waited for
        if end.state is JobState.DONE:
            p = end.result
            text = (
                f"Finished in {p.elapsed:.1f} s: {p.done} written, {p.skipped} already done, "
                f"{p.failed} failed."
            )
            if p.reason:
                text += f" Stopped early: {p.reason}"
        elif cause.state is JobState.CANCELLED:
            text = (
                f"Cancelled: {p.done} written, {p.skipped} already done, {p.failed} failed. "
                "Finished files are complete; start again to resume."
            )
        else:
            text = f"The batch could not run: {cause.message}"
        self.status.setText(text)

    def _add_failure(self, path: Path | None, reason: str) -> None:
        self.failures.show()
        name = str(path) if path else ""
        self.failures.addItem(reason if name and name in reason else f"{name}: {reason}")

    def closeEvent(self, event) -> None:
        if self.running:
            self.cancelRequested.emit()
        super().closeEvent(event)
