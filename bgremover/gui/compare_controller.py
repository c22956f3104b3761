"""Compare A | B: which comparison the image shown needs, and what the tab says meanwhile.

A comparison is keyed by its sides' configs (:func:`~bgremover.gui.queue_jobs.
compare_pair`): one made for other sides is dropped (its job cancelled) and the image
is compared again, only while the Compare tab shows it. The model preparations the old
sides needed and nothing else waits for are stopped.
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QTabWidget

from ..engine.pipeline import EngineConfig
from .compare import ComparisonView
from .entry import QueueEntry, Status
from .host import Host
from .queue_jobs import compare_pair


class CompareController(QObject):
    """The Compare tab's work for the window: ``view`` is the tab's page in ``tabs``."""

    def __init__(self, host: Host, view: ComparisonView, tabs: QTabWidget) -> None:
        super().__init__(host.window())
        self.host = host
        self.view = view
        self.tabs = tabs
        view.sides_changed.connect(self._on_sides_changed)

    @property
    def shown(self) -> bool:
        """The Compare tab is the one shown."""
        return self.tabs.currentWidget() is self.view

    def pair(self) -> tuple[EngineConfig, EngineConfig]:
        """The configs of the comparison's sides A and B as chosen now."""
        return compare_pair(self.host.settings.engine(), self.view.sides())

    def is_current(self, entry: QueueEntry) -> bool:
        """``entry`` has the comparison of the sides chosen now."""
        return entry.compared is not None and entry.compared.pair == self.pair()

    def _on_sides_changed(self) -> None:
        """The user chose another A or B: the image shown is compared again (the work
        for the sides before is cancelled)."""
        jobs = self.host.jobs
        entry = self.host.current_entry()
        if entry is not None and not self.is_current(entry):
            jobs.drop_comparison(entry)
            jobs.check_settled()
        self.host.request_current()
        jobs.release_for_sides(self.view.sides())  # e.g. the old B's int8 build
        self.host.show_current()

    def show_compare(self) -> None:
        """Ctrl+K: the comparison tab; a comparison that failed or was cancelled is retried."""
        entry = self.host.current_entry()
        if entry is not None and entry.comparison.job is None and not self.is_current(entry):
            entry.comparison.retry()
        if self.shown:
            self.host.refresh()
        else:
            self.tabs.setCurrentWidget(self.view)

    def request(self, entry: QueueEntry) -> None:
        """Submit ``entry``'s comparison if the tab shows it and it has none for the sides
        chosen (one for other sides is dropped first)."""
        if not self.shown or entry.status is Status.FAILED:
            return
        jobs, pair = self.host.jobs, self.pair()
        pending = jobs.compare_pending(entry)
        if (pending is not None and pending != pair) or (
            entry.compared is not None and entry.compared.pair != pair
        ):
            jobs.drop_comparison(entry)  # made for other sides
        if entry.compared is None and entry.comparison.job is None and not entry.compare_error:
            jobs.compare(entry, self.view.sides())

    def show(self, entry: QueueEntry) -> None:
        """The tab shows ``entry``'s comparison, or why there is none yet."""
        if entry.compared is not None and self.is_current(entry):
            self.view.set_result(entry.compared)
            return
        size = None  # the photo's, so the panes are arranged for it before the result
        if entry.processed is not None:
            h, w = entry.processed.result.mask.shape
            size = (w, h)
        elif entry.thumb is not None:
            size = (entry.thumb.width(), entry.thumb.height())
        self.view.clear(size)
        if entry.compare_error:
            text = f"The comparison failed: {entry.compare_error}"
        elif entry.comparison.job is not None:
            a, b = self.pair()
            text = f"Comparing {a.model} {a.precision} and {b.model} {b.precision}…"
        elif entry.comparison.cancelled:
            text = "The comparison was cancelled. Press Ctrl+K to compare again."
        elif entry.status is Status.FAILED:
            text = "This image could not be read, so there is nothing to compare."
        else:
            text = "Press Ctrl+K to compare side A and side B for this image."
        self.view.placeholder.setText(text)
