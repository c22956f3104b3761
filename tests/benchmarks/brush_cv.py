"""A constant of the edge-aware brush chosen on one folder and scored on the other, both ways.

    python tests/benchmarks/brush_cv.py --param NAME V1,V2,... [--offsets 0.5,1]
        [--matting DIR] [--portraits DIR] [--masks DIR] [-j 2]
        [--limit N] [--quick]

The rule of this project is never to tune on what is scored. This runs
``tests/benchmarks/brush.py`` (as a subprocess, with ``--set NAME=VALUE``) for each
value, on the matting folder (``input`` + ``gt``) and on the portraits folder
(``input`` + ``reference_alpha``), at each ``--offsets`` (the strokes' centre line,
radii off the outline), and reads its per-photo rows. A value's score on a folder is
first the number of (photo, tool, offset) rows where the edge-aware brush's mean
footprint error is above the plain brush's, then the mean edge-aware footprint error
over those rows. The value with the best score on one folder (ties: the first given)
is scored on the other, both ways. Printed: each value's score on each folder, the
choice of each direction and its held-out score, and the per-photo rows of the
held-out runs.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import budget

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1].parent / "shared" / "data"

#: One photo's row of brush.py: name, size, strokes, then per tool (erase, restore)
#: the errors before, plain, edge-aware and the strokes edge-aware was worse on.
Row = tuple[str, list[float]]


def run(
    folder: Path, truths: str, value: str, name: str, offset: str, masks: Path, limit: int
) -> list[Row]:
    cmd = [
        sys.executable,
        str(HERE / "brush.py"),
        str(folder / "input"),
        str(folder / truths),
        "--offset",
        offset,
        "--masks",
        str(masks / folder.name),
        "--set",
        f"{name}={value}",
    ]
    if limit:
        cmd += ["--images", str(limit)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 11 and "x" in parts[1] and parts[0] != "MEAN":
            rows.append((parts[0], [float(v) for v in parts[3:]]))
    return rows


def score(runs: dict[str, list[Row]]) -> tuple[int, float]:
    """(rows where edge-aware is worse than plain, mean edge-aware error) over offsets and tools."""
    worse, edge = 0, []
    for rows in runs.values():
        for _, v in rows:
            for plain, aware in ((v[1], v[2]), (v[5], v[6])):
                worse += aware > plain
                edge.append(aware)
    return worse, statistics.fmean(edge) if edge else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--param", nargs=2, metavar=("NAME", "VALUES"), required=True)
    ap.add_argument("--offsets", default="0.5,1")
    ap.add_argument("--matting", type=Path, default=DATA / "matting")
    ap.add_argument("--portraits", type=Path, default=DATA / "portraits")
    ap.add_argument("--masks", type=Path, default=Path("/tmp/brush-masks"))
    ap.add_argument("-j", type=int, default=2, help="runs at once")
    budget.add_arguments(ap, "photos of each folder", {"limit": 2, "offsets": "0.5"})
    args = budget.parse_args(ap, argv)
    name, values = args.param[0], args.param[1].split(",")
    offsets = args.offsets.split(",")
    folders = {"matting": (args.matting, "gt"), "portraits": (args.portraits, "reference_alpha")}
    jobs = {
        (f, v, o): (folder, truths, v, name, o, args.masks, args.limit)
        for f, (folder, truths) in folders.items()
        for v in values
        for o in offsets
    }
    with ThreadPoolExecutor(args.j) as pool:
        start = time.perf_counter()
        done = {key: pool.submit(run, *job) for key, job in jobs.items()}
        next(as_completed(done.values()))
        first = time.perf_counter() - start
        rounds = math.ceil(len(jobs) / args.j)
        budget.say(
            f"{len(jobs)} runs of brush.py, {args.j} at a time, ~{budget.duration(first)} each "
            f"≈ {budget.duration(rounds * first)}"
        )
        results = {key: fut.result() for key, fut in done.items()}
    scores = {
        (f, v): score({o: results[f, v, o] for o in offsets}) for f in folders for v in values
    }
    print(f"{name}: rows worse than plain / mean edge-aware footprint error (offsets {offsets})")
    for v in values:
        cells = "".join(f"  {f} {scores[f, v][0]:>3} {scores[f, v][1]:.4f}" for f in folders)
        print(f"{v:>10}{cells}")
    for chosen_on, scored_on in (("matting", "portraits"), ("portraits", "matting")):
        best = min(values, key=lambda v: scores[chosen_on, v])
        worse, edge = scores[scored_on, best]
        print(
            f"chosen on {chosen_on}: {name}={best}; held out on {scored_on}: {worse} rows "
            f"worse than plain, mean edge-aware footprint error {edge:.4f}"
        )
        for o in offsets:
            for stem, v in results[scored_on, best, o]:
                print(
                    f"  {stem:<12} offset {o:>4}  erase plain {v[1]:.4f} edge {v[2]:.4f} "
                    f"({v[3]:.0f} strokes worse)  restore plain {v[5]:.4f} edge {v[6]:.4f} "
                    f"({v[7]:.0f} worse)"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
