"""The app's work as jobs: each has an id, its own cancel token and exactly one end.

A :class:`JobRunner` owns one thread and a queue of jobs it runs one after
another. The GUI submits work and learns what happened through signals,
emitted on the GUI thread (the runner's thread posts what happened to a mailbox
that the GUI thread empties: Python objects never ride on queued signals, whose
arguments PySide can lose when a slot emits another signal meanwhile):

- ``started(job)`` when the job begins to run,
- ``progress(job_id, payload)`` for each value its work yields,
- ``ended(JobEnd)`` exactly once per job: done, failed or cancelled.

A job's work is a callable taking a :class:`JobContext`. It may return a value,
or be a generator: each ``yield`` is reported as progress, and the cancel token
is checked between yields (the pattern of superqt's ``GeneratorWorker``), so a
cancelled job stops at its next yield; a value returned from the generator is
the job's result. Work that waits on something slow (a download) checks
``ctx.token`` itself. Jobs are generic in their result, as superqt's workers are:
work returning ``R`` (or a generator returning ``R``) makes a ``Job[R]``, whose end
callback gets a ``JobEnd[R]``, so what a job returns reaches its reader typed.

Cancelling reaches only the job it names. A job still waiting in the queue is
withdrawn at once (it ends "cancelled" without running); a running one has its
token set and ends at its next check. Nothing else is ever cancelled by
accident: there is no runner-wide flag.

A job may wait for earlier ones (``after``): the work of many images waits for
the one job that obtains their model, a comparison for the jobs that obtain its two.
If one of them does not succeed, the jobs waiting for it end "cancelled" without
running, with ``blocked_by`` saying why, so a model that cannot be downloaded is
tried once, not once per image. What waits for a job is known from the jobs still
to run (:meth:`JobRunner.waiting_for`), so that work nothing waits for any more can
be cancelled.
"""

from __future__ import annotations

import enum
import itertools
import threading
import traceback
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast, overload

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from ..errors import BgRemoverError
from ..network.store import DownloadCancelled
from .wording import app_message

#: What a job's work returns: the result a done job's end carries.
R = TypeVar("R")


class JobCancelled(BgRemoverError):
    """Raised by :meth:`CancelToken.check` inside a job whose cancel was requested."""

    def __init__(self) -> None:
        super().__init__("Cancelled.")


class CancelToken:
    """A job's own cancel flag, safe to set from any thread."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise :class:`JobCancelled` when the job was cancelled."""
        if self._event.is_set():
            raise JobCancelled()


