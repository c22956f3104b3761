"""Score bgremover's masks against ground-truth alpha mattes.

    python tests/benchmarks/score_matting.py DATA_DIR [--model u2netp] [--rembg] [--matting]
        [--limit N] [--quick]

DATA_DIR holds input/, gt/ and optionally trimap/ with the same file names (the
layout of the alphamatting.com training set); --truth reference_alpha scores
against another folder of alphas (the portraits' predicted mattes). Prints SAD, MSE x1e3, IoU at 0.5
and the mean error inside the trimap's unknown band, per image and on average.
The masks come from the real CLI (`bgremover remove --mask-only`), run over the
input folder with edge refinement (the default) and with --no-refine. The time
the refinement stage takes is measured in-process (median of 3 per image).
With --rembg, rembg's u2netp (sharing our model cache) is scored the same way;
with --matting also rembg's alpha matting (-a), timed the same way.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import budget
import numpy as np
from PIL import Image

from bgremover.mask.metrics import score_against_truth


def load_grey(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("L"))


def score_folder(masks: Path, data: Path, truth: str = "gt") -> dict[str, dict[str, float]]:
    rows = {}
    for gt_path in sorted((data / truth).glob("*.png")):
        mask_path = masks / f"{gt_path.stem}.png"
        trimap_path = data / "trimap" / gt_path.name
        trimap = load_grey(trimap_path) if trimap_path.exists() else None
        rows[gt_path.stem] = score_against_truth(load_grey(mask_path), load_grey(gt_path), trimap)
    return rows


def first_photos(data: Path, truth: str, limit: int, work: Path) -> Path:
    """DATA itself, or for a limit, a folder in ``work`` laid out as DATA with links to its
    first ``limit`` photos, their reference alphas and their trimaps."""
    if limit <= 0:
        return data
    subset = work / "data"
    for src in budget.limited(sorted((data / "input").iterdir()), limit):
        for folder, name in (("input", src.name), (truth, f"{src.stem}.png"),
                             ("trimap", f"{src.stem}.png")):  # fmt: skip
            if (data / folder / name).exists():
                (subset / folder).mkdir(parents=True, exist_ok=True)
                (subset / folder / name).symlink_to((data / folder / name).resolve())
    return subset


def rembg_masks(data: Path, out: Path, model: str, matting: bool = False) -> float:
    """rembg's masks (alpha channel of its cutout when matting); returns median s/image."""
    import os
    import time

    from bgremover.network.store import ModelStore

    os.environ["U2NET_HOME"] = str(ModelStore().ensure(model).parent)
    from rembg import new_session, remove

    session = new_session(model)
    times = []
    label = "photos (rembg -a)" if matting else "photos (rembg)"
    for src in budget.each(sorted((data / "input").iterdir()), label):
        start = time.perf_counter()
        if matting:
            alpha = remove(Image.open(src), session=session, alpha_matting=True).getchannel("A")
        else:
            alpha = remove(Image.open(src), session=session, only_mask=True)
        times.append(time.perf_counter() - start)
        alpha.save(out / f"{src.stem}.png")
    return float(np.median(times))


def refine_seconds(data: Path, model: str) -> float:
    """Median time of the refinement stage alone, per image."""
    import time

    from bgremover import Remover
    from bgremover.mask.refine import refine_alpha

    remover = Remover(model, refine=False)
    per_image = []
    for src in sorted((data / "input").iterdir()):
        result = remover.remove(src)
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            refine_alpha(result.image.rgb, result.mask)
            runs.append(time.perf_counter() - start)
        per_image.append(float(np.median(runs)))
    return float(np.median(per_image))


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
    parser.add_argument("--matting", action="store_true", help="also rembg's alpha matting")
    parser.add_argument(
        "--truth",
        default="gt",
        help="folder of reference alphas under DATA (gt; reference_alpha for portraits)",
    )
    budget.add_arguments(parser, "photos", {"limit": 3})
    args = budget.parse_args(parser)
    summary: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        args.data = first_photos(args.data, args.truth, args.limit, Path(tmp))
        photos = len(list((args.data / "input").iterdir()))
        estimate = budget.Estimate(
            3,
            f"passes over {photos} photos (2 CLI batches, the refinement's timing)",
            then=", then rembg" if args.rembg or args.matting else "",
        )
        for label, extra in (("bgremover", []), ("bgremover --no-refine", ["--no-refine"])):
            out = Path(tmp) / label.replace(" ", "_")
            cmd = [sys.executable, "-m", "bgremover", "remove", str(args.data / "input"),
                   "-o", str(out), "--mask-only", "--model", args.model, "-q", *extra]  # fmt: skip
            subprocess.run(cmd, check=True)
            rows = score_folder(out, args.data, args.truth)
            summary[label] = print_table(f"{label} {args.model}", rows)
            estimate.tick()
        summary["bgremover"]["seconds"] = refine_seconds(args.data, args.model)
        runs = [("rembg", False)] if args.rembg else []
        runs += [("rembg -a", True)] if args.matting else []
        for label, matting in runs:
            theirs = Path(tmp) / label.replace(" ", "_")
            theirs.mkdir()
            seconds = rembg_masks(args.data, theirs, args.model, matting)
            rows = score_folder(theirs, args.data, args.truth)
            summary[label] = print_table(f"{label} {args.model}", rows)
            summary[label]["seconds"] = seconds
    print("\nmeans (seconds: the refinement stage alone for bgremover, the whole call for rembg)")
    for label, row in summary.items():
        cells = "  ".join(f"{k} {v:.4f}" for k, v in row.items())
        print(f"  {label:<22} {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
