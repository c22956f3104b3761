"""Planning outputs for files and folders, and the event stream of a batch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover import Remover
from bgremover.engine.batch import (
    ALREADY_DONE,
    SETTINGS_CHANGED,
    BatchFinished,
    BatchStarted,
    ItemDone,
    ItemFailed,
    ItemSkipped,
    Tally,
    run_batch,
)
from bgremover.engine.plan import Job, plan_batch
from bgremover.errors import DiskFullError, UsageError
from bgremover.files.atomic import TEMP_SUFFIX
from bgremover.network.guard import GuardCheck

from conftest import assert_masks_close


def make_tree(root: Path, rgb: np.ndarray) -> None:
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / ".hidden").mkdir()
    Image.fromarray(rgb).save(root / "a.jpg")
    Image.fromarray(rgb).save(root / "a.png")  # same stem as a.jpg
    Image.fromarray(rgb).save(root / "sub" / "b.webp")
    Image.fromarray(rgb).save(root / "sub" / "deeper" / "c.tif")
    Image.fromarray(rgb).save(root / ".hidden" / "d.png")
    (root / "notes.txt").write_text("not an image")


def test_plan_mirrors_tree_and_disambiguates(tmp_path: Path, rgb_gradient: np.ndarray) -> None:
    make_tree(tmp_path / "in", rgb_gradient)
    plan = plan_batch([tmp_path / "in"], tmp_path / "out", "png")
    outputs = sorted(str(j.output.relative_to(tmp_path / "out")) for j in plan.jobs)
    assert outputs == ["a.png", "a_png.png", "sub/b.png", "sub/deeper/c.png"]
    assert plan.problems == ()


def test_plan_single_file_target_and_missing(tmp_path: Path, rgb_gradient: np.ndarray) -> None:
    src = tmp_path / "x.jpg"
    Image.fromarray(rgb_gradient).save(src)
    plan = plan_batch([src], tmp_path / "result.webp", "webp")
    assert [j.output for j in plan.jobs] == [tmp_path / "result.webp"]
    plan = plan_batch([src, tmp_path / "nope.jpg"], tmp_path / "o", "png")
    assert [j.output for j in plan.jobs] == [tmp_path / "o" / "x.png"]
    assert plan.problems == ((tmp_path / "nope.jpg", "no such file or folder"),)


def test_plan_never_overwrites_an_input(tmp_path: Path, rgb_gradient: np.ndarray) -> None:
    src = tmp_path / "x.png"
    Image.fromarray(rgb_gradient).save(src)
    plan = plan_batch([src], tmp_path, "png")
    assert plan.jobs[0].output == tmp_path / "x_png.png"
    with pytest.raises(UsageError, match="output folder is the input folder"):
        plan_batch([tmp_path], tmp_path, "png")


def test_plan_skips_output_folder_inside_input(tmp_path: Path, rgb_gradient: np.ndarray) -> None:
    Image.fromarray(rgb_gradient).save(tmp_path / "a.jpg")
    out = tmp_path / "cutouts"
    out.mkdir()
    Image.fromarray(rgb_gradient).save(out / "a.png")  # an earlier run's output
    plan = plan_batch([tmp_path], out, "png")
    assert [j.source.name for j in plan.jobs] == ["a.jpg"]


def test_several_folders_get_their_own_subfolder(tmp_path: Path, rgb_gradient: np.ndarray) -> None:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        Image.fromarray(rgb_gradient).save(tmp_path / name / "p.jpg")
    plan = plan_batch([tmp_path / "one", tmp_path / "two"], tmp_path / "o", "png")
    assert sorted(j.output for j in plan.jobs) == [
        tmp_path / "o" / "one" / "p.png",
        tmp_path / "o" / "two" / "p.png",
    ]


def test_run_batch_events_failures_and_resume(
    tmp_path: Path, tiny_model: Path, rgb_gradient: np.ndarray
) -> None:
    make_tree(tmp_path / "in", rgb_gradient)
    (tmp_path / "in" / "broken.jpg").write_bytes(b"\xff\xd8\xff garbage")
    out = tmp_path / "out"
    out.mkdir()
    stale = out / f".a.png.1234{TEMP_SUFFIX}"
    stale.write_bytes(b"half")  # left by a killed run
    plan = plan_batch([tmp_path / "in"], out, "png")
    remover = Remover(str(tiny_model))
    events = list(run_batch(plan.jobs, remover))
    assert isinstance(events[0], BatchStarted) and events[0].total == 5
    assert isinstance(events[-1], BatchFinished)
    done = [e for e in events if isinstance(e, ItemDone)]
    failed = [e for e in events if isinstance(e, ItemFailed)]
    assert len(done) == 4 and len(failed) == 1
    assert "broken.jpg" in failed[0].reason
    assert events[-1].done == 4 and events[-1].failed == 1
    assert not stale.exists()
    for event in done:
        assert Image.open(event.job.output).mode == "RGBA"

    again = list(run_batch(plan.jobs, remover))
    assert sum(isinstance(e, ItemSkipped) for e in again) == 4
    assert again[-1].skipped == 4 and again[-1].done == 0


def test_stopping_the_generator_leaves_only_complete_files(
    tmp_path: Path, tiny_model: Path, rgb_gradient: np.ndarray
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for i in range(12):
        Image.fromarray(rgb_gradient).save(src / f"{i:02d}.png")
    plan = plan_batch([src], tmp_path / "out", "png")
    remover = Remover(str(tiny_model))
    stream = run_batch(plan.jobs, remover, finishers=1)
    for event in stream:
        if isinstance(event, ItemDone):
            stream.close()  # what a Cancel button does between events
    files = sorted(p for p in (tmp_path / "out").rglob("*") if p.is_file())
    # Only the images already being written when the batch stopped were finished: at
    # most one per finisher and per queue slot beyond the one reported.
    assert 1 <= len(files) <= 4
    assert all(Image.open(p).size == (64, 48) for p in files)
    again = list(run_batch(plan.jobs, remover))
    assert again[-1].skipped == len(files) and again[-1].done == 12 - len(files)


def test_pipeline_gives_the_one_image_engine_results_in_any_order(
    tmp_path: Path, tiny_model: Path, rgb_gradient: np.ndarray
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    rng = np.random.default_rng(3)
    for i in range(9):  # sizes differ so that items finish out of order
        h, w = int(rng.integers(20, 200)), int(rng.integers(20, 200))
        Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(src / f"{i}.png")
    plan = plan_batch([src], tmp_path / "out", "png")
    remover = Remover(str(tiny_model))
    events = list(run_batch(plan.jobs, remover, finishers=3, depth=2))
    done = [e for e in events if isinstance(e, ItemDone)]
    assert sorted(e.index for e in done) == list(range(1, 10))
    for event in done:
        assert event.job is plan.jobs[event.index - 1]
        expected = np.asarray(remover.remove(event.job.source).cutout())
        actual = np.asarray(Image.open(event.job.output))
        assert_masks_close(actual, expected, tmp_path / "failed", event.job.source.stem)
        assert set(event.timings) >= {"read", "preprocess", "infer", "refine", "write"}


def test_a_tiny_memory_budget_still_runs_every_image(
    tmp_path: Path, tiny_model: Path, rgb_gradient: np.ndarray
) -> None:
    make_tree(tmp_path / "in", rgb_gradient)
    plan = plan_batch([tmp_path / "in"], tmp_path / "out", "png")
    events = list(run_batch(plan.jobs, Remover(str(tiny_model)), pixels_in_flight=1))
    assert events[-1].done == len(plan.jobs) and events[-1].failed == 0


def test_a_model_failure_mid_batch_stops_it_with_the_error(
    tmp_path: Path, tiny_model: Path, rgb_gradient: np.ndarray
) -> None:
    from bgremover.errors import ModelError

    make_tree(tmp_path / "in", rgb_gradient)
    plan = plan_batch([tmp_path / "in"], tmp_path / "out", "png")
    remover = Remover(str(tiny_model))
    remover.load()

    def broken(batch: np.ndarray) -> np.ndarray:
        raise ModelError("the model file went away")

    remover.infer = broken  # type: ignore[method-assign]
    with pytest.raises(ModelError, match="went away"):
        list(run_batch(plan.jobs, remover))
    assert not [p for p in (tmp_path / "out").rglob("*") if p.is_file()]


def test_one_tally_counts_every_outcome(tmp_path: Path) -> None:
    """The counts the command line, the app and ``--ray`` report: each outcome once, the
    outputs made again by reason, the int8 guard's findings, the cutouts in doubt, and
    the failure that stopped the batch."""
    job = Job(tmp_path / "a.jpg", tmp_path / "out" / "a.png")
    guard = GuardCheck(0.9, True)
    full = ItemFailed.of(5, 5, job, DiskFullError("the disk is full"))
    outcomes = [
        ItemDone(1, 5, job, {}, 10, 0.1, guard, redone=SETTINGS_CHANGED, doubts=("hazy",)),
        ItemDone(2, 5, job, {}, 10, 0.1),
        ItemSkipped(3, 5, job, ALREADY_DONE),
        ItemFailed(4, 5, job, "cannot be read"),
        full,
    ]
    assert [o.kind for o in outcomes] == ["done", "done", "skipped", "failed", "failed"]
    tally = Tally()
    for outcome in outcomes:
        tally.add(outcome)
    assert full.stops and not outcomes[3].stops
    finished = tally.finished(1.5)
    assert (finished.done, finished.skipped, finished.failed) == (2, 1, 2)
    assert finished.redone == {SETTINGS_CHANGED: 1}
    assert finished.guarded == (guard, None) and finished.doubtful == 1
    assert finished.stopped == full.reason and "disk is full" in full.reason
    assert finished.failures == ((job.source, "cannot be read"), (job.source, full.reason))


def test_a_batchs_end_is_the_tally_of_its_events(
    tmp_path: Path, tiny_model: Path, rgb_gradient: np.ndarray
) -> None:
    make_tree(tmp_path / "in", rgb_gradient)
    (tmp_path / "in" / "broken.jpg").write_bytes(b"\xff\xd8\xff garbage")
    plan = plan_batch([tmp_path / "in"], tmp_path / "out", "png")
    events = list(run_batch(plan.jobs, Remover(str(tiny_model))))
    tally = Tally()
    for event in events[1:-1]:
        tally.add(event)
    assert events[-1] == tally.finished(events[-1].seconds)
    assert events[-1].guarded == (None,) * 4  # fp32: the guard never looked
