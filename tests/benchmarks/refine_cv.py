"""Choose a refinement parameter by leave-one-out cross-validation over two folders.

    python tests/benchmarks/refine_cv.py DATA_ROOT --param NAME V1,V2,...
        [--limit N] [--quick]

DATA_ROOT holds the two scored folders: ``matting`` (input/, gt/: ground truth,
scored as SAD) and ``portraits`` (input/, reference_alpha/: scored as mean |Δα|).
NAME is a keyword of :func:`bgremover.mask.refine.refine_alpha` (``none`` as a value
passes None). Every photo's error with each value is divided by its error without
refinement (the ``--no-refine`` mask, rembg's), so the two folders share one scale.

The value is chosen by the rule the quality issue sets: fewest photos made worse
than 1.02 times their unrefined error, then the lowest mean ratio. Each photo is
scored with the value chosen on the other photos of both folders (leave-one-out),
so no photo's figure comes from a value chosen on it. Printed: the ratio of every
photo for every value, the value chosen on all photos, and per photo the value
chosen without it and its held-out error; then the held-out means per folder and
the photos still worse than 1.02 times unrefined.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import budget
import numpy as np
from PIL import Image

from bgremover.engine.pipeline import EngineConfig, Remover, model_mask
from bgremover.mask.metrics import mean_abs_diff, sad
from bgremover.mask.refine import refine_alpha

FOLDERS = (("matting", "gt", "SAD"), ("portraits", "reference_alpha", "|Δα|"))
WORSE = 1.02


def error(alpha: np.ndarray, truth: np.ndarray, kind: str) -> float:
    return sad(alpha, truth) if kind == "SAD" else mean_abs_diff(alpha, truth)


def parse_value(text: str) -> float | None:
    return None if text.lower() == "none" else float(text)


def choose(ratios: dict[str, dict[str, float]], photos: list[str], values: list[str]) -> str:
    """The value with the fewest of ``photos`` worse than ``WORSE``, then the lowest mean."""

    def key(value: str) -> tuple[int, float]:
        rs = [ratios[p][value] for p in photos]
        return sum(r > WORSE for r in rs), float(np.mean(rs))

    return min(values, key=key)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--param", nargs=2, metavar=("NAME", "VALUES"), required=True)
    budget.add_arguments(ap, "photos of each folder", {"limit": 3})
    args = budget.parse_args(ap)
    name, values = args.param[0], args.param[1].split(",")

    remover = Remover.from_config(EngineConfig(model="u2netp", refine=True))
    ratios: dict[str, dict[str, float]] = {}
    errors: dict[str, dict[str, float]] = {}
    folder_of: dict[str, str] = {}
    found = [
        budget.limited(sorted((args.data / folder / "input").iterdir()), args.limit)
        for folder, _, _ in FOLDERS
    ]
    estimate = budget.Estimate(sum(map(len, found)), "photos")
    for (folder, truth_dir, kind), sources in zip(FOLDERS, found, strict=True):
        for src in sources:
            truth_path = args.data / folder / truth_dir / f"{src.stem}.png"
            truth = np.asarray(Image.open(truth_path).convert("L"))
            result = remover.remove(src)
            assert result.raw is not None and result.family is not None
            height, width = result.mask.shape
            plain = model_mask(result.raw, width, height, result.family, refine=False)
            base = error(plain, truth, kind)
            errors[src.stem], ratios[src.stem] = {}, {}
            folder_of[src.stem] = folder
            for value in values:
                refined = refine_alpha(result.image.rgb, result.mask, **{name: parse_value(value)})
                errors[src.stem][value] = error(refined, truth, kind)
                ratios[src.stem][value] = errors[src.stem][value] / max(base, 1e-9)
            estimate.tick()

    photos = list(ratios)
    print(f"refined / unrefined error per photo, {name} =")
    print(f"{'photo':<12}" + "".join(f"{v:>8}" for v in values))
    for photo in photos:
        print(f"{photo:<12}" + "".join(f"{ratios[photo][v]:>8.3f}" for v in values))
    print(f"chosen on all {len(photos)} photos: {name} = {choose(ratios, photos, values)}")

    print("\nleave-one-out: each photo with the value chosen on the others")
    held: dict[str, float] = {}
    worse = []
    for photo in photos:
        value = choose(ratios, [p for p in photos if p != photo], values)
        held[photo] = errors[photo][value]
        flag = "  worse than unrefined" if ratios[photo][value] > WORSE else ""
        ratio = ratios[photo][value]
        print(f"{photo:<12} {name} = {value:<6} error {held[photo]:.4f}  ratio {ratio:.3f}{flag}")
        if flag:
            worse.append(photo)
    for folder, _, kind in FOLDERS:
        rows = [held[p] for p in photos if folder_of[p] == folder]
        print(f"held-out mean {kind} on {folder}: {np.mean(rows):.4f} ({len(rows)} photos)")
    print(f"photos worse than {WORSE} x unrefined, held out: {len(worse)} {worse}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
