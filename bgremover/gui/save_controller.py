"""Save, Save Mask and Copy of the image shown: what is written, where, and when.

What is saved or copied is what the Result view shows for the current settings:
a result still being brought up to changed settings is written once it is (the
job waits for that one), and one whose edits are still being applied is written
once they are. Files are written atomically on the output thread; the photo a
cutout was made from is never replaced. The status bar, or an error box, says
how it went. Save Selected / Save All are :mod:`~bgremover.gui.save_many`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtGui import QGuiApplication, QImage
from PySide6.QtWidgets import QFileDialog, QMessageBox

from ..engine.pipeline import Result
from ..export.output import FORMATS, format_for_path
from ..touchup.edit import Move
from .dialogs import show_error
from .entry import QueueEntry, Status
from .host import Host
from .jobs import Job, JobEnd, JobState
from .results import Processed, Saved
from .settings import Settings
from .wording import app_words
from .worker import composed_image, save


def export_problem(settings: Settings, fmt: str, mask_only: bool = False) -> str:
    """Why ``settings``' export cannot be written as a ``fmt`` file, in words (what is
    wrong and what to do); "" when it can."""
    settings = replace(settings, output_format=fmt)
    if mask_only:
        settings = replace(settings, mask_only=True)
    problem = settings.export_problem()
    if problem is None:
        return ""
    return f"{problem.message} {problem.fix}".strip()


class SaveController(QObject):
    """Save, Save Mask and Copy for the window (File menu), on the output thread."""

    def __init__(self, host: Host) -> None:
        super().__init__(host.window())
        self.host = host
        #: Per image id: what waits for its edits being applied (a save, a copy).
        self._after_edits: dict[int, list[Callable[[], object]]] = {}
        host.jobs.edited.connect(self._on_edited)

    def _on_edited(self, entry: QueueEntry, _box: object, _move: Move) -> None:
        """The saves and copies asked for while ``entry``'s edits were applied run now."""
        if not self.host.jobs.edits_busy(entry):
            for later in self._after_edits.pop(entry.item_id, []):
                later()

    def why_nothing_to_save(self, entry: QueueEntry | None) -> str:
        """Why there is no output to save or copy for ``entry``; "" when there is."""
        if entry is None:
            return "Nothing to save yet: open or drop a photo first."
        if entry.status is Status.FAILED:
            return f"{entry.name} could not be processed, so there is nothing to save."
        if entry.status is Status.STOPPED:
            how = app_words(" {reprocess} makes its cutout.")
            return f"{entry.name} was not processed.{how}"
        if entry.processed is None or entry.cutout.job is not None:
            return f"{entry.name} is still being processed; save it when it shows done."
        return ""

    def default_save_path(self, entry: QueueEntry, mask_only: bool) -> Path:
        """``NAME-cutout.png`` (or ``NAME-mask.png``) in the folder saved to last, else
        next to the photo: never the photo's own name. (A batch's output folder is the
        batch dialog's, not Save's.)"""
        fmt = FORMATS[self.host.settings.output_format]
        stem = Path(entry.name).stem + ("-mask" if mask_only else "-cutout")
        source_folder = entry.source.parent if isinstance(entry.source, Path) else None
        folder = (
            self.host.settings.last_save_folder or source_folder or self.host.settings.last_folder
        )
        return Path(folder or Path.home()) / f"{stem}{fmt.extension}"

    def save_cutout(self) -> None:
        self._save(mask_only=False)

    def save_mask(self) -> None:
        self._save(mask_only=True)

    def _save(self, mask_only: bool) -> None:
        entry = self.host.current_entry()
        reason = self.why_nothing_to_save(entry)
        if reason or entry is None:
            self.host.statusBar().showMessage(reason, 6000)
            return
        chosen = FORMATS[self.host.settings.output_format]
        filters = [chosen, *(f for f in FORMATS.values() if f is not chosen)]
        start = str(self.default_save_path(entry, mask_only))
        while True:
            # bgremover asks before replacing a file itself, after it has refused the
            # photo's own name: Qt's own question would come first and offer that.
            path, _ = QFileDialog.getSaveFileName(
                self.host.window(),
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
                    self.host.window(),
                    "Choose another name",
                    f"{target.name} is the original photo. bgremover never replaces it: "
                    "choose another name.",
                )
                start = str(self.default_save_path(entry, mask_only))
                continue
            if target.exists():
                answer = QMessageBox.question(
                    self.host.window(),
                    "Replace the file?",
                    f"{target.name} already exists in {target.parent}. Replace it?",
                    QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                    QMessageBox.StandardButton.No,
                )
                if answer != QMessageBox.StandardButton.Yes:
                    start = str(target)
                    continue
            chosen_fmt = format_for_path(target)
            if not mask_only and chosen_fmt and chosen_fmt.name != self.host.settings.output_format:
                # Another format chosen in the dialog: it becomes the setting, so that the
                # view (a lossy format's pixels) is what is written.
                self.host.apply_settings(output_format=chosen_fmt.name, preset="")
            self.save_result(entry, target, mask_only)
            return

    def save_target(self, path: Path) -> Path:
        """The file a save to ``path`` writes: the chosen format's ending is added to a
        name without one the writers know."""
        if format_for_path(path) is None:
            return path.with_name(path.name + FORMATS[self.host.settings.output_format].extension)
        return path

    def save_result(
        self, entry: QueueEntry, path: Path, mask_only: bool = False
    ) -> Job[Saved] | None:
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
            show_error(
                self.host.window(),
                "Not saved",
                f"{path} is the original photo; choose another name.",
            )
            return None
        problem = export_problem(self.host.settings, fmt.name, mask_only)
        if problem:
            self.host.statusBar().showMessage(f"Not saved: {problem}", 10000)
            show_error(self.host.window(), "Not saved", f"{path.name} was not saved. {problem}")
            return None
        if self.host.jobs.edits_busy(entry):
            # What is saved is what the edits asked for make: saved once they are applied.
            self.host.statusBar().showMessage(f"Saving {path.name} once the edits are applied…")
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
        options, name = self.host.settings.compose(True if mask_only else None), fmt.name
        edits = entry.edits or None  # applied: the edits the result saved has
        config = self.host.settings.engine()  # what the result is brought up to: its record says so

        def ended(end: JobEnd[Saved]) -> None:
            if end.ok:
                saved = entry.processed  # brought up to date before the save ran
                made_with = (saved.config, saved.options, edits) if saved else None
                entry.last_save.saved(path, made_with)
                self.host.queue.changed(entry)
                self.host.apply_settings(last_save_folder=str(path.parent))
                self.host.update_title()
                self.host.statusBar().showMessage(f"Saved {path}", 5000)
            elif end.state is JobState.FAILED:
                technical = getattr(end.error, "technical", "")
                show_error(
                    self.host.window(), "Could not save", end.message, end.details, technical
                )
            elif end.blocked_by is not None:
                self.host.statusBar().showMessage(
                    "Not saved: the settings changed; save again.", 6000
                )

        self.host.statusBar().showMessage(f"Saving {path.name}…")
        return self.host.output.submit(
            "save",
            lambda ctx: save(ctx, current(), options, path, name, config, edits),
            tag=path,
            on_end=ended,
            after=pending,
        )

    def _up_to_date(
        self, entry: QueueEntry | None, verb: str
    ) -> tuple[Job[Processed] | None, Callable[[], Result]] | None:
        """For writing ``entry``'s output: the job bringing its result up to the settings
        (None when it is) and a function giving that result on the output thread once it
        ran; None, with the reason in the status bar, when there is nothing to write yet."""
        reason = self.why_nothing_to_save(entry)
        pending = self.host.jobs.update(entry) if entry is not None and not reason else None
        if entry is not None and pending is not None and pending.kind != "restage":
            reason = f"{entry.name} is being made again with the new model settings; save it "
            reason += "when it shows done."
            self.host.show_current()  # the pane says so too
        if reason or entry is None or entry.processed is None:
            self.host.statusBar().showMessage(reason.replace("save", verb), 6000)
            return None
        earlier = entry.processed

        def current() -> Result:
            end = pending.end if pending is not None else None
            return (end.result if end is not None and end.ok else earlier).result

        return pending, current

    def copy_cutout(self) -> Job[QImage] | None:
        """Copy what the Result view shows (the output for the current settings)."""
        entry = self.host.current_entry()
        if entry is not None and self.host.jobs.edits_busy(entry):
            self._after_edits.setdefault(entry.item_id, []).append(self.copy_cutout)
            return None
        ready = self._up_to_date(entry, "copy")
        if ready is None:
            return None
        pending, current = ready
        options = self.host.settings.compose()

        def ended(end: JobEnd[QImage]) -> None:
            if end.ok:
                QGuiApplication.clipboard().setImage(end.result)
                what = "Mask" if options.mask_only else "Cutout"
                self.host.statusBar().showMessage(f"{what} copied to the clipboard.", 4000)

        return self.host.output.submit(
            "copy",
            lambda ctx: composed_image(ctx, current(), options),
            on_end=ended,
            after=pending,
        )