class JobState(enum.Enum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class JobContext:
    """What a job's work gets: its token, and a way to report progress without yielding."""

    job_id: int
    token: CancelToken
    report: Callable[[Any], None]


@dataclass(eq=False)
class Job(Generic[R]):
    """One piece of work and what is known about it; ``R`` is what its work returns."""

    id: int
    kind: str
    #: Returns the result, or a generator whose yields are progress and which returns it.
    work: Callable[[JobContext], object] = field(repr=False)
    #: What the job is for (an image's id, a folder, a model): the submitter's key for
    #: finding and withdrawing it, any hashable value; never looked at by the runner, so
    #: it is typed Any: each submitter reads back the tags it made.
    tag: Any = None
    token: CancelToken = field(default_factory=CancelToken, repr=False)
    state: JobState = JobState.PENDING
    #: Jobs of the same runner, submitted earlier, that must succeed before this one runs.
    after: tuple[Job[Any], ...] = field(default=(), repr=False)
    #: How it ended, once it has.
    end: JobEnd[R] | None = field(default=None, repr=False)
    on_end: Callable[[JobEnd[R]], None] | None = field(default=None, repr=False)
    on_progress: Callable[[int, Any], None] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class JobEnd(Generic[R]):
    """How a job ended; emitted exactly once per job. A done job's has its :attr:`result`."""

    job_id: int
    kind: str
    tag: Any
    state: JobState
    #: What the work returned (see :attr:`result`); None for a job that is not done.
    _result: R | None = field(default=None, repr=False)
    #: For a failure: the message meant for the user (in the app's words), the
    #: exception, and a traceback when it was not one of bgremover's expected errors
    #: (a bug).
    message: str = ""
    error: BaseException | None = None
    details: str = ""
    #: For a job that never ran because the job it waited for did not succeed: that end.
    blocked_by: JobEnd[Any] | None = None

    @property
    def ok(self) -> bool:
        return self.state is JobState.DONE

    @property
    def result(self) -> R:
        """What the work returned. Only a done job has a result: asking a failed or
        cancelled job's end for one is a mistake of the caller, and raises."""
        if self.state is not JobState.DONE:
            raise RuntimeError(
                f"job {self.job_id} ({self.kind}) ended {self.state.value}: it has no result"
            )
        # The work of a Job[R] returned it (submit's overloads say so).
        return cast(R, self._result)

    @property
    def cause(self) -> JobEnd[Any]:
        """The end that decided this one: the blocking job's, or this one's own."""
        return self.blocked_by.cause if self.blocked_by is not None else self


class _Thread(QThread):
    def __init__(self, runner: JobRunner) -> None:
        super().__init__()
        self.runner = runner

    def run(self) -> None:
        self.runner._loop()


class JobRunner(QObject):
    """Runs submitted jobs one at a time on its own thread; see the module's docstring."""

    started = Signal(object)  # Job
    progress = Signal(int, object)  # job id, payload
    ended = Signal(object)  # JobEnd
    #: Something is in the mailbox (from the runner's thread to the GUI thread).
    _posted = Signal()

    _ids = itertools.count(1)  # unique across runners, so ids never collide

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self._lock = threading.Condition()
        self._pending: list[Job[Any]] = []
        self._running: Job[Any] | None = None
        self._stopping = False
        self._jobs: dict[int, Job[Any]] = {}  # every job that has not ended
        #: Jobs whose end (or progress) callbacks are still to be called; GUI thread only.
        self._callbacks: dict[int, Job[Any]] = {}
        #: What happened, in order, for the GUI thread: ("started" | "progress" | "ended",
        #: arguments). deque's append and popleft are safe across threads.
        self._mail: deque[tuple[str, tuple[Any, ...]]] = deque()
        self._posted.connect(self._deliver, Qt.ConnectionType.QueuedConnection)
        self._thread = _Thread(self)
        self._thread.setObjectName(f"bgremover-{name}")
        self._thread.start()

    # -- the GUI's side --------------------------------------------------------
    # Work that is a generator returns its result at its end: its job is a Job of that,
    # as superqt's create_worker makes a GeneratorWorker of a generator function.
    @overload
    def submit(
        self,
        kind: str,
        work: Callable[[JobContext], Generator[Any, None, R]],
        *,
        tag: Any = None,
        on_end: Callable[[JobEnd[R]], None] | None = None,
        on_progress: Callable[[int, Any], None] | None = None,
        after: Job[Any] | Iterable[Job[Any] | None] | None = None,
    ) -> Job[R]: ...
    @overload
    def submit(
        self,
        kind: str,
        work: Callable[[JobContext], R],
        *,
        tag: Any = None,
        on_end: Callable[[JobEnd[R]], None] | None = None,
        on_progress: Callable[[int, Any], None] | None = None,
        after: Job[Any] | Iterable[Job[Any] | None] | None = None,
    ) -> Job[R]: ...
    def submit(
        self,
        kind: str,
        work: Callable[[JobContext], object],
        *,
        tag: Any = None,
        on_end: Callable[[JobEnd[Any]], None] | None = None,
        on_progress: Callable[[int, Any], None] | None = None,
        after: Job[Any] | Iterable[Job[Any] | None] | None = None,
    ) -> Job[Any]:
        """Queue ``work``; ``on_end(end)`` and ``on_progress(job_id, payload)`` are called
        on the GUI thread.

        Called from the GUI thread (the callbacks' bookkeeping lives there). With
        ``after`` (a job, or several; None among them is ignored), the job runs only if
        they (submitted earlier here) succeed.
        """
        needs = (after,) if isinstance(after, Job) else tuple(after or ())
        job: Job[Any] = Job(
            next(self._ids),
            kind,
            work,
            tag,
            after=tuple(j for j in needs if j is not None),
            on_end=on_end,
            on_progress=on_progress,
        )
        if on_end is not None or on_progress is not None:
            self._callbacks[job.id] = job
        with self._lock:
            if self._stopping:
                raise RuntimeError(f"the {self.name} runner has shut down")
            self._jobs[job.id] = job
            self._pending.append(job)
            self._lock.notify_all()
        return job

    def cancel(self, job_id: int) -> bool:
        """Cancel one job: withdrawn if it waits, told to stop if it runs. False if ended."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return False
            job.token.cancel()
            if job.state is not JobState.PENDING:
                return True  # running: it ends at its next check, with its own end
            self._pending.remove(job)
            end: JobEnd[Any] = JobEnd(job.id, job.kind, job.tag, JobState.CANCELLED)
            self._finish(job, end)
        self._post("ended", end)
        return True

    def cancel_where(self, predicate: Callable[[Job[Any]], bool]) -> list[int]:
        """Cancel every job (waiting or running) for which ``predicate`` holds; their ids."""
        with self._lock:
            chosen = [j.id for j in self._jobs.values() if predicate(j)]
        return [job_id for job_id in chosen if self.cancel(job_id)]

    def cancel_all(self) -> list[int]:
        return self.cancel_where(lambda job: True)

    def jobs(self) -> list[Job[Any]]:
        """The jobs that have not ended, the running one first, then in queue order."""
        with self._lock:
            return ([self._running] if self._running else []) + list(self._pending)

    def waiting_for(self, job: Job[Any]) -> list[Job[Any]]:
        """The jobs still to run here that wait for ``job`` and are not being cancelled."""
        with self._lock:
            return [
                j for j in self._pending if not j.token.cancelled and any(a is job for a in j.after)
            ]

    def job(self, job_id: int) -> Job[Any] | None:
        with self._lock:
            return self._jobs.get(job_id)

    def busy(self) -> bool:
        with self._lock:
            return bool(self._jobs)

    def shutdown(self, cancel: bool = True) -> None:
        """Stop the thread once its jobs are over; no callback runs after this.

        With ``cancel``, every job is cancelled first (the running one stops at its
        next check); without, the queued jobs still run (saves the user asked for).
        """
        self._callbacks.clear()
        if cancel:
            self.cancel_all()
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        self._thread.wait()

    # -- the runner's thread -----------------------------------------------------
    def _finish(self, job: Job[Any], end: JobEnd[Any]) -> None:
        """Record how ``job`` ended and forget it (called with the lock held)."""
        job.state, job.end = end.state, end
        self._jobs.pop(job.id, None)

    def _next(self) -> Job[Any] | None:
        with self._lock:
            while not self._pending and not self._stopping:
                self._lock.wait()
            if self._stopping and not self._pending:
                return None
            job = self._pending.pop(0)
            job.state = JobState.RUNNING
            self._running = job
            return job

    def _loop(self) -> None:
        while (job := self._next()) is not None:
            blocker = next((a.end for a in job.after if a.end is not None and not a.end.ok), None)
            if blocker is not None:
                end: JobEnd[Any] = JobEnd(
                    job.id, job.kind, job.tag, JobState.CANCELLED, blocked_by=blocker
                )
            else:
                self._post("started", job)
                end = self._run(job)
            with self._lock:
                self._running = None
                self._finish(job, end)
            self._post("ended", end)

    def _post(self, kind: str, *args: Any) -> None:
        """Hand an event to the GUI thread (any thread may call this)."""
        self._mail.append((kind, args))
        self._posted.emit()

    def _run(self, job: Job[Any]) -> JobEnd[Any]:
        def report(payload: Any) -> None:
            self._post("progress", job.id, payload)

        context = JobContext(job.id, job.token, report)
        try:
            job.token.check()  # cancelled between submission and start, by a race
            result = job.work(context)
            if isinstance(result, Iterator):
                result = self._drive(result, job, report)
            return JobEnd(job.id, job.kind, job.tag, JobState.DONE, result)
        except (JobCancelled, DownloadCancelled):
            return JobEnd(job.id, job.kind, job.tag, JobState.CANCELLED)
        except BgRemoverError as exc:
            return JobEnd(job.id, job.kind, job.tag, JobState.FAILED, None, app_message(exc), exc)
        except Exception as exc:  # a bug: keep running, show it with its traceback
            return JobEnd(
                job.id,
                job.kind,
                job.tag,
                JobState.FAILED,
                None,
                f"Unexpected error: {type(exc).__name__}: {exc}",
                exc,
                traceback.format_exc(),
            )

    @staticmethod
    def _drive(steps: Iterator[Any], job: Job[Any], report: Callable[[Any], None]) -> Any:
        """Run a generator's work: each value is progress; cancel is checked between them."""
        try:
            while True:
                job.token.check()
                try:
                    value = next(steps)
                except StopIteration as stop:
                    return stop.value
                report(value)
        finally:
            close = getattr(steps, "close", None)
            if close is not None:
                close()  # a cancelled generator cleans up (e.g. stops its batch) here

    # -- the GUI thread's side of the mailbox -------------------------------------------
    @Slot()
    def _deliver(self) -> None:
        """Everything posted so far, in order: a job's own callback, then the signal."""
        while self._mail:
            kind, args = self._mail.popleft()
            if kind == "started":
                self.started.emit(*args)
            elif kind == "progress":
                job_id, payload = args
                job = self._callbacks.get(job_id)
                if job is not None and job.on_progress is not None:
                    job.on_progress(job_id, payload)
                self.progress.emit(job_id, payload)
            else:
                (end,) = args
                job = self._callbacks.pop(end.job_id, None)
                if job is not None and job.on_end is not None:
                    job.on_end(end)
                self.ended.emit(end)
