"""Does a long batch keep its memory flat? RSS along a run of ~1000 images.

    python tests/benchmarks/memory_growth.py FOLDER [FOLDER...] [--images 1000] [--precision fp32]
        [--limit N] [--quick]

The photos of the folders are repeated (as links in a temporary folder) until
there are ``--images`` of them, then run through the same batch pipeline the
CLI and the app use, in this process. The resident set size is read after
every image; printed are RSS at a few points and the growth between image 100
and the last image (the first hundred include warm-up: ONNX Runtime's arena,
the allocator's pools). Linux (reads /proc/self/statm).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import budget

from bgremover.engine.batch import ItemDone, ItemFailed, run_batch
from bgremover.engine.pipeline import Remover
from bgremover.engine.plan import plan_batch
from bgremover.files.imaging import walk_images


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--precision", default="fp32", choices=["fp32", "int8"])
    budget.add_arguments(parser, "images (caps --images)", {"limit": 30})
    args = budget.parse_args(parser)
    if args.limit:
        args.images = min(args.images, args.limit)

    photos = [p for folder in args.folders for p in walk_images(folder)]
    if not photos:
        raise SystemExit("no images found")
    work = Path(tempfile.mkdtemp(prefix="bgremover-growth-"))
    try:
        src = work / "in"
        src.mkdir()
        for i in range(args.images):
            photo = photos[i % len(photos)]
            (src / f"{i:05d}{photo.suffix}").symlink_to(photo.resolve())
        remover = Remover(precision=args.precision)
        remover.load()
        plan = plan_batch([src], work / "out", "png")
        marks = {1, 10, 100, 250, 500, 750, args.images}
        rss: dict[int, float] = {}
        count = failed = 0
        start = time.perf_counter()
        estimate = budget.Estimate(args.images, "images", first=10)
        for event in run_batch(plan.jobs, remover):
            if isinstance(event, (ItemDone, ItemFailed)):
                estimate.tick()
                count += 1
                failed += isinstance(event, ItemFailed)
                if count in marks:
                    rss[count] = rss_mb()
                    print(f"image {count:5d}: RSS {rss[count]:7.1f} MB", flush=True)
                if isinstance(event, ItemDone):
                    (event.job.output).unlink()  # keep the disk use small
        seconds = time.perf_counter() - start
    finally:
        shutil.rmtree(work, ignore_errors=True)
    last = max(rss)
    base = 100 if 100 in rss else min(rss)
    print(
        f"{count} images ({failed} failed), {args.precision}, {seconds:.0f} s; "
        f"RSS growth from image {base} to {last}: {rss[last] - rss[base]:+.1f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
