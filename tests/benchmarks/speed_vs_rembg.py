"""Time rembg and bgremover on the same folder, in the same run.

    python tests/benchmarks/speed_vs_rembg.py FOLDER [FOLDER...] [--runs 3] [--model u2netp]
        [--limit N] [--quick]

Each tool runs as its own process over all images of the folders, alternately,
``--runs`` times. Printed per tool: median wall time, seconds per image, peak
RSS of the process and bytes written; then the ratio rembg / bgremover.

rembg runs the loop of its `rembg p` folder command through its Python API
(one session, `remove()` on each file's bytes, PNG written), because rembg's CLI
extra pulls in a web UI stack. Both tools read the same model file from
bgremover's cache, so nothing is downloaded during timing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import budget

from bgremover.files.imaging import walk_images
from bgremover.network.store import ModelStore

REMBG_LOOP = """
import sys
from pathlib import Path
from rembg import new_session, remove
session = new_session(sys.argv[1])
out = Path(sys.argv[2])
for src in sys.argv[3:]:
    data = Path(src).read_bytes()
    (out / (Path(src).stem + ".png")).write_bytes(remove(data, session=session))
"""


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[:4]} failed: {proc.stderr.read().decode()[-2000:]}")
    rss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return elapsed, rss


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model", default="u2netp")
    parser.add_argument(
        "--precision",
        nargs="+",
        default=["fp32", "int8"],
        help="bgremover precisions to time (each its own row)",
    )
    budget.add_arguments(parser, "images", {"limit": 3, "runs": 1})
    args = budget.parse_args(parser)

    images = [p for folder in args.folders for p in walk_images(folder)]
    images = budget.limited(images, args.limit)
    model_dir = ModelStore().ensure(args.model).parent
    env = {**os.environ, "U2NET_HOME": str(model_dir)}
    work = Path(tempfile.mkdtemp(prefix="bgremover-bench-"))
    flat = work / "in"  # one flat folder of links so both tools see the same inputs
    flat.mkdir()
    for i, src in enumerate(images):
        (flat / f"{i:04d}_{src.name}").symlink_to(src.resolve())
    inputs = sorted(flat.iterdir())

    def ours(precision: str):
        return lambda out: [
            sys.executable, "-m", "bgremover", "remove", str(flat), "-o", str(out),
            "--model", args.model, "--precision", precision, "-q",
        ]  # fmt: skip

    tools = {
        "rembg": lambda out: (
            [sys.executable, "-c", REMBG_LOOP, args.model, str(out)] + [str(p) for p in inputs]
        ),
        **{f"bgremover {p}": ours(p) for p in args.precision},
    }
    results: dict[str, list[tuple[float, int, int]]] = {name: [] for name in tools}
    estimate = budget.Estimate(args.runs * len(tools), f"batches of {len(inputs)} images")
    try:
        for _ in range(args.runs):
            for name, command in tools.items():
                out = work / name
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                seconds, rss = timed(command(out), env)
                results[name].append((seconds, rss, folder_bytes(out)))
                estimate.tick()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"{len(inputs)} images, model {args.model}, {args.runs} runs, medians")
    print(f"{'tool':<16} {'time s':>8} {'s/image':>8} {'peak RSS MB':>12} {'output MB':>10}")
    medians = {}
    for name, rows in results.items():
        t = statistics.median(r[0] for r in rows)
        rss = statistics.median(r[1] for r in rows) / 1e6
        size = statistics.median(r[2] for r in rows) / 1e6
        medians[name] = t
        print(f"{name:<16} {t:>8.2f} {t / len(inputs):>8.3f} {rss:>12.0f} {size:>10.1f}")
    for name in medians:
        if name != "rembg":
            print(f"ratio rembg / {name}: {medians['rembg'] / medians[name]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
