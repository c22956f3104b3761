"""What the window's controllers need of the window: one narrow interface.

The controllers (saving, editing, batches, comparisons, opening files, the model)
each own a slice of the app's behaviour; they reach the rest of the app only through
this protocol, never through the window's widgets. :class:`~bgremover.gui.window.
MainWindow` implements it; nothing here imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStatusBar, QWidget

    from .entry import QueueEntry
    from .jobs import JobRunner
    from .queue import QueueModel
    from .queue_jobs import QueueJobs
    from .settings import Settings
    from .worker import Worker


class Host(Protocol):
    """The window as its controllers see it."""

    #: The settings in effect (changed only through :meth:`apply_settings`).
    settings: Settings
    queue: QueueModel
    jobs: QueueJobs
    worker: Worker
    #: The engine thread's runner (inference, models, batches) and the output thread's
    #: (saving, copying, composing, most edits).
    engine: JobRunner
    output: JobRunner

    def window(self) -> QWidget:
        """The top-level widget: the parent of dialogs and message boxes."""
        ...

    def statusBar(self) -> QStatusBar: ...  # Qt's name

    def current_entry(self) -> QueueEntry | None:
        """The image shown."""
        ...

    def select(self, entry: QueueEntry) -> None: ...

    def apply_settings(self, **changes: Any) -> None:
        """Take new settings, remember them, and bring what is shown up to them."""
        ...

    def request_current(self) -> None:
        """Submit the work the image shown needs and does not have (never more)."""
        ...

    def refresh(self) -> None:
        """As when the user selects the image shown: start what it needs, then show it."""
        ...

    def show_result_tab(self) -> None:
        """Bring the Result tab to the front."""
        ...

    def show_current(self) -> None:
        """Redraw the image shown (and the enabled states) from what the queue knows."""
        ...

    def update_enabled(self) -> None:
        """The actions' enabled states, from the queue and the image shown."""
        ...

    def update_title(self) -> None:
        """The window's title and its unsaved-work mark, for the image shown."""
        ...
