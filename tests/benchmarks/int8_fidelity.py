"""int8 against fp32 on a folder with ground truth: fidelity, quality and speed per recipe.

    python tests/benchmarks/int8_fidelity.py DATA_DIR [--recipes faithful naive] [--runs 25]
        [--limit N] [--quick]

DATA_DIR has the alphamatting layout (input/, gt/, trimap/). For each recipe the
int8 model is made afresh (timed), then on every image the network masks of fp32
and int8 are compared (IoU at 0.5, mean |Δα| inside the trimap's unknown band)
and scored against the ground truth (SAD). Speed: median inference time of fp32
and of each int8 model, interleaved in one process after warm-up, with the
product's session options (threads as given, 0 = automatic).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import budget
import numpy as np
from PIL import Image

from bgremover import Remover
from bgremover.compare.evaluation import infer_times
from bgremover.mask.metrics import band_mae, iou, sad, trimap_band
from bgremover.network.models import REGISTRY
from bgremover.network.quantize import calibration_files, int8_path, quantize_model
from bgremover.network.store import ModelStore


def grey(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("L"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("data", type=Path)
    parser.add_argument("--model", default="u2netp")
    parser.add_argument("--recipes", nargs="+", default=["faithful", "naive"])
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--threads", type=int, default=0)
    budget.add_arguments(parser, "images", {"limit": 2, "runs": 3, "recipes": ["faithful"]})
    args = budget.parse_args(parser)

    store, spec = ModelStore(), REGISTRY[args.model]
    fp32_path = store.ensure(spec)
    quantize_s: dict[str, float] = {}
    start = time.perf_counter()

    def progress(done: int, steps: int) -> None:  # the first build's first tenth, extrapolated
        if not quantize_s and done == max(1, steps // 10):
            build = (time.perf_counter() - start) * steps / done
            budget.announce(len(args.recipes), "int8 builds", build, then=", then the images")

    for recipe in args.recipes:
        target = int8_path(store, spec, fp32_path, recipe)
        target.unlink(missing_ok=True)
        quantize_s[recipe] = quantize_model(
            fp32_path, target, recipe, calibration_files(), spec.family, progress
        )

    opts = {"refine": False, "threads": args.threads, "providers": "cpu"}
    fp32 = Remover(args.model, **opts)
    int8 = {r: Remover(args.model, precision="int8", recipe=r, **opts) for r in args.recipes}
    images = budget.limited(sorted((args.data / "input").glob("*.png")), args.limit)
    rows: dict[str, list[dict[str, float]]] = {"fp32": [], **{r: [] for r in args.recipes}}
    for path in budget.each(images, "images", then=f", then {args.runs} timing runs"):
        gt = grey(args.data / "gt" / path.name)
        band = trimap_band(grey(args.data / "trimap" / path.name))
        ref = fp32.remove(path)
        rows["fp32"].append({"sad": sad(ref.mask, gt)})
        for recipe, remover in int8.items():
            mask = remover.remove(ref.image).mask
            rows[recipe].append(
                {"iou": iou(ref.mask, mask), "band": band_mae(mask, ref.mask, band),
                 "sad": sad(mask, gt)}
            )  # fmt: skip

    variants = {"fp32": fp32, **int8}
    times = infer_times(variants, np.asarray(Image.open(images[0]).convert("RGB")), args.runs)
    median = {name: statistics.median(t) for name, t in times.items()}

    fp32_sad = float(np.mean([r["sad"] for r in rows["fp32"]]))
    print(f"{len(images)} images; fp32 mean SAD {fp32_sad:.2f}, "
          f"inference {1000 * median['fp32']:.0f} ms (median of {args.runs})")  # fmt: skip
    print(f"{'recipe':<10}{'mean IoU':>9}{'min IoU':>9}{'band|Δα|':>10}{'SAD':>8}{'SAD/fp32':>9}"
          f"{'speed×':>8}{'quant s':>9}")  # fmt: skip
    for recipe in args.recipes:
        r = rows[recipe]
        mean_sad = float(np.mean([x["sad"] for x in r]))
        print(
            f"{recipe:<10}{np.mean([x['iou'] for x in r]):>9.4f}{min(x['iou'] for x in r):>9.4f}"
            f"{np.mean([x['band'] for x in r]):>10.4f}{mean_sad:>8.2f}{mean_sad / fp32_sad:>9.3f}"
            f"{median['fp32'] / median[recipe]:>8.2f}{quantize_s[recipe]:>9.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
