"""int8 against fp32 for a model of any family: mask fidelity per image, and speed.

    python tests/benchmarks/int8_families.py MODEL --images DIR [DIR ...]
        [--recipe generic] [--also MODEL ...] [--runs 3] [--threads 0]
        [--limit N] [--quick]

For every image in each folder the network masks (no refinement) of the int8 model and
of the fp32 one are compared with ``bgremover.mask.metrics.fidelity``: IoU at 0.5, mean
|Δα|, mean |Δα| in the fp32 mask's edge band. ``--also`` adds other models (registry
names or files, run as distributed) compared with the same fp32 masks, such as
``isnet-imgly-small``, IMG.LY's own dynamically quantized IS-Net. Speed: the
median inference time of each variant on one preprocessed image, the variants
interleaved in one process after a warm-up, with the ratio to fp32 from the same run.
The int8 model is made first if the cache has none (its time is printed).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import budget
import numpy as np

from bgremover import Remover
from bgremover.compare.evaluation import infer_times
from bgremover.files.imaging import read_image, walk_images
from bgremover.mask.metrics import fidelity


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--images", type=Path, nargs="+", required=True)
    parser.add_argument("--recipe", default=None, help="default: the family's own")
    parser.add_argument("--also", nargs="*", default=[], metavar="MODEL")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0)
    budget.add_arguments(parser, "images of each folder", {"limit": 2, "runs": 1})
    args = budget.parse_args(parser)

    opts = {"refine": False, "threads": args.threads, "providers": "cpu"}
    fp32 = Remover(args.model, **opts)
    int8 = Remover(args.model, precision="int8", recipe=args.recipe, **opts)
    start = time.perf_counter()
    int8.load()  # made now when not cached
    ready = time.perf_counter() - start
    print(f"{args.model}: int8 recipe {int8.int8_recipe}, ready in {ready:.1f} s")
    variants = {"fp32": fp32, "int8": int8}
    for model in args.also:
        variants[Path(model).stem] = Remover(model, **opts)
    others = [name for name in variants if name != "fp32"]

    keys = ("iou", "mean_abs", "band_abs")
    first_batch = None
    found = [budget.limited(walk_images(folder), args.limit) for folder in args.images]
    estimate = budget.Estimate(sum(map(len, found)), "images", then=", then the timing")
    for folder, images in zip(args.images, found, strict=True):
        rows: dict[str, list[dict[str, float]]] = {name: [] for name in others}
        print(f"\n{folder} ({len(images)} images)")
        header = "".join(f"{f'{n} IoU':>16}{'|Δα|':>8}{'band':>8}" for n in others)
        print(f"{'image':<28}{header}")
        for path in images:
            rgb = read_image(path).rgb
            if first_batch is None:
                first_batch = rgb
            ref = fp32.remove(rgb).mask
            line = f"{path.name[:27]:<28}"
            for name in others:
                m = fidelity(ref, variants[name].remove(rgb).mask)
                rows[name].append({k: float(m[k]) for k in keys})  # type: ignore[arg-type]
                line += f"{m['iou']:>16.4f}{m['mean_abs']:>8.4f}{m['band_abs']:>8.4f}"
            print(line, flush=True)
            estimate.tick()
        for name in others:
            r = rows[name]
            print(
                f"{name:<12} mean IoU {np.mean([x['iou'] for x in r]):.4f}  "
                f"min IoU {min(x['iou'] for x in r):.4f}  "
                f"mean |Δα| {np.mean([x['mean_abs'] for x in r]):.4f}  "
                f"edge band |Δα| {np.mean([x['band_abs'] for x in r]):.4f} "
                f"(max {max(x['band_abs'] for x in r):.4f})"
            )

    if first_batch is None:
        return 1
    # Each variant's input as its own model wants it (an --also model may be another family).
    times = infer_times(variants, first_batch, args.runs, warmup=1)
    median = {name: statistics.median(t) for name, t in times.items()}
    print(f"\ninference, median of {args.runs} interleaved runs ({args.threads or 'auto'} threads)")
    for name in variants:
        print(
            f"{name:<12} {median[name]:7.2f} s  {median[name] / median['fp32']:5.2f}x fp32's time"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
