"""Frames per second on clips: ``bgremover remove CLIP -o DIR --video-format png`` against
``rembg b`` fed the same clip's raw frames (decoded by PyAV) and writing PNG frames.

    python tests/benchmarks/video_speed.py CLIPS... --rembg REMBG [--model u2netp]
        [--precision fp32] [--runs 3] [--also webm,mov] [--limit N] [--quick]

Each clip is run by each side in turn, ``--runs`` times, alternating, as whole processes
(model loading included, as a user runs them); the figure is frames over the median wall
time. REMBG is the ``rembg`` program of an environment with ``rembg[cli]==2.0.86``
(its ``b`` command reads raw RGB24 frames on stdin). ``--also`` times bgremover writing
those video kinds too (VP9 with alpha, ProRes 4444). Both sides use the same model:
rembg's ``u2netp`` is the same file as bgremover's. Printed: per clip and side, the
median seconds, frames per second, and bgremover's ratio to rembg.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import budget

from bgremover.video.clip import probe, read_frames


def run_bgremover(clip: Path, out: Path, args: argparse.Namespace, kind: str) -> float:
    """``bgremover remove`` on the clip: PNG frames (a folder under ``out``) or a video."""
    target, more = (out, ["--video-format", "png"]) if kind == "png" else (out / f"cut.{kind}", [])
    command = [sys.executable, "-m", "bgremover", "remove", str(clip), "-o", str(target),
               "-m", args.model, "-p", args.precision, "--quiet", *more]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def run_rembg(clip: Path, out: Path, args: argparse.Namespace) -> float:
    """``rembg b W H -o OUT/%06d.png`` with the clip's frames, raw RGB24, on its stdin."""
    info = probe(clip)
    command = [args.rembg, "b", "-m", args.model, "-o", str(out / "%06d.png"),
               str(info.width), str(info.height)]  # fmt: skip
    start = time.perf_counter()
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL) as proc:
        assert proc.stdin is not None
        for frame in read_frames(clip):
            proc.stdin.write(frame.rgb.tobytes())
        proc.stdin.close()
        if proc.wait() != 0:
            raise SystemExit(f"rembg b failed on {clip} (exit {proc.returncode})")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clips", nargs="+", type=Path)
    parser.add_argument("--rembg", required=True, help="the rembg program (rembg[cli])")
    parser.add_argument("--model", default="u2netp")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "int8"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--also", default="", help="video kinds to time as well: webm,mov")
    budget.add_arguments(parser, "clips", {"limit": 1, "runs": 1})
    args = budget.parse_args(parser, argv)
    clips = budget.limited(args.clips, args.limit)
    kinds = ["png", *(k for k in args.also.split(",") if k)]
    sides = [*(f"bgremover {k}" for k in kinds), "rembg b"]
    estimate = budget.Estimate(len(clips) * args.runs, "rounds (every side once)")
    rows = []
    for clip in clips:
        frames = sum(1 for _ in read_frames(clip))
        times: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(args.runs):
            for side in sides:
                with tempfile.TemporaryDirectory() as work:
                    out = Path(work)
                    if side == "rembg b":
                        times[side].append(run_rembg(clip, out, args))
                    else:
                        times[side].append(run_bgremover(clip, out, args, side.split()[1]))
            estimate.tick()
        base = statistics.median(times["rembg b"])
        for side in sides:
            median = statistics.median(times[side])
            speed = f"{frames / median:.2f} | {base / median:.2f}×"
            rows.append(f"| {clip.name} | {side} | {median:.1f} | {speed} |")
    print(f"{args.model} {args.precision}, medians of {args.runs}, whole processes")
    print("| clip | side | median s | frames/s | speed vs rembg b |\n|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
