"""int8 against fp32, next to fp32 against itself: how much of int8's disagreement is the
network's own instability.

    python tests/benchmarks/int8_noise_floor.py FOLDER [FOLDER ...] [--model u2netp]
        [--seed 0]
        [--limit N] [--quick]

For every photo of each folder, network masks only (no refinement), thresholded at 0.5:
- ``fp32~noise``: IoU of fp32's mask against fp32's mask of the same photo with
  +-1/255 of uniform integer noise added to every channel (invisible; JPEG re-encoding
  changes a photo more). Where this is low, the network is unstable on the photo: any
  perturbation, quantization included, flips regions.
- ``int8``: IoU of the int8 mask (the default recipe, with the int8 guard as the app and
  the command line run it) against fp32's; ``unguarded``: the same without the guard.
  For a combined model with int8 members (``--model best``: IS-Net in int8): the model as
  it runs against the same model with every member in fp32.
- ``bar``: what int8 must reach on the photo, min(0.98, fp32~noise - 0.02): 0.98, or
  where fp32 itself moves more than that under the noise, that floor less 0.02.
Printed: one row per photo (``miss`` where int8 with the guard is under the bar), then per
folder the mean, the lowest and how many photos are below 0.98 for each column, and how
many miss the bar with and without the guard. Fidelity targets below the noise floor of a photo
cannot be met by any int8 recipe on it; only a per-image guard that runs fp32 can.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import budget
import numpy as np

from bgremover import Remover
from bgremover.files.imaging import IMAGE_EXTENSIONS, from_array, read_image
from bgremover.mask.metrics import iou
from bgremover.network.models import resolve_spec

#: int8's IoU against fp32 wherever fp32 itself holds still under the noise.
BAR = 0.98


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--model", default="u2netp")
    parser.add_argument("--seed", type=int, default=0)
    budget.add_arguments(parser, "photos of each folder", {"limit": 3})
    args = budget.parse_args(parser)
    spec = resolve_spec(args.model)
    if spec.int8_members:  # best: as it runs (IS-Net int8) against all its models in fp32
        fp32 = Remover(replace(spec, int8_members=()), refine=False)
        int8 = Remover(spec, refine=False)
    else:
        fp32 = Remover(spec, refine=False)
        int8 = Remover(spec, precision="int8", refine=False)
    unguarded = int8.without_guard()
    for remover in (fp32, int8, unguarded):  # int8 made now if not cached: not in the estimate
        remover.load()
    rng = np.random.default_rng(args.seed)
    found = [
        budget.limited(
            sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_EXTENSIONS),
            args.limit,
        )
        for folder in args.folders
    ]
    estimate = budget.Estimate(sum(map(len, found)), "photos")
    for folder, photos in zip(args.folders, found, strict=True):
        print(f"\n{folder}\n{'photo':<28}{'fp32~noise':>11}{'int8':>9}{'unguarded':>10}"
              f"{'bar':>7}")  # fmt: skip
        rows = []
        for photo in photos:
            rgb = read_image(photo).rgb
            mask = fp32.remove(from_array(rgb)).mask
            noise = rng.integers(-1, 2, rgb.shape, dtype=np.int16)
            noisy = np.clip(rgb.astype(np.int16) + noise, 0, 255).astype(np.uint8)
            floor = iou(mask, fp32.remove(from_array(noisy)).mask)
            row = (floor, iou(mask, int8.remove(from_array(rgb)).mask),
                   iou(mask, unguarded.remove(from_array(rgb)).mask),
                   min(BAR, floor - 0.02))  # fmt: skip
            rows.append(row)
            miss = "  miss" if row[1] < row[3] else ""
            print(f"{photo.stem[:27]:<28}{row[0]:>11.4f}{row[1]:>9.4f}{row[2]:>10.4f}"
                  f"{row[3]:>7.3f}{miss}")  # fmt: skip
            estimate.tick()
        values = np.array(rows)
        for k, name in enumerate(("fp32~noise", "int8", "unguarded")):
            col = values[:, k]
            print(f"{name:<11} mean {col.mean():.4f}  lowest {col.min():.4f}  "
                  f"below 0.98: {(col < BAR).sum()} of {len(col)}")  # fmt: skip
        print(f"under the bar: {(values[:, 1] < values[:, 3]).sum()} of {len(values)} with the "
              f"guard, {(values[:, 2] < values[:, 3]).sum()} without")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
