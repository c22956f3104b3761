"""Does the steady rule (bgremover/video/steady.py) take the flicker out of a clip's mask
without making it worse? Scored against the true alpha of every frame, two-fold.

    python tests/benchmarks/video_steady.py CLIPS [--model u2netp] [--cache DIR]
        [--limit N] [--quick]

CLIPS is a folder made by the shared data's ``make_clip_set.py`` (for each photo NAME:
NAME-still.mp4, NAME-moving.mp4 and NAME-cut.mp4, each with NAME-KIND.alpha/ holding the
true alpha of every frame; the cut is half-way). Each clip is cut out frame by frame once
(the engine's alpha, refinement on, as ``remove`` makes it; kept in --cache), then the
steady rule runs over those alphas with each rule of the grid.

The photos are split in two halves by name (every other one). The rule is chosen on one
half (the lowest mean flicker ratio among rules whose mean MAD ratio is at most 1.03) and
scored on the other, then the other way round: each clip's row comes from a rule chosen
without it. Per clip, against frame by frame with the same model and settings:

- MAD: mean |alpha - truth| over all frames;
- dtSSD: the mean over frames of the root mean square of (alpha's change - truth's change),
  the video-matting papers' temporal coherence;
- flicker: mean |alpha_t - alpha_t-1| where the truth does not change;
- after cut: MAD of the first frame after the cut (cut clips).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import asdict
from pathlib import Path

import budget
import numpy as np
from PIL import Image

from bgremover.engine.pipeline import EngineConfig, Remover
from bgremover.files.imaging import from_array
from bgremover.video.clip import read_frames
from bgremover.video.steady import Steady, SteadyRule, small_grey

KINDS = ("still", "moving", "cut")
GRID = {
    "keep": (0.0, 0.5),
    "hold": (0.0, 8.0, 24.0),
    "tolerance": (8.0, 16.0, 32.0),
    "cut": (16.0,),
}
MAD_LIMIT = 1.03


def frame_by_frame(remover: Remover, clip: Path, cache: Path) -> np.ndarray:
    """Every frame's alpha as ``remove`` makes it (uint8, frames × h × w), kept in ``cache``."""
    kept = cache / f"{remover.spec.name}-{clip.stem}.npy"
    if kept.is_file():
        return np.load(kept)
    alphas = np.stack([remover.remove(from_array(f.rgb)).alpha for f in read_frames(clip)])
    cache.mkdir(parents=True, exist_ok=True)
    np.save(kept, alphas)
    return alphas


def truth(clip: Path) -> np.ndarray:
    folder = clip.with_suffix(".alpha")
    return np.stack([np.asarray(Image.open(p)) for p in sorted(folder.glob("*.png"))])


def greys(clip: Path) -> list[np.ndarray]:
    """Each frame's small grey copy (what the rule's flow is computed on), made once."""
    return [small_grey(f.rgb) for f in read_frames(clip)]


def steadied(grey: list[np.ndarray], alphas: np.ndarray, rule: SteadyRule) -> np.ndarray:
    steady = Steady(rule)
    return np.stack([steady.step(g, a) for g, a in zip(grey, alphas, strict=True)])


def scores(alphas: np.ndarray, true: np.ndarray, cut: bool) -> dict[str, float]:
    a = alphas.astype(np.float32) / 255
    g = true.astype(np.float32) / 255
    da, dg = np.diff(a, axis=0), np.diff(g, axis=0)
    still = dg == 0
    flicker = [float(np.abs(d[s]).mean()) for d, s in zip(da, still, strict=True) if s.any()]
    out = {
        "MAD": float(np.abs(a - g).mean()) * 1e3,
        "dtSSD": float(np.mean(np.sqrt(((da - dg) ** 2).mean(axis=(1, 2))))) * 1e2,
        "flicker": float(np.mean(flicker)) * 1e3,
    }
    if cut:
        first = len(a) // 2
        out["after cut"] = float(np.abs(a[first] - g[first]).mean()) * 1e3
    return out


def rules() -> list[SteadyRule]:
    return [SteadyRule(*values) for values in itertools.product(*GRID.values())]


def ratios(mine: dict[str, float], base: dict[str, float]) -> dict[str, float]:
    return {k: mine[k] / base[k] if base[k] else 1.0 for k in mine}


def choose(table: dict[str, dict[SteadyRule, dict[str, float]]], clips: list[str]) -> SteadyRule:
    """The rule with the lowest mean flicker ratio on ``clips`` among those whose mean MAD
    ratio is at most MAD_LIMIT (the lowest MAD ratio where none is)."""

    def mean(rule: SteadyRule, key: str) -> float:
        return float(np.mean([table[c][rule][key] for c in clips]))

    fine = [r for r in rules() if mean(r, "MAD") <= MAD_LIMIT]
    if not fine:
        return min(rules(), key=lambda r: mean(r, "MAD"))
    return min(fine, key=lambda r: mean(r, "flicker"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clips", type=Path)
    parser.add_argument("--model", default="u2netp")
    parser.add_argument("--cache", type=Path, default=Path("video-steady-cache"))
    budget.add_arguments(parser, "photos (three clips each)", {"limit": 4})
    args = budget.parse_args(parser, argv)
    names = budget.limited(
        sorted({p.name.rsplit("-", 1)[0] for p in args.clips.glob("*.mp4")}), args.limit
    )
    if len(names) < 2:
        parser.error(f"{args.clips} holds clips of fewer than two photos: nothing to split")
    halves = (names[0::2], names[1::2])
    remover = Remover.from_config(EngineConfig(args.model))
    grid = rules()
    base: dict[str, dict[str, float]] = {}
    table: dict[str, dict[SteadyRule, dict[str, float]]] = {}
    clips = [args.clips / f"{n}-{k}.mp4" for n in names for k in KINDS]
    for clip in budget.each(clips, f"clips (frame by frame, then {len(grid)} rules)"):
        alphas, true, grey = frame_by_frame(remover, clip, args.cache), truth(clip), greys(clip)
        cut = clip.stem.endswith("-cut")
        base[clip.stem] = scores(alphas, true, cut)
        table[clip.stem] = {
            rule: ratios(scores(steadied(grey, alphas, rule), true, cut), base[clip.stem])
            for rule in grid
        }
    print(
        "| clip | rule (chosen on the other half) | MAD ×1e3 | ratio | dtSSD ×1e2 | ratio "
        "| flicker ×1e3 | ratio | after cut ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    held: dict[str, list[float]] = {"MAD": [], "dtSSD": [], "flicker": [], "after cut": []}
    for tune, score in (halves, halves[::-1]):
        rule = choose(table, [f"{n}-{k}" for n in tune for k in KINDS])
        for name in score:
            for kind in KINDS:
                clip = f"{name}-{kind}"
                r, b = table[clip][rule], base[clip]
                for key in held:
                    if key in r:
                        held[key].append(r[key])
                after = f"{r['after cut']:.2f}" if "after cut" in r else ""
                words = ", ".join(f"{k} {v:g}" for k, v in asdict(rule).items())
                print(f"| {clip} | {words} "
                      f"| {b['MAD']:.1f} | {r['MAD']:.3f} | {b['dtSSD']:.2f} | {r['dtSSD']:.3f} "
                      f"| {b['flicker']:.2f} | {r['flicker']:.3f} | {after} |")  # fmt: skip
    print()
    for key, values in held.items():
        if values:
            print(f"held-out mean {key} ratio: {np.mean(values):.3f} (worst {max(values):.3f})")
    print(f"rule on all clips: {choose(table, list(table))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
