"""Models side by side: quality, time and memory per model, and parity with rembg.

    python tests/benchmarks/families_table.py DATA_DIR [--models u2netp isnet-imgly]
        [--parity] [--large IMAGE]
        [--limit N] [--quick]

DATA_DIR is the shared data folder (matting/, portraits/, photos/). For each model, in
one run:

- the network's mask (``--no-refine``) and the default refined alpha on ``matting/``
  (SAD, band MAE and IoU against the ground truth) and on ``portraits/`` (mean |Δα| and
  IoU against the reference alphas), per image and as means;
- the time per image of the whole CLI batch over those 30 photos, and its peak RSS;
- with ``--large``, the peak RSS of one run on that (12-megapixel) photo;
- with ``--parity``, the network masks against rembg 2.0.86's on ``photos/`` with the
  same weights file: rembg's own session for the model (``dis_custom``, its IS-Net
  settings, for a DIS-family model of a file rembg does not publish), per photo mean
  |Δα| and IoU.

The masks come from the real CLI (``bgremover remove --mask-only``), each batch a
process of its own, so the RSS is that batch's alone.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import budget
import numpy as np
from PIL import Image

from bgremover.mask.metrics import iou, mean_abs_diff, score_against_truth


def grey(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("L"))


def run_batch(model: str, inputs: list[Path], out: Path, *extra: str) -> tuple[float, float]:
    """The CLI over ``inputs``: (seconds, peak RSS in MB) of that one process."""
    cmd = [sys.executable, "-m", "bgremover", "remove", *map(str, inputs), "-o", str(out),
           "--mask-only", "--model", model, "-q", *extra]  # fmt: skip
    start = time.perf_counter()
    with subprocess.Popen(cmd) as proc:
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}")
    return time.perf_counter() - start, usage.ru_maxrss / 1024


def score_matting(masks: Path, data: Path, limit: int = 0) -> dict[str, dict[str, float]]:
    rows = {}
    truths = sorted((data / "matting" / "gt").glob("*.png"))
    for gt in budget.limited(truths, limit):
        trimap = grey(data / "matting" / "trimap" / gt.name)
        s = score_against_truth(grey(masks / gt.name), grey(gt), trimap)
        rows[gt.stem] = {"SAD": s["sad"], "band": s["band_mae"], "IoU": s["iou"]}
    return rows


def score_portraits(masks: Path, data: Path, limit: int = 0) -> dict[str, dict[str, float]]:
    rows = {}
    refs = sorted((data / "portraits" / "reference_alpha").glob("*.png"))
    for ref in budget.limited(refs, limit):
        ours, theirs = grey(masks / ref.name), grey(ref)
        rows[ref.stem] = {"|Δα|": mean_abs_diff(ours, theirs), "IoU": iou(ours, theirs)}
    return rows


def print_rows(title: str, rows: dict[str, dict[str, float]]) -> dict[str, float]:
    keys = list(next(iter(rows.values())))
    print(f"\n{title}")
    print(f"{'image':<14}" + "".join(f"{k:>10}" for k in keys))
    for name, row in rows.items():
        print(f"{name:<14}" + "".join(f"{row[k]:>10.4f}" for k in keys))
    mean = {k: float(np.mean([r[k] for r in rows.values()])) for k in keys}
    print(f"{'mean':<14}" + "".join(f"{mean[k]:>10.4f}" for k in keys))
    return mean


def rembg_session(model: str):  # -> rembg BaseSession
    """rembg's session for ``model``'s weights file (the one in our cache)."""
    from bgremover.network.models import REGISTRY
    from bgremover.network.store import ModelStore

    path = ModelStore().ensure(model)
    os.environ["U2NET_HOME"] = str(path.parent)
    from rembg import new_session

    family = REGISTRY[model].family
    if model in ("u2netp", "u2net", "u2net_human_seg", "silueta", "isnet-general-use"):
        return new_session(model, providers=["CPUExecutionProvider"])
    if family is not None and family.name == "dis":
        return new_session("dis_custom", model_path=str(path), providers=["CPUExecutionProvider"])
    raise SystemExit(f"no rembg session is known for {model}")


def parity(model: str, photos: Path, limit: int = 0) -> None:
    from rembg import remove

    from bgremover import Remover

    session = rembg_session(model)
    ours = Remover(model, refine=False)
    rows = {}
    for photo in budget.each(budget.limited(sorted(photos.iterdir()), limit), "photos (parity)"):
        theirs = np.asarray(remove(Image.open(photo), session=session, only_mask=True))
        mask = ours.remove(photo).mask
        rows[photo.stem[:13]] = {"|Δα|·255": 255 * mean_abs_diff(mask, theirs),
                                 "IoU": iou(mask, theirs)}  # fmt: skip
    mean = print_rows(f"{model}: network mask against rembg 2.0.86 ({photos})", rows)
    worst = max(r["|Δα|·255"] for r in rows.values())
    low = min(r["IoU"] for r in rows.values())
    print(f"worst photo: |Δα| {worst:.3f}/255, lowest IoU {low:.4f} (mean {mean['IoU']:.4f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("data", type=Path)
    parser.add_argument("--models", nargs="+", default=["u2netp", "isnet-imgly"])
    parser.add_argument("--parity", action="store_true", help="also compare with rembg")
    parser.add_argument("--large", type=Path, help="a large photo for the peak RSS")
    budget.add_arguments(
        parser, "photos of each of matting/, portraits/ (photos/ with --parity)", {"limit": 2}
    )
    args = budget.parse_args(parser)
    inputs = budget.limited(sorted((args.data / "matting" / "input").iterdir()), args.limit)
    inputs += budget.limited(sorted((args.data / "portraits" / "input").iterdir()), args.limit)
    summary = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, model in enumerate(args.models):
            more = len(args.models) - k - 1
            estimate = budget.Estimate(
                2,
                f"{model} batches of {len(inputs)} photos (network, refined)",
                then=f", then {more} more model(s)" if more else "",
            )
            for label, extra in (("network", ["--no-refine"]), ("refined", [])):
                out = Path(tmp) / f"{model}-{label}"
                # A first photo alone, so the batch's time does not include the download or
                # the int8 build; every run writes a folder of its own (none is skipped).
                run_batch(model, inputs[:1], Path(tmp) / f"{model}-{label}-warm", *extra)
                seconds, rss = run_batch(model, inputs, out, *extra)
                # The matting and portrait photos have different names: one folder for both.
                matting = score_matting(out, args.data, args.limit)
                portraits = score_portraits(out, args.data, args.limit)
                m = print_rows(f"{model} {label}: matting", matting)
                p = print_rows(f"{model} {label}: portraits", portraits)
                row = {"model": model, "alpha": label, "matting SAD": m["SAD"],
                       "band": m["band"], "matting IoU": m["IoU"], "portraits |Δα|": p["|Δα|"],
                       "portraits IoU": p["IoU"], "s/image": seconds / len(inputs),
                       "peak RSS MB": rss}  # fmt: skip
                if args.large is not None:
                    big = Path(tmp) / f"{model}-{label}-large"
                    row["large RSS MB"] = run_batch(model, [args.large], big, *extra)[1]
                summary.append(row)
                estimate.tick()
        if args.parity:
            for model in args.models:
                parity(model, args.data / "photos", args.limit)
    print(f"\nsummary (one run; s/image is the whole CLI batch over the {len(inputs)} photos)")
    keys = list(summary[0])
    print(" | ".join(keys))
    for row in summary:
        print(" | ".join(f"{v:.4f}" if isinstance(v, float) else str(v) for v in row.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
