"""File ▸ Batch Folder…: the batch dialog, and the one batch job it runs at a time.

A batch writes a folder's cutouts with the settings as they were when it started,
and the user's edits of photos in the queue (as Save does). It runs on the engine
thread after the model's preparation; its progress goes to the dialog, the model's
to the status bar. Quitting stops it once the images being written are finished.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject

from .dialogs import BatchDialog, show_error
from .host import Host
from .jobs import Job, JobEnd
from .results import BatchProgress, BatchRequest
from .save_controller import export_problem
from .settings import Settings


class BatchController(QObject):
    """The batch dialog and its job for the window."""

    def __init__(self, host: Host) -> None:
        super().__init__(host.window())
        self.host = host
        self._batch_dialog: BatchDialog | None = None
        self._batch_job: int | None = None

    @property
    def running(self) -> bool:
        return self._batch_job is not None

    def quit_words(self) -> str:
        """What quitting now would stop, in words; "" when no batch runs."""
        if self._batch_job is None:
            return ""
        return (
            "A batch is running: quitting stops it once the images being written are "
            "finished (start it again later to resume)."
        )

    def show_settings(self, settings: Settings) -> None:
        """The dialog (if open) shows the settings a batch would use."""
        if self._batch_dialog is not None:
            self._batch_dialog.show_settings(settings)

    def open_batch(self, folder: Path | None = None) -> BatchDialog:
        """File ▸ Batch Folder…: the batch dialog (one, kept), on ``folder`` if given."""
        if self._batch_dialog is None:
            settings = self.host.settings
            dialog = BatchDialog(
                self.host.window(),
                str(folder or settings.last_folder),
                settings.last_output_folder,
            )
            dialog.startRequested.connect(self.start_batch)
            dialog.cancelRequested.connect(self.cancel_batch)
            self._batch_dialog = dialog
        elif folder is not None:
            self._batch_dialog.input_edit.setText(str(folder))
        self._batch_dialog.show_settings(self.host.settings)
        self._batch_dialog.show()
        self._batch_dialog.raise_()
        return self._batch_dialog

    def start_batch(self, src: Path, dst: Path, overwrite: bool) -> Job[BatchProgress] | None:
        """The dialog's Start: ``src`` into ``dst`` with the current settings, and the
        edits of the queue's photos, as one engine job; None when refused."""
        dialog = self._batch_dialog
        assert dialog is not None
        if self._batch_job is not None:
            return None  # one batch at a time; Start is disabled while one runs
        problem = export_problem(self.host.settings, self.host.settings.output_format)
        if problem:
            show_error(dialog, "Batch not started", f"The batch was not started. {problem}")
            return None
        options, config = self.host.settings.compose(), self.host.settings.engine()
        edits = tuple(
            (e.source.resolve(), e.edits)
            for e in self.host.queue.entries()
            if isinstance(e.source, Path) and e.edits
        )
        request = BatchRequest(
            (src,), dst, config, options, self.host.settings.output_format, overwrite, edits
        )

        def progress(job_id: int, payload: object) -> None:
            if isinstance(payload, BatchProgress):
                if payload.kind == "started":  # the folders were accepted: remember them
                    self.host.apply_settings(last_folder=str(src), last_output_folder=str(dst))
                dialog.on_progress(payload)
            else:
                self.host.jobs.report_progress(job_id, payload)

        def ended(end: JobEnd[BatchProgress]) -> None:
            self._batch_job = None
            dialog.on_end(end)
            if end.details:
                show_error(self.host.window(), "bgremover", end.message, end.details)

        job = self.host.engine.submit(
            "batch",
            lambda ctx: self.host.worker.batch(ctx, request),
            tag=("batch", None, config),
            on_end=ended,
            on_progress=progress,
            after=self.host.jobs.prepare(config),
        )
        self._batch_job = job.id
        dialog.set_running(True)
        return job

    def cancel_batch(self) -> None:
        """The batch dialog's Cancel: this batch's job, and nothing else."""
        if self._batch_job is not None:
            self.host.engine.cancel(self._batch_job)
