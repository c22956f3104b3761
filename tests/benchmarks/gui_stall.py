"""Longest stall of the GUI thread while the app processes (and saves) 20 images.

    python tests/benchmarks/gui_stall.py FOLDER [--count 20] [--no-save]
        [--limit N] [--quick]

A 5 ms QTimer ticks on the GUI thread; the largest gap between two ticks,
minus the interval, is the longest time the GUI could not respond. Measured
twice: 20 images dropped into the queue, each saved through the app's Save as
soon as its result arrives (results, thumbnails and the viewer update on the
GUI thread; the PNGs are written on the output thread), and a 20-image batch
through the batch dialog. Runs offscreen; settings and outputs go to a
temporary folder. For camera-size photos:
``../shared/tools/make_camera_set.py ../shared/data/photos DST``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import budget
from PySide6.QtCore import QSettings, QTimer

from bgremover.files.imaging import walk_images
from bgremover.gui.queue import Status
from bgremover.gui.window import MainWindow, application

INTERVAL_MS = 5


class StallMeter:
    def __init__(self) -> None:
        self.last = time.perf_counter()
        self.worst = 0.0
        self.timer = QTimer()
        self.timer.setInterval(INTERVAL_MS)
        self.timer.timeout.connect(self.tick)

    def tick(self) -> None:
        now = time.perf_counter()
        self.worst = max(self.worst, now - self.last - INTERVAL_MS / 1000)
        self.last = now

    def start(self) -> None:
        self.last = time.perf_counter()
        self.worst = 0.0
        self.timer.start()


def wait_for(app, condition, timeout: float = 600) -> None:
    end = time.monotonic() + timeout
    while not condition():
        app.processEvents()
        time.sleep(0.001)
        if time.monotonic() > end:
            raise SystemExit("timed out")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--no-save", action="store_true", help="do not save the results")
    budget.add_arguments(parser, "images (caps --count)", {"limit": 3})
    args = budget.parse_args(parser)
    if args.limit:
        args.count = min(args.count, args.limit)
    images = walk_images(args.folder)[: args.count]
    if len(images) < args.count:
        raise SystemExit(f"need {args.count} images in {args.folder}, found {len(images)}")

    tmp = Path(tempfile.mkdtemp(prefix="bgremover-stall-"))
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp / "settings"))
    app = application()
    window = MainWindow()
    window.confirm_quit = False  # clearing the warm-up's unsaved cutout asks nothing
    window.show()
    meter = StallMeter()
    try:
        # Warm up: the session is created (and the model obtained) before measuring.
        start = time.perf_counter()
        window.add_paths(images[:1])
        wait_for(
            app,
            lambda: all(e.status in (Status.DONE, Status.FAILED) for e in window.queue.entries()),
        )
        window.clear_queue()
        budget.announce(2 * len(images), "images (queue, then batch)", time.perf_counter() - start)

        saved_dir = tmp / "saved"
        saves: list = []

        def save_when_done(end) -> None:  # what a user saving each result does
            entry = window.queue.get(end.tag[1]) if end.kind == "process" else None
            if not args.no_save and entry is not None and entry.processed is not None:
                target = saved_dir / f"{entry.item_id:03d}.png"
                saves.append(window.saving.save_result(entry, target))

        window.engine.ended.connect(save_when_done)
        meter.start()
        start = time.perf_counter()
        window.add_paths(images)
        wait_for(
            app,
            lambda: (
                all(e.status in (Status.DONE, Status.FAILED) for e in window.queue.entries())
                and not window.output.busy()
            ),
        )
        queue_time, queue_stall = time.perf_counter() - start, meter.worst
        saved = len(list(saved_dir.glob("*.png"))) if saved_dir.exists() else 0

        batch_in = tmp / "in"
        batch_in.mkdir()
        for i, src in enumerate(images):
            shutil.copy(src, batch_in / f"{i:02d}_{src.name}")
        dialog = window.batches.open_batch(batch_in)
        dialog.output_edit.setText(str(tmp / "out"))
        meter.start()
        start = time.perf_counter()
        dialog.start_button.click()
        app.processEvents()
        wait_for(app, lambda: not dialog.running)
        batch_time, batch_stall = time.perf_counter() - start, meter.worst
    finally:
        window.close()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"{len(images)} images from {args.folder}")
    print(
        f"queue: {queue_time:.1f} s, {saved} saved, longest GUI-thread stall "
        f"{1000 * queue_stall:.0f} ms"
    )
    print(f"batch: {batch_time:.1f} s, longest GUI-thread stall {1000 * batch_stall:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
