"""The app's batch job: its progress and its end count the batch's outcomes with the
engine's one tally, as the command line and ``--ray`` do."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("PySide6")

from bgremover.engine.pipeline import EngineConfig
from bgremover.export.compose import ComposeOptions
from bgremover.gui.jobs import CancelToken, JobContext
from bgremover.gui.results import BatchProgress, BatchRequest
from bgremover.gui.worker import Worker


def _batch(worker: Worker, request: BatchRequest) -> tuple[list[BatchProgress], BatchProgress]:
    """The batch job's progress steps and its result (the "finished" step)."""
    steps = []
    job = worker.batch(JobContext(1, CancelToken(), lambda _payload: None), request)
    while True:
        try:
            steps.append(next(job))
        except StopIteration as end:
            return steps, end.value


def test_the_apps_batch_counts_each_outcome_as_the_engine_tallies_it(
    tmp_path: Path, tiny_model: Path, rgb_gradient: np.ndarray
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        Image.fromarray(rgb_gradient).save(src / f"{i}.png")
    (src / "broken.jpg").write_bytes(b"\xff\xd8\xff garbage")
    config = EngineConfig(str(tiny_model))
    request = BatchRequest((src,), tmp_path / "out", config, ComposeOptions(), "png")
    worker = Worker()

    steps, end = _batch(worker, request)
    assert steps[0].kind == "started" and steps[0].total == 4
    items = steps[1:]
    assert sorted(step.kind for step in items) == ["done", "done", "done", "failed"]
    # Each step carries the counts so far: one more each time, ending at the batch's own.
    assert [s.done + s.skipped + s.failed for s in items] == [1, 2, 3, 4]
    assert (items[-1].done, items[-1].skipped, items[-1].failed) == (3, 0, 1)
    assert (end.kind, end.done, end.skipped, end.failed) == ("finished", 3, 0, 1)
    assert end.note == ""  # fp32: no int8 guard to speak of

    steps, end = _batch(worker, request)  # a rerun: the done ones are skipped
    assert sorted(step.kind for step in steps[1:]) == ["failed", "skipped", "skipped", "skipped"]
    assert (end.done, end.skipped, end.failed) == (0, 3, 1)
