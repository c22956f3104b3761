"""Longest stall of the GUI thread while the user paints on a 12-megapixel photo.

    python tests/benchmarks/edit_stall.py PHOTO [--strokes 6] [--rate 60] [--clicks 6]
        [--limit N] [--quick]

The photo is opened in the app (offscreen), edit mode is turned on, and brush
strokes are driven through the Result view's viewport at ``--rate`` mouse events
a second (press, a second of moves, release), alternating erase and restore, with
the mask overlay on and then off. A 5 ms QTimer ticks on the GUI thread; the
largest gap between two ticks, minus the interval, is the longest time the GUI
could not respond (as tests/benchmarks/gui_stall.py). Also printed: how long the
full-size apply of a stroke took after its release (it runs as a job, off the
GUI thread), and an undo. With ``--clicks N``, the wait for the click model to be bound
to the photo (its encoding job) and then N Add / Remove clicks, alternating, one after
another as a user makes them, are measured the same way. For a camera-size photo:
``../shared/tools/make_camera_set.py ../shared/data/photos DST``.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEvent, QPointF, QSettings, Qt, QTimer
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication

from bgremover.gui.queue import Status
from bgremover.gui.window import MainWindow, application
from bgremover.touchup.edit import Apply, Undo

sys.path.insert(0, str(Path(__file__).resolve().parent))
import budget
from gui_stall import StallMeter, wait_for


def send(window: MainWindow, kind: QEvent.Type, x: float, y: float) -> None:
    viewer = window.viewer
    at = QPointF(viewer.viewportTransform().map(QPointF(x, y)))
    left = Qt.MouseButton.LeftButton
    button = Qt.MouseButton.NoButton if kind == QEvent.Type.MouseMove else left
    buttons = Qt.MouseButton.NoButton if kind == QEvent.Type.MouseButtonRelease else left
    event = QMouseEvent(kind, at, at, button, buttons, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(viewer.viewport(), event)


def paint(app, window: MainWindow, strokes: int, rate: float) -> tuple[float, list[float]]:
    """Drive ``strokes`` strokes at ``rate`` events a second; the worst stall and, per
    stroke, the seconds from its release to its full-size apply."""
    entry = window.current_entry()
    assert entry is not None and entry.processed is not None
    h, w = entry.processed.result.mask.shape
    cx, cy = w / 2, h / 2
    moves = round(rate)  # a second of moves per stroke
    events: list[tuple[QEvent.Type, float, float, int]] = []
    for s in range(strokes):
        y = cy + (s - strokes / 2) * h / (3 * strokes)
        for i in range(moves + 1):
            t = i / moves
            x = cx - w / 4 + t * w / 2
            yy = y + 0.05 * h * math.sin(6 * t)
            kind = QEvent.Type.MouseMove
            if i == 0:
                kind = QEvent.Type.MouseButtonPress
            elif i == moves:
                kind = QEvent.Type.MouseButtonRelease
            events.append((kind, x, yy, s))
    released: dict[int, float] = {}
    applied: list[float] = []
    before = len(entry.edits.operations) if entry.edits else 0

    def on_edited(e, box, move) -> None:
        if e is entry and isinstance(move.command, Apply):
            applied.append(time.perf_counter() - released[len(applied)])

    window.jobs.edited.connect(on_edited)
    meter = StallMeter()
    meter.start()
    step = {"i": 0}
    driver = QTimer()
    driver.setTimerType(Qt.TimerType.PreciseTimer)
    driver.setInterval(round(1000 / rate))

    def next_event() -> None:
        if step["i"] >= len(events):
            driver.stop()
            return
        kind, x, y, s = events[step["i"]]
        step["i"] += 1
        if kind == QEvent.Type.MouseButtonPress:
            window.editing.set_tool("erase" if s % 2 == 0 else "restore")
        send(window, kind, x, y)
        if kind == QEvent.Type.MouseButtonRelease:
            released[s] = time.perf_counter()

    driver.timeout.connect(next_event)
    driver.start()
    wait_for(app, lambda: step["i"] >= len(events) and not window.jobs.edits_busy(entry))
    wait_for(app, lambda: len(applied) >= strokes)
    window.jobs.edited.disconnect(on_edited)
    assert entry.edits is not None and len(entry.edits.operations) == before + strokes
    return meter.worst, applied


def click(app, window: MainWindow, count: int) -> tuple[float, float, float, list[float]]:
    """Wait for the click model to be bound to the photo shown, then make ``count`` clicks:
    the worst stall while encoding, the encoding's seconds, the worst stall while clicking,
    and each click's seconds from its release to its full-size apply."""
    entry = window.current_entry()
    assert entry is not None and entry.processed is not None
    h, w = entry.processed.result.mask.shape
    meter = StallMeter()
    meter.start()
    start = time.perf_counter()
    wait_for(app, lambda: entry.editing.clicks is not None or window.editing.clicks.unavailable)
    encode, encode_stall = time.perf_counter() - start, meter.worst
    if entry.editing.clicks is None:
        raise SystemExit(f"the click model is not available: {window.editing.clicks.unavailable}")
    meter = StallMeter()
    meter.start()
    applied = []
    estimate = budget.Estimate(count, "clicks")
    for i in range(count):
        window.editing.set_tool("add" if i % 2 == 0 else "remove")
        x, y = w * (0.3 + 0.4 * ((i * 0.37) % 1)), h * (0.3 + 0.4 * ((i * 0.61) % 1))
        send(window, QEvent.Type.MouseMove, x, y)
        send(window, QEvent.Type.MouseButtonPress, x, y)
        send(window, QEvent.Type.MouseButtonRelease, x, y)
        released = time.perf_counter()
        wait_for(app, lambda: not window.jobs.edits_busy(entry))
        applied.append(time.perf_counter() - released)
        estimate.tick()
    return encode_stall, encode, meter.worst, applied


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("photo", type=Path)
    parser.add_argument("--strokes", type=int, default=6)
    parser.add_argument("--rate", type=float, default=60.0, help="mouse events a second")
    parser.add_argument("--radius", type=float, default=60.0, help="brush radius (photo px)")
    parser.add_argument("--edge-aware", action="store_true", help="edge-aware brushes")
    parser.add_argument("--clicks", type=int, default=0, help="then this many clicks")
    budget.add_arguments(parser, "strokes (per pass) and clicks", {"strokes": 2})
    args = budget.parse_args(parser)
    if args.limit:
        args.strokes, args.clicks = min(args.strokes, args.limit), min(args.clicks, args.limit)

    tmp = Path(tempfile.mkdtemp(prefix="bgremover-edit-stall-"))
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp / "settings"))
    app = application()
    window = MainWindow()
    window.confirm_quit = False
    window.show()
    try:
        window.add_paths([args.photo])
        wait_for(
            app,
            lambda: all(e.status in (Status.DONE, Status.FAILED) for e in window.queue.entries()),
        )
        entry = window.current_entry()
        if entry is None or entry.processed is None:
            raise SystemExit(f"{args.photo} could not be processed")
        h, w = entry.processed.result.mask.shape
        window.editing.set_edit_mode(True)
        window.editing.tools.set_radius(args.radius)
        window.editing.tools.edge_aware = args.edge_aware
        app.processEvents()
        results = {}
        estimate = budget.Estimate(2, f"passes of {args.strokes} strokes (overlay on, off)")
        for overlay in (True, False):
            if window.touchup_menu.overlay.isChecked() != overlay:
                window.touchup_menu.overlay.trigger()
            app.processEvents()
            results[overlay] = paint(app, window, args.strokes, args.rate)
            estimate.tick()
        meter = StallMeter()
        meter.start()
        start = time.perf_counter()
        window.editing.edit(Undo())
        wait_for(app, lambda: not window.jobs.edits_busy(entry))
        undo_time, undo_stall = time.perf_counter() - start, meter.worst
        clicked = click(app, window, args.clicks) if args.clicks else None
    finally:
        window.close()
        shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"{args.photo.name}: {w}×{h} ({w * h / 1e6:.1f} MP), brush radius {args.radius:g} px"
        + (", edge-aware" if args.edge_aware else "")
    )
    for overlay, (stall, applied) in results.items():
        print(
            f"overlay {'on ' if overlay else 'off'}: {args.strokes} strokes at "
            f"{args.rate:g} events/s, longest GUI-thread stall {1000 * stall:.0f} ms; "
            f"full-size apply after release {1000 * min(applied):.0f}–"
            f"{1000 * max(applied):.0f} ms"
        )
    print(f"undo: {1000 * undo_time:.0f} ms, longest GUI-thread stall {1000 * undo_stall:.0f} ms")
    if clicked is not None:
        encode_stall, encode, click_stall, times = clicked
        print(
            f"click model: bound in {encode:.1f} s (longest GUI-thread stall "
            f"{1000 * encode_stall:.0f} ms); {args.clicks} clicks, longest GUI-thread stall "
            f"{1000 * click_stall:.0f} ms; full-size apply after release "
            f"{min(times):.2f}–{max(times):.2f} s, median {statistics.median(times):.2f} s "
            f"({', '.join(f'{t:.2f}' for t in times)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
