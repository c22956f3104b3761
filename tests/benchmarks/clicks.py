"""Clicks benchmark: how many Add / Remove clicks a user needs to correct u2netp's mask.

    python tests/benchmarks/clicks.py IMAGES_DIR GT_DIR [--max-clicks 20]
        [--tool click|classic|box] [--refine/--no-refine] [--model NAME] [--images N]
        [--start model|empty]
        [--limit N] [--quick]

The standard protocol of interactive segmentation (Xu et al. 2016, "Deep
Interactive Object Selection"; RITM, Sofiiuk et al. 2022): the result starts as
the model's mask (u2netp fp32, or ``--model``'s, with the app's edge refinement
unless ``--no-refine``); each next click goes to the interior point (farthest from the
region's border by distance transform, the image border counting as border) of
the largest error region of the binarised result (alpha >= 128) against the
ground truth (>= 128): an Add click on a region the result misses, a Remove
click on one it wrongly keeps. Every interaction is an operation applied by the
app's own :class:`bgremover.touchup.edit.Editor`, with the model's crops as the app runs
them (:meth:`Remover.segment`), clicked at the pixel's centre as a mouse click is.
``--tool click`` (the default) clicks as the app's Add / Remove tool does by default,
with the click model (:mod:`bgremover.touchup.learned`, the photo encoded once: its time
is printed apart); ``--tool classic`` with the classical click by colour
(:mod:`bgremover.touchup.regions`).
``--tool box`` first draws one box around the ground truth's bounding box (one
interaction: the network on the box's crop), then clicks; the box always counts,
so with it every NoC is at least 1, and the row also gives the IoU right after it.

``--start empty`` starts from an empty mask instead, as the benchmarks of interactive
segmentation do (RITM's and FocalClick's NoC start from nothing): every photo then needs
clicks, so the clicks are tried on many more regions than the model's few mistakes.

Printed per image: IoU with no interaction, the number of interactions to reach
IoU 0.85 / 0.90 / 0.95 (``--max-clicks`` when never), the final IoU, and the click's
*collateral*: of the pixels a click flipped (binarised at 128), the share that were
right before it (wrongly changed / all changed), summed over the photo's clicks; then
``MEAN NoC@85 x NoC@90 y NoC@95 z``, the collateral over all clicks (pooled, and the
mean of the per-click shares) and the median seconds per click (the time of the click
operation alone; the time of the box operation and of encoding are printed apart).
Ground truths of another size than their photo (e.g. camera-size photos made by
make_camera_set.py) are resized to it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import budget
import cv2
import numpy as np
from PIL import Image

from bgremover.engine.clicking import ClickModel
from bgremover.engine.pipeline import EngineConfig, Remover
from bgremover.mask.metrics import iou
from bgremover.touchup.edit import Editor, Operation

THRESHOLDS = (0.85, 0.90, 0.95)
SUFFIXES = {".jpg", ".jpeg", ".png", ".webp"}


def next_click(alpha: np.ndarray, truth: np.ndarray) -> tuple[int, int, bool] | None:
    """The interior point of the largest error region: (x, y, add), None without error."""
    pred, gt = alpha >= 128, truth >= 128
    error = (pred != gt).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(error, connectivity=8)
    if count <= 1:
        return None
    largest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    region = np.pad((labels == largest).astype(np.uint8), 1)
    dist = cv2.distanceTransform(region, cv2.DIST_L2, 5)[1:-1, 1:-1]
    y, x = np.unravel_index(int(np.argmax(dist)), dist.shape)
    return int(x), int(y), bool(gt[y, x])


def load_pairs(images: Path, truths: Path, limit: int) -> list[tuple[Path, Path]]:
    pairs = []
    for src in sorted(p for p in images.iterdir() if p.suffix.lower() in SUFFIXES):
        truth = truths / f"{src.stem}.png"
        if truth.exists():
            pairs.append((src, truth))
    return pairs[:limit] if limit else pairs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("images", type=Path)
    ap.add_argument("truths", type=Path)
    ap.add_argument("--max-clicks", type=int, default=20)
    ap.add_argument(
        "--tool",
        choices=("click", "classic", "box"),
        default="click",
        help="click: the app's default Add/Remove (the click model); classic: by colour",
    )
    ap.add_argument("--refine", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument(
        "--model", default="u2netp", help="the model whose mask the clicks start from (boxes too)"
    )
    ap.add_argument(
        "--start",
        choices=("model", "empty"),
        default="model",
        help="model: clicks correct the model's mask (the app's case); empty: they start from "
        "an empty mask, as interactive segmentation benchmarks do (RITM's NoC)",
    )
    budget.add_arguments(ap, "photos", {"limit": 2, "max_clicks": 8}, aliases=("--images",))
    args = budget.parse_args(ap, argv)

    remover = Remover.from_config(EngineConfig(model=args.model, refine=args.refine))
    learned = args.tool != "classic"
    clicker = ClickModel() if learned else None
    click_model = clicker.name if clicker is not None else ""

    pairs = load_pairs(args.images, args.truths, args.limit)
    start = "the model's mask" if args.start == "model" else "an empty mask"
    print(
        f"{args.model} fp32, edge refinement {'on' if args.refine else 'off'}, tool {args.tool}, "
        f"max {args.max_clicks} interactions, {len(pairs)} photos, starting from {start}"
        + (f", click model {click_model}" if learned else ", classical clicks")
    )
    after_box = f"{'box':>7}" if args.tool == "box" else ""
    header = f"{'image':<14}{'size':>11}{'IoU@0':>7}{after_box}"
    header += f"{'@85':>5}{'@90':>5}{'@95':>5}{'final':>7}{'collat':>8}"
    print(header + "  clicks (+add -remove)")
    noc: dict[float, list[int]] = {t: [] for t in THRESHOLDS}
    click_times: list[float] = []
    box_times: list[float] = []
    #: Per photo: the interactions it took to reach the last threshold (None: never).
    reached_last: list[int | None] = []
    encode_times: list[float] = []
    shares: list[float] = []
    wrong_total = flipped_total = 0
    for src, truth_path in budget.each(pairs, "photos"):
        result = remover.remove(src)
        rgb = result.image.rgb
        alpha = result.alpha if args.start == "model" else np.zeros_like(result.alpha)
        truth = np.asarray(Image.open(truth_path).convert("L"))
        if truth.shape != alpha.shape:
            truth = cv2.resize(truth, alpha.shape[::-1], interpolation=cv2.INTER_LINEAR)
        ious = [iou(alpha, truth)]
        start_iou = ious[0]
        # The app's own editor: the same operations, the model's crops as the app runs them.
        editor = Editor(rgb, alpha, segment=remover.segment)
        if clicker is not None:
            start = time.perf_counter()
            editor.prompt = clicker.prompter_for(rgb)
            encode_times.append(time.perf_counter() - start)
        gt_fg = truth >= 128
        wrong_photo = flipped_photo = 0
        clicks: list[tuple[int, int, bool]] = []
        used = 0
        if args.tool == "box":
            ys, xs = np.nonzero(truth >= 128)
            start = time.perf_counter()
            editor.apply(
                Operation.box(xs.min(), ys.min(), xs.max() + 1, ys.max() + 1, model=click_model)
            )
            box_times.append(time.perf_counter() - start)
            used = 1
            ious.append(iou(editor.alpha, truth))
        while used < args.max_clicks and ious[-1] < THRESHOLDS[-1]:
            # Pixel (x, y) is clicked at its centre, as a mouse click on it is.
            click = next_click(editor.alpha, truth)
            if click is None:
                break
            x, y, add = click
            before = editor.alpha >= 128
            start = time.perf_counter()
            editor.apply(Operation.click(x + 0.5, y + 0.5, add, model=click_model))
            click_times.append(time.perf_counter() - start)
            flipped = before != (editor.alpha >= 128)
            n_flipped = int(flipped.sum())
            n_wrong = int((flipped & (before == gt_fg)).sum())
            if n_flipped:
                shares.append(n_wrong / n_flipped)
            wrong_photo += n_wrong
            flipped_photo += n_flipped
            clicks.append(click)
            used += 1
            ious.append(iou(editor.alpha, truth))
        row = []
        # With the box tool the box is always drawn: the count starts after it.
        first = 1 if args.tool == "box" else 0
        for t in THRESHOLDS:
            reached = next(
                (i for i, v in enumerate(ious) if i >= first and v >= t), args.max_clicks
            )
            noc[t].append(reached)
            row.append(reached)
        last = THRESHOLDS[-1]
        reached_last.append(next((i for i, v in enumerate(ious) if i >= first and v >= last), None))
        signs = "".join("+" if c[2] else "-" for c in clicks)
        size = f"{rgb.shape[1]}x{rgb.shape[0]}"
        boxed = f"{ious[1]:>7.3f}" if args.tool == "box" else ""
        collateral = f"{wrong_photo / flipped_photo:>8.3f}" if flipped_photo else f"{'-':>8}"
        wrong_total += wrong_photo
        flipped_total += flipped_photo
        print(
            f"{src.stem:<14}{size:>11}{start_iou:>7.3f}{boxed}{row[0]:>5}{row[1]:>5}{row[2]:>5}"
            f"{ious[-1]:>7.3f}{collateral}  {signs}",
            flush=True,
        )
    means = " ".join(f"NoC@{round(t * 100)} {statistics.fmean(noc[t]):.2f}" for t in THRESHOLDS)
    print(f"MEAN {means}")
    # Counted only where it was reached (--max-clicks 8 stands for "never" in the means).
    within = sum(1 for n in reached_last if n is not None and n <= 8)
    print(f"reached 0.95 within 8 interactions: {within} of {len(pairs)}")
    if flipped_total:
        print(
            f"collateral (wrongly changed / all changed): {wrong_total / flipped_total:.3f} "
            f"pooled, {statistics.fmean(shares):.3f} mean per click"
        )
    if encode_times:
        print(f"median time to encode a photo {statistics.median(encode_times):.3f} s")
    if click_times:
        print(
            f"median time per click {statistics.median(click_times):.3f} s "
            f"(max {max(click_times):.3f} s, {len(click_times)} clicks)"
        )
    else:
        print("median time per click: no clicks were needed")
    if box_times:
        print(f"median time per box {statistics.median(box_times):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
