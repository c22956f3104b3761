"""The app's job runner: exactly one end per job, cancels that reach only their own job."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("PySide6")

from bgremover.errors import ImageReadError
from bgremover.gui.jobs import JobEnd, JobRunner, JobState
from bgremover.network.store import DownloadCancelled

WAIT_MS = 20_000


@pytest.fixture()
def runner(qtbot):
    r = JobRunner("test")
    yield r
    r.shutdown()


class Ends:
    """Collects the `ended` signals of a runner."""

    def __init__(self, runner: JobRunner) -> None:
        self.ends: list[JobEnd] = []
        runner.ended.connect(self.ends.append)

    def of(self, job) -> list[JobEnd]:
        return [e for e in self.ends if e.job_id == job.id]


def test_results_failures_and_bugs_each_end_once(qtbot, runner) -> None:
    ends = Ends(runner)

    def bad_image(ctx):
        raise ImageReadError("x.jpg: not an image")

    def bug(ctx):
        raise ZeroDivisionError("oops")

    with qtbot.waitSignals([runner.ended] * 3, timeout=WAIT_MS):
        ok = runner.submit("t", lambda ctx: 42)
        failed = runner.submit("t", bad_image)
        crashed = runner.submit("t", bug)
    qtbot.wait(50)  # nothing more arrives
    (end_ok,), (end_failed,), (end_bug,) = ends.of(ok), ends.of(failed), ends.of(crashed)
    assert end_ok.state is JobState.DONE and end_ok.result == 42
    assert end_failed.state is JobState.FAILED and end_failed.message == "x.jpg: not an image"
    assert isinstance(end_failed.error, ImageReadError) and end_failed.details == ""
    assert end_bug.state is JobState.FAILED and "ZeroDivisionError" in end_bug.details
    # Only a done job has a result: asking a failed one's end for it is the caller's
    # mistake, said as such, not a None that a typed reader would take for a result.
    with pytest.raises(RuntimeError, match=r"ended failed: it has no result"):
        _ = end_failed.result
    assert not runner.busy()


def test_a_generators_job_ends_with_what_it_returns(qtbot, runner) -> None:
    """Work that yields progress and returns a value: the job's result is that value (a
    Job of the returned type, as superqt's GeneratorWorker returns its generator's)."""

    def steps(ctx):
        yield 1
        yield 2
        return "finished"

    progress: list[object] = []
    ended: list[JobEnd[str]] = []
    with qtbot.waitSignal(runner.ended, timeout=WAIT_MS):
        job = runner.submit(
            "gen", steps, on_end=ended.append, on_progress=lambda i, p: progress.append(p)
        )
    assert progress == [1, 2] and [e.result for e in ended] == ["finished"]
    assert job.end is ended[0] and job.end.ok


def test_generator_work_reports_progress_and_stops_between_yields(qtbot, runner) -> None:
    release = threading.Event()
    steps: list[int] = []
    closed = threading.Event()

    def counting(ctx):
        try:
            for i in range(1000):
                steps.append(i)
                yield i
                release.wait(5)
        finally:
            closed.set()

    progress: list[object] = []
    job = runner.submit("gen", counting, on_progress=lambda job_id, p: progress.append(p))
    qtbot.waitUntil(lambda: bool(progress), timeout=WAIT_MS)
    with qtbot.waitSignal(runner.ended, timeout=WAIT_MS) as blocker:
        runner.cancel(job.id)
        release.set()
    assert blocker.args[0].state is JobState.CANCELLED
    assert closed.is_set() and len(steps) <= 2  # stopped at the next yield, and cleaned up


def test_cancel_withdraws_a_waiting_job_and_only_that_one(qtbot, runner) -> None:
    gate = threading.Event()
    ran: list[str] = []
    ends = Ends(runner)

    def work(name):
        def body(ctx):
            if name == "first":
                gate.wait()
            ran.append(name)
            return name

        return body

    first = runner.submit("t", work("first"))
    second = runner.submit("t", work("second"))
    third = runner.submit("t", work("third"))
    with qtbot.waitSignal(runner.ended, timeout=WAIT_MS):
        assert runner.cancel(second.id)
    assert ends.of(second)[0].state is JobState.CANCELLED
    with qtbot.waitSignals([runner.ended] * 2, timeout=WAIT_MS):
        gate.set()
    assert ran == ["first", "third"]  # the withdrawn job never ran; the others did
    assert [len(ends.of(j)) for j in (first, second, third)] == [1, 1, 1]
    assert not runner.cancel(second.id)  # over: nothing to cancel


def test_a_cancelled_download_ends_cancelled_not_failed(qtbot, runner) -> None:
    def download(ctx):
        raise DownloadCancelled()

    ended: list[JobEnd] = []
    with qtbot.waitSignal(runner.ended, timeout=WAIT_MS):
        runner.submit("t", download, on_end=ended.append)
    qtbot.waitUntil(lambda: bool(ended), timeout=WAIT_MS)
    assert ended[0].state is JobState.CANCELLED and ended[0].message == ""


def test_cancel_where_and_shutdown(qtbot, runner) -> None:
    gate = threading.Event()

    def wait_for_gate(ctx):
        while not gate.wait(0.01):
            ctx.token.check()

    jobs = [runner.submit("t", wait_for_gate, tag=i) for i in range(4)]
    qtbot.waitUntil(lambda: runner.jobs()[0].state is JobState.RUNNING, timeout=WAIT_MS)
    with qtbot.waitSignals([runner.ended] * 2, timeout=WAIT_MS):
        cancelled = runner.cancel_where(lambda job: job.tag in (0, 2))
    assert cancelled == [jobs[0].id, jobs[2].id]
    assert [j.tag for j in runner.jobs()] == [1, 3]
    runner.shutdown()  # cancels the rest; the running one stops at its next check
    assert not runner.busy()
    with pytest.raises(RuntimeError, match="shut down"):
        runner.submit("t", lambda ctx: None)


def test_a_job_waits_for_several_and_who_waits_for_a_job_is_known(qtbot, runner) -> None:
    """A comparison waits for the preparation of both its sides: blocked by either one's
    failure; and what still waits for a job is known, so work nobody waits for any more
    can be stopped."""
    gate = threading.Event()
    ends = Ends(runner)

    def held(ctx):
        while not gate.wait(0.01):
            ctx.token.check()
        return "a"

    def bad(ctx):
        raise ImageReadError("b could not be had")

    a = runner.submit("prepare", held)
    b = runner.submit("prepare", bad)
    both = runner.submit("compare", lambda ctx: "ran", after=(a, None, b))
    only_a = runner.submit("compare", lambda ctx: "ran", after=a)
    assert both.after == (a, b)
    assert runner.waiting_for(a) == [both, only_a] and runner.waiting_for(b) == [both]
    runner.cancel(only_a.id)
    assert runner.waiting_for(a) == [both]  # a withdrawn job waits for nothing
    with qtbot.waitSignals([runner.ended] * 4, timeout=WAIT_MS):
        gate.set()
    (end,) = ends.of(both)
    assert end.state is JobState.CANCELLED and end.blocked_by == ends.of(b)[0]
    assert end.cause.message == "b could not be had"
    assert ends.of(a)[0].ok and runner.waiting_for(a) == []
