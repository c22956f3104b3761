"""Score bgremover's masks against ground-truth alpha mattes.

    python tests/benchmarks/score_matting.py DATA_DIR [--model u2netp] [--rembg]

DATA_DIR holds input/, gt/ and optionally trimap/ with the same file names (the
layout of the alphamatting.com training set). Prints SAD, MSE x1e3, IoU at 0.5
and the mean error inside the trimap's unknown band, per image and on average.
The masks come from the real CLI (`bgremover remove --mask-only`), run once over
the input folder. With --rembg, rembg's u2netp (sharing our model cache) is
scored the same way for comparison.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

from bgremover.metrics import score_against_truth


def load_grey(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("L"))


def score_folder(masks: Path, data: Path) -> dict[str, dict[str, float]]:
    rows = {}
    for gt_path in sorted((data / "gt").glob("*.png")):
        mask_path = masks / f"{gt_path.stem}.png"
        trimap_path = data / "trimap" / gt_path.name
        trimap = load_grey(trimap_path) if trimap_path.exists() else None
        rows[gt_path.stem] = score_against_truth(load_grey(mask_path), load_grey(gt_path), trimap)
    return rows


def rembg_masks(data: Path, out: Path, model: str) -> None:
    import os

    from bgremover.models import ModelStore

    os.environ["U2NET_HOME"] = str(ModelStore().ensure(model).parent)
    from rembg import new_session, remove

    session = new_session(model)
    for src in sorted((data / "input").glob("*.png")):
        remove(Image.open(src), session=session, only_mask=True).save(out / f"{src.stem}.png")


def print_table(name: str, rows: dict[str, dict[str, float]]) -> dict[str, float]:
    keys = list(next(iter(rows.values())))
    print(f"\n{name}")
    print("image   " + "".join(f"{k:>10}" for k in keys))
    for image, scores in rows.items():
        print(f"{image:<8}" + "".join(f"{scores[k]:>10.4f}" for k in keys))
    mean = {k: float(np.mean([r[k] for r in rows.values()])) for k in keys}
    print("mean    " + "".join(f"{mean[k]:>10.4f}" for k in keys))
    return mean


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("data", type=Path)
    parser.add_argument("--model", default="u2netp")
    parser.add_argument("--rembg", action="store_true", help="also score rembg")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ours = Path(tmp) / "bgremover"
        cmd = [
            sys.executable,
            "-m",
            "bgremover",
            "remove",
            str(args.data / "input"),
            "-o",
            str(ours),
            "--mask-only",
            "--model",
            args.model,
            "-q",
        ]
        subprocess.run(cmd, check=True)
        print_table(f"bgremover {args.model}", score_folder(ours, args.data))
        if args.rembg:
            theirs = Path(tmp) / "rembg"
            theirs.mkdir()
            rembg_masks(args.data, theirs, args.model)
            print_table(f"rembg {args.model}", score_folder(theirs, args.data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
