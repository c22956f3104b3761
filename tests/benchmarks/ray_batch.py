"""What ``--ray`` costs on one machine: the Ray batch against the plain batch.

    python tests/benchmarks/ray_batch.py FOLDER [FOLDER...] [--runs 3] [--model u2netp]
        [--limit N] [--quick]

Runs ``bgremover remove FOLDER... -o OUT`` as a process, plain and with ``--ray``, in turn
(plain, ray, plain, ray, ...), each into a fresh folder, and prints each run's wall time
(Ray's includes starting and stopping a local Ray), the medians, and the ray/plain ratio
pair by pair. Then it checks that every run wrote the same files as the first plain run:
the same names and tree, and 0 pixel difference (decoded), and says whether the bytes
are identical too.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import budget
import numpy as np
from PIL import Image


def run(command: list[str]) -> float:
    """Wall seconds of one process (exit 0 or 1: a photo that fails is reported, not fatal)."""
    start = time.perf_counter()
    proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{shlex.join(command)} failed ({proc.returncode}):\n{proc.stderr}")
    return wall


def files(folder: Path) -> dict[str, Path]:
    return {str(p.relative_to(folder)): p for p in sorted(folder.rglob("*")) if p.is_file()}


def compare(reference: Path, other: Path) -> tuple[int, int, int]:
    """(files with different pixels, files with different bytes, files compared);
    SystemExit when the trees differ."""
    ref, got = files(reference), files(other)
    if sorted(ref) != sorted(got):
        missing, extra = sorted(set(ref) - set(got)), sorted(set(got) - set(ref))
        raise SystemExit(f"{other}: not the same files (missing {missing}, extra {extra})")
    pixels = data = 0
    for name, path in ref.items():
        if path.read_bytes() == got[name].read_bytes():
            continue
        data += 1
        with Image.open(path) as a, Image.open(got[name]) as b:
            if a.mode != b.mode or not np.array_equal(np.asarray(a), np.asarray(b)):
                pixels += 1
                print(f"  {name}: pixels differ")
    return pixels, data, len(ref)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model", default="u2netp")
    parser.add_argument("--ray", default=None, metavar="ADDRESS", help="join this cluster")
    budget.add_arguments(parser, "photos of each folder", {"limit": 3, "runs": 1})
    args = budget.parse_args(parser)
    common = ["--model", args.model, "--quiet"]
    ray_flag = ["--ray", args.ray] if args.ray else ["--ray"]
    # The model is obtained once, before timing anything.
    with tempfile.TemporaryDirectory(prefix="ray-batch-") as tmp:
        root = Path(tmp)
        folders = budget.first_photos(args.folders, args.limit, root)
        base = [sys.executable, "-m", "bgremover", "remove", *map(str, folders)]
        estimate = budget.Estimate(args.runs, "runs (plain, then ray)")
        times: dict[str, list[float]] = {"plain": [], "ray": []}
        outputs: list[Path] = []
        for i in range(1, args.runs + 1):
            for kind in ("plain", "ray"):
                out = root / f"{kind}-{i}"
                wall = run([*base, "-o", str(out), *common, *(ray_flag if kind == "ray" else [])])
                times[kind].append(wall)
                outputs.append(out)
                print(f"run {i} {kind:5s} {wall:7.2f} s", flush=True)
            estimate.tick()
        plain, ray = statistics.median(times["plain"]), statistics.median(times["ray"])
        ratios = [r / p for p, r in zip(times["plain"], times["ray"], strict=True)]
        count = len(files(outputs[0]))
        print(f"\n{count} photos, model {args.model}, {args.runs} runs each")
        print(f"median plain {plain:.2f} s, ray {ray:.2f} s, ratio {ray / plain:.2f}")
        print("ray/plain pair by pair: " + ", ".join(f"{r:.2f}" for r in ratios))
        worst = 0
        for out in outputs[1:]:
            pixels, data, n = compare(outputs[0], out)
            worst = max(worst, pixels)
            print(f"{out.name}: {n} files, {pixels} with other pixels, {data} with other bytes")
        print("outputs identical (0 pixel difference)" if worst == 0 else "OUTPUTS DIFFER")
        return 0 if worst == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
