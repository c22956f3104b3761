"""The least a Ray Data batch can cost on this machine, before any photo is processed.

    python tests/benchmarks/ray_floor.py [--photos 31] [--runs 3]
        [--limit N] [--quick]

Each run is a process of its own that does what ``bgremover remove --ray`` must do
whatever its stages compute — import Ray, start a local Ray, run a Ray Data pipeline
of the same shape (``from_items`` with a block per photo, a task stage, an actor-pool
stage whose actor imports bgremover and creates the u2netp session, a task stage) over
``--photos`` rows whose stages do nothing else, and shut Ray down — and prints its wall
time, split into import, ``ray.init``, the pipeline and shutdown. That is what Ray adds
to the photos' own work (the plain batch makes the same one session): where it exceeds
half of the plain batch's time, no pipeline on Ray Data can finish within 1.5x of the
plain batch on this machine, however its stages are arranged.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import budget

CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
import ray
t1 = time.perf_counter()
ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, logging_level="ERROR",
         log_to_driver=False)
t2 = time.perf_counter()
ctx = ray.data.DataContext.get_current()
ctx.enable_progress_bars = False

def noop(row):
    return row

class Actor:
    def __init__(self):
        from bgremover import Remover
        self.remover = Remover("u2netp")
        self.remover.load()
    def __call__(self, row):
        return row

n = int(sys.argv[1])
ds = ray.data.from_items([{"index": i} for i in range(n)], override_num_blocks=n)
ds = ds.map(noop, num_cpus=0.5)
ds = ds.map(Actor, compute=ray.data.ActorPoolStrategy(size=1), num_cpus=1.0)
ds = ds.map(noop, num_cpus=0.5)
rows = sum(1 for _ in ds.iter_rows())
t3 = time.perf_counter()
ray.shutdown()
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "init": t2 - t1, "pipeline": t3 - t2,
                  "shutdown": t4 - t3, "rows": rows}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--photos", type=int, default=31)
    parser.add_argument("--runs", type=int, default=3)
    budget.add_arguments(parser, "rows (caps --photos)", {"runs": 1})
    args = budget.parse_args(parser)
    if args.limit:
        args.photos = min(args.photos, args.limit)
    walls, parts = [], []
    estimate = budget.Estimate(args.runs, "runs")
    for _ in range(args.runs):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD, str(args.photos)],
                             capture_output=True, text=True, check=True)  # fmt: skip
        walls.append(time.perf_counter() - start)
        parts.append(json.loads(out.stdout.strip().splitlines()[-1]))
        row = parts[-1]
        print(f"run: {walls[-1]:.2f} s wall (import {row['import']:.2f}, init {row['init']:.2f}, "
              f"pipeline {row['pipeline']:.2f}, shutdown {row['shutdown']:.2f})")  # fmt: skip
        estimate.tick()
    print(f"median wall {statistics.median(walls):.2f} s over {args.runs} runs")
    for key in ("import", "init", "pipeline", "shutdown"):
        print(f"  {key}: median {statistics.median(p[key] for p in parts):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
