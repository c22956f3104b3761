"""``bgremover-gui [FILES or FOLDERS...] [--compare] [--compare-a/-b MODEL[:PRECISION]]
[--screenshot OUT.png]``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .. import __version__
from ..errors import BgRemoverError
from . import startup
from .wording import app_message


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bgremover-gui", description="bgremover desktop app")
    parser.add_argument("paths", nargs="*", type=Path, help="images or folders to open")
    parser.add_argument(
        "--compare", action="store_true", help="show the A | B comparison of the first image"
    )
    for side, default in (("a", "fp32"), ("b", "int8")):
        parser.add_argument(
            f"--compare-{side}",
            metavar="MODEL[:PRECISION]",
            help=f"side {side.upper()} of the comparison (implies --compare): a model name or "
            f".onnx path, with :fp32 or :int8; default: the current model's {default}",
        )
    parser.add_argument(
        "--screenshot",
        type=Path,
        metavar="OUT.png",
        help="when everything is processed, save a PNG of the window and exit",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600,
        help="with --screenshot: give up after this many seconds (exit 1)",
    )
    parser.add_argument("--version", action="version", version=f"bgremover {__version__}")
    return parser.parse_args(argv)


def _load_runtime() -> BgRemoverError | None:
    """ONNX Runtime loaded, or why it cannot be (said once Qt can show it)."""
    from ..network.session import load_runtime

    try:
        load_runtime()
    except BgRemoverError as exc:
        return exc
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    sides = None
    if args.compare_a or args.compare_b:
        from ..compare.comparison import parse_side

        args.compare = True
        try:
            # None for the model: the current one (a precision alone keeps following it).
            sides = tuple(
                parse_side(text, f"--compare-{name}", "", precision)
                for text, name, precision in (
                    (args.compare_a, "a", "fp32"),
                    (args.compare_b, "b", "int8"),
                )
            )
        except BgRemoverError as exc:
            print(f"bgremover-gui: {exc}", file=sys.stderr)
            return 2
    # The engine's notes (a model obtained from a mirror, files left by a killed batch
    # removed) and warnings go to the window's status bar.
    logging.getLogger("bgremover").setLevel(logging.INFO)
    if (
        args.screenshot
        and "QT_QPA_PLATFORM" not in os.environ
        and not os.environ.get("DISPLAY")
        and sys.platform.startswith("linux")
    ):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"  # scripted runs need no screen
    # No display, or system libraries Qt's platform plugin needs are missing: say so and
    # what to install, instead of Qt's abort.
    problem = startup.check()
    if problem:
        if sys.stderr is not None:
            print(problem, file=sys.stderr)
        return 2
    # ONNX Runtime is loaded before Qt, never after: on Windows, Qt's older MSVC runtime
    # loaded first makes it fail to initialise (see session.load_runtime).
    runtime_error = _load_runtime()
    from PySide6.QtCore import QTimer

    from .entry import Status
    from .window import MainWindow, application

    app = application()
    if runtime_error is not None:
        from PySide6.QtWidgets import QMessageBox

        if sys.stderr is not None:
            print(f"bgremover-gui: {runtime_error}", file=sys.stderr)
        if not args.screenshot:  # a scripted run has no one to click OK
            text = f"{app_message(runtime_error)}\n\n{runtime_error.technical}".strip()
            QMessageBox.critical(None, "bgremover cannot start", text)
        return 2
    window = MainWindow()
    if sides is not None:
        window.compare.set_sides(*((model or None, precision) for model, precision in sides))
    if hasattr(app, "fileOpened"):  # files opened from the Finder while the app runs
        app.fileOpened.connect(lambda path: window.add_paths([path]))
    window.show()
    launched = time.monotonic()
    exit_code = {"value": 0}

    if args.paths:
        missing = [p for p in args.paths if not p.exists()]
        for p in missing:
            window.statusBar().showMessage(f"Not found: {p}", 8000)
        window.add_paths([p for p in args.paths if p.exists()])
        if args.compare and len(window.queue):
            window.tabs.setCurrentWidget(window.compare)
            first = window.queue.at(0)
            assert first is not None
            window.select(first)

    if args.screenshot:
        out: Path = args.screenshot
        window.confirm_quit = False  # a scripted run saves nothing and asks nothing

        def shoot() -> None:
            app.processEvents()
            entries = window.queue.entries()
            failed = [e for e in entries if e.status is Status.FAILED or e.compare_error]
            if not entries:
                print(
                    "bgremover-gui: nothing to process (no images given or found)", file=sys.stderr
                )
                exit_code["value"] = 1
            for e in failed:
                print(f"bgremover-gui: {e.name}: {e.error or e.compare_error}", file=sys.stderr)
                exit_code["value"] = 1
            if not window.grab().save(str(out)):
                print(f"bgremover-gui: could not write {out}", file=sys.stderr)
                exit_code["value"] = 1
            else:
                print(
                    f"bgremover-gui: screenshot {out} ({time.monotonic() - launched:.1f} s "
                    "after launch)"
                )
            window.close()
            app.quit()

        def settled() -> None:
            if args.compare and len(window.queue):
                entry = window.current_entry()
                if (
                    entry is not None
                    and not window.comparison_current(entry)
                    and not entry.compare_error
                    and entry.status is not Status.FAILED
                ):
                    return
            QTimer.singleShot(300, shoot)  # let the views repaint first

        def give_up() -> None:
            print(f"bgremover-gui: still busy after {args.timeout:.0f} s", file=sys.stderr)
            exit_code["value"] = 1
            shoot()

        window.settled.connect(settled)
        QTimer.singleShot(int(args.timeout * 1000), give_up)
        if not len(window.queue):
            QTimer.singleShot(300, shoot)

    code = app.exec()
    return exit_code["value"] or code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
