"""What an export costs: a preset's batch against the plain transparent-PNG batch.

    python tests/benchmarks/export_batch.py FOLDER [--preset product-white-square]
        [--options "--background blur --crop --shadow"] [--runs 3] [--check-layout]
        [--limit N] [--quick]

Runs ``bgremover remove FOLDER -o OUT`` as a process, plain and with the export
options, in turn (plain, export, plain, export, ...), each into a fresh folder, and
prints each run's wall time and peak RSS (the process's own accounting, from
wait4), the medians and the export/plain ratios pair by pair.

``--check-layout`` also checks every photo's layout on the canvas before flattening
(the engine's placed alpha, as the batch computes it): the subject's box within
the margin and centred, one row per photo.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import budget


def run(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{shlex.join(command)} failed:\n{err}")
    return wall, usage.ru_maxrss / 1024  # kB on Linux


def check_layout(folder: Path, values: dict, limit: int = 0) -> int:
    """Per photo: the subject's box on the canvas, its margins, whether it is centred."""
    from bgremover.engine.pipeline import Remover
    from bgremover.export.compose import ComposeOptions, placed_alpha
    from bgremover.export.presets import options_from
    from bgremover.files.imaging import walk_images
    from bgremover.mask.subject import subject_box

    options, _ = options_from(values, ComposeOptions())
    remover = Remover()
    bad = 0
    print(f"{'photo':32s} {'canvas':>11s} {'box (x0 y0 x1 y1)':>22s} {'margins l/t/r/b':>20s}  ok")
    for path in budget.each(budget.limited(walk_images(folder), limit), "photos"):
        result = remover.remove(path)
        placed = placed_alpha(result.alpha, options)
        height, width = placed.shape
        box = subject_box(placed)
        if box is None:
            print(f"{path.name:32s} no subject")
            continue
        x0, y0, x1, y1 = box
        need = options.margin.pixels(min(width, height)) if options.canvas else 0
        margins = (x0, y0, width - x1, height - y1)
        inside = min(margins) >= int(need)
        centred = abs(margins[0] - margins[2]) <= 2 and (
            options.position == "bottom" or abs(margins[1] - margins[3]) <= 2
        )
        touches = min(margins) <= need + 2  # scaled to fit: it reaches the margin
        ok = inside and centred and touches
        bad += not ok
        print(
            f"{path.name:32s} {width:5d}x{height:<5d} {x0:5d} {y0:5d} {x1:5d} {y1:5d} "
            f"{'/'.join(map(str, margins)):>20s}  {'yes' if ok else 'NO'}"
        )
        del result, placed
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--preset", default=None)
    parser.add_argument("--options", default="", help="export flags, as one string")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--check-layout", action="store_true")
    budget.add_arguments(parser, "photos of FOLDER", {"limit": 3, "runs": 1})
    args = budget.parse_args(parser)
    export_flags = shlex.split(args.options) + (["--preset", args.preset] if args.preset else [])
    if not export_flags:
        export_flags = ["--preset", "product-white-square"]
    rows: dict[str, list[tuple[float, float]]] = {"plain": [], "export": []}
    with tempfile.TemporaryDirectory(prefix="bgremover-export-") as work:
        (folder,) = budget.first_photos([args.folder], args.limit, Path(work))
        base = [sys.executable, "-m", "bgremover", "remove", str(folder), "-q"]
        warm, _ = run([*base, "-o", str(Path(work) / "warm")])  # model cache and disk cache warm
        budget.announce(2 * args.runs, "batches (plain, export)", warm)
        for i in range(args.runs):
            for kind, flags in (("plain", []), ("export", export_flags)):
                out = Path(work) / f"{kind}{i}"
                rows[kind].append(run([*base, "-o", str(out), *flags]))
                wall, rss = rows[kind][-1]
                print(f"run {i + 1} {kind:6s} {wall:6.2f} s  {rss:6.0f} MB", flush=True)
    print(f"export flags: {shlex.join(export_flags)}")
    for kind in rows:
        walls = [w for w, _ in rows[kind]]
        peaks = [m for _, m in rows[kind]]
        print(
            f"{kind:6s} median {statistics.median(walls):6.2f} s  "
            f"peak RSS median {statistics.median(peaks):6.0f} MB"
        )
    time_ratios = [e[0] / p[0] for p, e in zip(rows["plain"], rows["export"], strict=True)]
    rss_ratios = [e[1] / p[1] for p, e in zip(rows["plain"], rows["export"], strict=True)]
    print(
        f"export/plain time ratio: median {statistics.median(time_ratios):.3f} "
        f"(pairs {' '.join(f'{r:.3f}' for r in time_ratios)})"
    )
    print(
        f"export/plain peak RSS ratio: median {statistics.median(rss_ratios):.3f} "
        f"(pairs {' '.join(f'{r:.3f}' for r in rss_ratios)})"
    )
    if args.check_layout:
        from bgremover.export.presets import get_preset

        values = dict(get_preset(args.preset).values) if args.preset else {}
        if args.options:
            from bgremover.cli import build_parser, export_values

            parsed = build_parser().parse_args(
                ["remove", str(args.folder), "-o", "x", *shlex.split(args.options)]
            )
            values.update(export_values(parsed))
        values.pop("format", None)
        values.pop("quality", None)
        bad = check_layout(args.folder, values, args.limit)
        print(f"layout: {bad} photo(s) off the canvas rules")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
