"""The batch's report and the pixel budget, shared by the plain batch, ``--ray`` and the
server: the lines both front ends print, the exit statuses and the budget's waiting."""

import threading
import time
from pathlib import Path

from bgremover.engine.batch_report import (
    ALREADY_DONE,
    EXIT_OK,
    EXIT_SOME_FAILED,
    MAKE,
    failure_line,
    report_summary,
    resume_decision,
    skip_line,
)
from bgremover.engine.budget import PixelBudget
from bgremover.export.output import SourceRecord


def test_a_failure_line_names_the_photo_once() -> None:
    photo = Path("in/cat.jpg")
    assert failure_line(photo, "cannot be read") == f"bgremover: failed: {photo}: cannot be read"
    named = f"{photo} is not an image"
    assert failure_line(photo, named) == f"bgremover: failed: {named}"


def test_an_output_already_done_has_no_skip_line() -> None:
    assert skip_line(Path("a.jpg"), ALREADY_DONE) is None
    assert skip_line(Path("a.jpg"), "being written by another run") == (
        "bgremover: skipped a.jpg: being written by another run"
    )


def test_the_summary_says_the_counts_and_the_status_says_whether_any_failed(capsys) -> None:
    common = dict(redone={}, seconds=1.25, where=None, stopped=None, guarded=[])
    assert report_summary(done=2, skipped=1, failed=0, **common) == EXIT_OK
    assert capsys.readouterr().err == "bgremover: 2 written, 1 already done in 1.2 s\n"
    status = report_summary(
        done=1, skipped=0, failed=1, **{**common, "stopped": "the disk is full"}
    )
    assert status == EXIT_SOME_FAILED
    assert capsys.readouterr().err == (
        "bgremover: 1 written, 1 failed in 1.2 s\nbgremover: stopped early: the disk is full\n"
    )


def test_the_doubt_note_sends_to_v_only_where_the_doubts_were_not_named(capsys) -> None:
    common = dict(redone={}, seconds=1.0, where=None, stopped=None, guarded=[], doubtful=2)
    report_summary(done=2, skipped=0, failed=0, **common)
    assert capsys.readouterr().err == (
        "bgremover: 2 written in 1.0 s\n"
        "bgremover: 2 cutouts may be wrong (run with -v to see which and why).\n"
    )
    report_summary(done=2, skipped=0, failed=0, doubts_named=True, **common)
    assert capsys.readouterr().err == (
        "bgremover: 2 written in 1.0 s\nbgremover: 2 cutouts may be wrong.\n"
    )


def test_an_output_not_there_is_made(tmp_path: Path) -> None:
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(b"not really a photo, but bytes to record")
    record = SourceRecord.of(photo)
    assert resume_decision(tmp_path / "photo.png", record, overwrite=False).action == MAKE
    assert resume_decision(tmp_path / "photo.png", None, overwrite=False).action == MAKE


def test_the_budget_holds_an_image_back_until_the_pixels_fit() -> None:
    budget = PixelBudget(100)
    assert budget.acquire(80)
    admitted = threading.Event()

    def second() -> None:
        with budget.hold(50):
            admitted.set()

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(0.2)
    assert not admitted.is_set()  # 80 + 50 is over the limit: it waits
    budget.release(80)
    thread.join(5)
    assert admitted.is_set() and budget.used == 0


def test_an_image_over_the_budget_runs_alone_and_a_stopped_wait_holds_nothing() -> None:
    budget = PixelBudget(100)
    assert budget.acquire(500)  # nothing held: admitted, however large
    stop = threading.Event()
    stop.set()
    assert not budget.acquire(10, stop)
    assert budget.used == 500
