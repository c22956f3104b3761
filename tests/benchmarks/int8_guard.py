"""The int8 guard: where its threshold comes from, what it catches, what it costs.

    python tests/benchmarks/int8_guard.py [FOLDER ...] [--model u2netp]
        [--speed-runs 5] [--no-calibration]
        [--limit N] [--quick]

1. **Calibration** (not an evaluation folder): every int8 calibration view (ten per
   calibration photo, as the quantizer sees them), its int8 mask's IoU against fp32's
   and its doubt (bgremover/network/guard.py). The threshold the guard should use is the lowest
   doubt among the views below IoU 0.98, so that every such view is caught; printed
   next to ``guard.THRESHOLD``, which must be that value rounded down.
2. **Each FOLDER** (photos; for the alphamatting layout give its input/ folder): per
   photo the int8 mask's IoU against fp32's without the guard, its doubt, whether the
   guard runs fp32, and the IoU with the guard (the Remover as the app and the command
   line run it); per folder the mean and lowest IoU both ways, how many photos are
   below 0.98, how many the guard sends to fp32, and the mean edge-band |Δα|.
3. **Speed** (``--speed-runs`` > 0): the command line's batch over all the FOLDERs'
   photos (copied into one folder), fp32, int8 with the guard and int8 without it,
   interleaved, each run into an empty output folder; the median of each and the
   ratios to fp32 in the same run.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import budget

from bgremover import Remover
from bgremover.files.imaging import IMAGE_EXTENSIONS, from_array, read_image
from bgremover.mask.metrics import fidelity, iou
from bgremover.network.guard import THRESHOLD, doubt
from bgremover.network.quantize import calibration_files, calibration_samples

BAR = 0.98


def calibration_threshold(fp32: Remover, int8: Remover, limit: int = 0) -> float:
    rows = []
    views = budget.limited(calibration_samples(calibration_files()), limit)
    for view in budget.each(views, "calibration views"):
        a, b = fp32.remove(from_array(view)), int8.remove(from_array(view))
        assert b.raw is not None
        rows.append((iou(a.mask, b.mask), doubt(b.raw)))
    below = [d for i, d in rows if i < BAR]
    print(f"calibration views: {len(rows)}, {len(below)} below IoU {BAR}")
    for value, d in sorted(rows):
        print(f"  IoU {value:.4f}  doubt {d:.4f}")
    if not below:
        print("no calibration view is below the bar: the guard never needs to run")
        return float("inf")
    return min(below)


def photos_of(folder: Path, limit: int = 0) -> list[Path]:
    found = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_EXTENSIONS)
    return budget.limited(found, limit)


def score_folder(
    folder: Path,
    fp32: Remover,
    int8: Remover,
    guarded: Remover,
    limit: int = 0,
    estimate: budget.Estimate | None = None,
) -> None:
    photos = photos_of(folder, limit)
    print(f"\n{folder}")
    print(f"{'photo':<28}{'int8':>8}{'doubt':>8}{'fp32?':>7}{'guarded':>9}{'band':>8}")
    plain, kept, sent, bands = [], [], 0, []
    for photo in photos:
        image = read_image(photo)
        a, b, g = fp32.remove(image), int8.remove(image), guarded.remove(image)
        assert b.guard is not None and g.guard is not None
        value, with_guard = iou(a.mask, b.mask), iou(a.mask, g.mask)
        band = float(fidelity(a.mask, b.mask)["band_abs"])  # type: ignore[arg-type]
        plain.append(value)
        kept.append(with_guard)
        bands.append(band)
        sent += g.guard.ran_fp32
        print(
            f"{photo.stem[:27]:<28}{value:>8.4f}{b.guard.doubt:>8.4f}"
            f"{'yes' if g.guard.ran_fp32 else 'no':>7}{with_guard:>9.4f}{band:>8.4f}"
        )
        if estimate is not None:
            estimate.tick()
    print(
        f"MEAN without the guard {statistics.fmean(plain):.4f} (lowest {min(plain):.4f}, "
        f"{sum(v < BAR for v in plain)} below {BAR}); with it {statistics.fmean(kept):.4f} "
        f"(lowest {min(kept):.4f}, {sum(v < BAR for v in kept)} below {BAR}); "
        f"{sent} of {len(photos)} made in fp32; edge band |Δα| {statistics.fmean(bands):.4f}"
    )


def speed(folders: list[Path], model: str, runs: int, limit: int = 0) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        photos = Path(tmp, "photos")
        photos.mkdir()
        for folder in folders:
            for p in photos_of(folder, limit):
                shutil.copy(p, photos / f"{folder.name}-{p.name}")
        count = len(list(photos.iterdir()))
        variants = {
            "fp32": [],
            "int8 guard": ["-p", "int8"],
            "int8 no guard": ["-p", "int8", "--no-int8-guard"],
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        estimate = budget.Estimate(runs + 1, f"rounds of {len(variants)} batches")
        for run in range(runs + 1):  # the first round warms caches and makes int8
            for name, extra in variants.items():
                out = Path(tmp, "out")
                shutil.rmtree(out, ignore_errors=True)
                cmd = [sys.executable, "-m", "bgremover", "remove", str(photos), "-o", str(out)]
                start = time.perf_counter()
                subprocess.run([*cmd, "-m", model, "-q", *extra], check=True, capture_output=True)
                if run:
                    times[name].append(time.perf_counter() - start)
            estimate.tick()
        base = times["fp32"]
        print(f"\nbatch of {count} photos, {runs} interleaved runs, median s and speed vs fp32:")
        for name, values in times.items():
            ratios = [f / v for f, v in zip(base, values, strict=True)]
            print(
                f"  {name:<14}{statistics.median(values):>7.2f} s   "
                f"{statistics.median(ratios):.2f}× (runs {min(ratios):.2f}-{max(ratios):.2f})"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--model", default="u2netp")
    parser.add_argument("--speed-runs", type=int, default=5)
    parser.add_argument("--no-calibration", dest="calibration", action="store_false")
    budget.add_arguments(
        parser, "calibration views and photos of each folder", {"limit": 3, "speed_runs": 1}
    )
    args = budget.parse_args(parser)
    fp32 = Remover(args.model, refine=False)
    int8 = Remover(args.model, precision="int8", refine=False, int8_guard=False)
    guarded = Remover(args.model, precision="int8", refine=False)
    for remover in (fp32, int8, guarded):  # int8 made now if not cached: not in the estimates
        remover.load()
    if args.calibration:
        found = calibration_threshold(fp32, int8, args.limit)
        catches = "catches every such view" if found >= THRESHOLD else "MISSES the lowest"
        print(f"threshold from calibration {found:.7f}; guard.THRESHOLD {THRESHOLD} {catches}")
    count = sum(len(photos_of(folder, args.limit)) for folder in args.folders)
    estimate = budget.Estimate(count, "photos")
    for folder in args.folders:
        score_folder(folder, fp32, int8, guarded, args.limit, estimate)
    if args.folders and args.speed_runs > 0:
        speed(args.folders, args.model, args.speed_runs, args.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
