"""Brush benchmark: the edge-aware brush against the plain brush, inside each stroke's footprint.

    python tests/benchmarks/brush.py IMAGES_DIR GT_DIR [--radius 0.03] [--offset 0.5]
        [--hardness 0.8] [--strokes 24] [--refine/--no-refine] [--model NAME]
        [--images N] [--masks DIR] [--set NAME=VALUE]
        [--limit N] [--quick]

A user touching up a cutout brushes along the subject's outline: erasing the
background the mask kept beside the edge, restoring an edge the mask missed.
This simulates both along the true outline. The mask starts as the app's
automatic mask (u2netp fp32, or ``--model``'s, with the app's edge refinement
unless ``--no-refine``). The outline is the ground truth's (>= 128) contours,
holes included, smoothed over one brush radius (a hand does not trace every
strand), cut into segments six radii long; at most ``--strokes`` of them per
photo, evenly spread over all the contours. Each segment gives two strokes with a
radius of ``--radius`` times the photo's long side and the app's default
hardness (0.8): an erase whose centre line runs ``--offset`` radii to the
background side of the outline, and a restore as far to the subject side
(``--offset 0``: both centred on the outline). The side is the one the smoothed
ground truth falls towards.

Each stroke is applied on its own to the same starting mask by the app's own
:class:`bgremover.touchup.edit.Editor`, once plain and once edge-aware, and scored
by the mean |alpha - ground truth| (0..1) over its footprint (the pixels
:func:`bgremover.touchup.tools.stroke_coverage` gives any paint). Printed per
photo and per tool (erase, restore): the strokes, the mean footprint error before
the stroke, after the plain stroke and after the edge-aware one, and how many
strokes the edge-aware one left worse than the plain one (by more than 0.001);
then the means over the photos and the photos where edge-aware was worse on
average, and the same pooled over the strokes with work to do (at least 0.05 of
the footprint's error was kept background for an erase, missed subject for a
restore: the strokes a user would make). Last, outside the footprints: the pixels
any stroke changed there (a stroke changes nothing outside its footprint: must be
0) and the mean error there.

``--masks DIR`` keeps the automatic masks in DIR and reuses them (the model runs
once per photo over several runs). ``--set NAME=VALUE`` (repeatable) sets a
constant of :mod:`bgremover.touchup.tools` before the run, to score a setting.
Ground truths of another size than their photo are resized to it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

import budget
import cv2
import numpy as np
from PIL import Image

from bgremover.engine.pipeline import EngineConfig, Remover
from bgremover.touchup import tools
from bgremover.touchup.edit import Editor, Operation
from bgremover.touchup.tools import stroke_coverage

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clicks import load_pairs  # the photos with a ground truth, as the clicks benchmark pairs them

#: A stroke counts as worse edge-aware when its footprint error is higher by this (0..1).
WORSE = 0.001
#: A stroke has work to do when this much of its footprint's error (0..1) is its to fix.
WORK = 0.05
#: A segment's length, in radii.
SEGMENT = 6.0
TOOLS = ("erase", "restore")


def outline_strokes(
    truth: np.ndarray, radius: float, offset: float, most: int
) -> list[dict[str, list[tuple[float, float]]]]:
    """Up to ``most`` pairs of stroke polylines along the true outline: for each
    segment, the erase's (``offset`` radii to the background side) and the restore's
    (as far to the subject side), in continuous pixel coordinates."""
    inside = (truth >= 128).astype(np.uint8)
    contours, _ = cv2.findContours(inside, cv2.RETR_LIST, cv2.CHAIN_APPROX_NONE)
    # The side: the smoothed ground truth falls towards the background.
    soft = cv2.GaussianBlur(inside.astype(np.float32), (0, 0), max(radius / 2, 1.0))
    gy, gx = np.gradient(soft)
    seg = max(int(SEGMENT * radius), 8)
    win = max(int(radius), 1)
    segments: list[np.ndarray] = []
    for contour in contours:
        pts = contour[:, 0, :].astype(np.float32)
        if len(pts) < seg:
            continue
        # A closed outline smoothed over one radius (a moving average, wrapping round).
        kernel = np.ones(2 * win + 1, np.float32) / (2 * win + 1)
        wrapped = np.concatenate([pts[-win:], pts, pts[:win]])
        smooth = np.stack(
            [np.convolve(wrapped[:, k], kernel, mode="valid") for k in (0, 1)], axis=1
        )
        # The image's border is no outline: segments run between the points on it.
        x, y = pts[:, 0], pts[:, 1]
        off = (x <= 0) | (y <= 0) | (x >= truth.shape[1] - 1) | (y >= truth.shape[0] - 1)
        start = 0
        while start + seg <= len(smooth):
            hit = np.flatnonzero(off[start : start + seg])
            if hit.size:
                start += int(hit[-1]) + 1
                continue
            segments.append(smooth[start : start + seg])
            start += seg
    if len(segments) > most:
        picks = np.linspace(0, len(segments) - 1, most).round().astype(int)
        segments = [segments[i] for i in picks]
    h, w = truth.shape
    step = max(int(radius / 2), 1)
    out = []
    for s in segments:
        s = s[::step]
        # Pixel (x, y)'s centre is at (x + 0.5, y + 0.5).
        ix = np.clip(np.rint(s[:, 0]).astype(int), 0, w - 1)
        iy = np.clip(np.rint(s[:, 1]).astype(int), 0, h - 1)
        n = -np.stack([gx[iy, ix], gy[iy, ix]], axis=1)
        norm = np.linalg.norm(n, axis=1, keepdims=True)
        n = np.where(norm > 1e-6, n / np.maximum(norm, 1e-6), 0.0)
        centre = s + 0.5
        out.append(
            {
                "erase": [tuple(p) for p in (centre + offset * radius * n).tolist()],
                "restore": [tuple(p) for p in (centre - offset * radius * n).tolist()],
            }
        )
    return out


def footprint(op: Operation, shape: tuple[int, int]) -> np.ndarray:
    """The pixels the stroke gives any paint (bool, full size)."""
    mask = np.zeros(shape, bool)
    found = stroke_coverage(op, shape)
    if found is not None:
        cover, (x0, y0, x1, y1) = found
        mask[y0:y1, x0:x1] = cover > 0
    return mask


@dataclass
class Tally:
    """One photo's figures for one tool: per stroke, the footprint error before and after."""

    before: list[float] = field(default_factory=list)
    plain: list[float] = field(default_factory=list)
    edge: list[float] = field(default_factory=list)
    #: How much of the footprint's error before was the stroke's to fix (kept
    #: background for an erase, missed subject for a restore).
    work: list[float] = field(default_factory=list)

    @property
    def worse(self) -> int:
        return sum(1 for p, e in zip(self.plain, self.edge, strict=True) if e > p + WORSE)

    def means(self) -> tuple[float, float, float]:
        if not self.before:
            return float("nan"), float("nan"), float("nan")
        return (
            statistics.fmean(self.before),
            statistics.fmean(self.plain),
            statistics.fmean(self.edge),
        )


def starting_mask(remover: Remover, src: Path, cache: Path | None) -> tuple[np.ndarray, np.ndarray]:
    """The photo (RGB) and the app's automatic mask for it, from ``cache`` when kept there."""
    kept = cache / f"{src.stem}.png" if cache else None
    if kept is not None and kept.exists():
        rgb = np.asarray(Image.open(src).convert("RGB"))
        alpha = np.asarray(Image.open(kept).convert("L"))
        if alpha.shape == rgb.shape[:2]:
            return rgb, alpha
    result = remover.remove(src)
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(result.alpha).save(kept)
    return result.image.rgb, result.alpha


def parse_setting(text: str) -> tuple[str, object]:
    name, _, value = text.partition("=")
    if not hasattr(tools, name):
        raise SystemExit(f"bgremover.touchup.tools has no constant {name}")
    kind = type(getattr(tools, name))
    return name, (value.lower() in ("1", "true", "yes") if kind is bool else kind(value))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("images", type=Path)
    ap.add_argument("truths", type=Path)
    ap.add_argument("--radius", type=float, default=0.03, help="radius / the long side")
    ap.add_argument("--offset", type=float, default=0.5, help="centre line off the outline, radii")
    ap.add_argument("--hardness", type=float, default=0.8)
    ap.add_argument("--strokes", type=int, default=24, help="segments per photo at most")
    ap.add_argument("--refine", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--model", default="u2netp")
    ap.add_argument("--masks", type=Path, default=None, help="keep and reuse the automatic masks")
    ap.add_argument("--set", dest="settings", action="append", default=[], type=parse_setting)
    budget.add_arguments(ap, "photos", {"limit": 2, "strokes": 8}, aliases=("--images",))
    args = budget.parse_args(ap, argv)
    for name, value in args.settings:
        setattr(tools, name, value)

    remover = Remover.from_config(EngineConfig(model=args.model, refine=args.refine))
    pairs = load_pairs(args.images, args.truths, args.limit)
    shown = ", ".join(f"{n}={v}" for n, v in args.settings)
    print(
        f"{args.model} fp32, edge refinement {'on' if args.refine else 'off'}, radius "
        f"{args.radius:g} of the long side, hardness {args.hardness:g}, centre line "
        f"{args.offset:g} radii off the outline, {len(pairs)} photos"
        + (f"; {shown}" if shown else "")
    )
    cols = "".join(f"{t + ': before  plain   edge worse':>36}" for t in TOOLS)
    print(f"{'image':<12}{'size':>10}{'strokes':>8}{cols}")
    per_photo: dict[str, list[tuple[float, float, float]]] = {t: [] for t in TOOLS}
    worse_total = dict.fromkeys(TOOLS, 0)
    #: The strokes with work to do, pooled over the photos: (before, plain, edge).
    needed: dict[str, list[tuple[float, float, float]]] = {t: [] for t in TOOLS}
    strokes_total = 0
    photos_worse = dict.fromkeys(TOOLS, 0)
    outside_changed = 0
    outside_err: list[tuple[float, float, float]] = []
    for src, truth_path in budget.each(pairs, "photos"):
        rgb, alpha = starting_mask(remover, src, args.masks)
        truth = np.asarray(Image.open(truth_path).convert("L"))
        if truth.shape != alpha.shape:
            truth = cv2.resize(truth, alpha.shape[::-1], interpolation=cv2.INTER_LINEAR)
        gt = truth.astype(np.float32) / 255.0
        radius = args.radius * max(alpha.shape)
        tallies = {t: Tally() for t in TOOLS}
        out_sums = np.zeros(3)
        out_count = 0
        strokes = outline_strokes(truth, radius, args.offset, args.strokes)
        for pair in strokes:
            for tool in TOOLS:
                results = []
                for edge_aware in (False, True):
                    op = Operation.stroke(tool, pair[tool], radius, args.hardness, edge_aware)
                    editor = Editor(rgb, alpha)
                    editor.apply(op)
                    results.append(editor.alpha)
                foot = footprint(op, alpha.shape)
                if not foot.any():
                    continue
                errs = [
                    float(np.abs(m[foot].astype(np.float32) / 255.0 - gt[foot]).mean())
                    for m in (alpha, *results)
                ]
                tally = tallies[tool]
                tally.before.append(errs[0])
                tally.plain.append(errs[1])
                tally.edge.append(errs[2])
                wrong = alpha[foot].astype(np.float32) / 255.0 - gt[foot]
                tally.work.append(float(np.maximum(wrong if tool == "erase" else -wrong, 0).mean()))
                away = ~foot
                for m in results:
                    outside_changed += int((m[away] != alpha[away]).sum())
                out_sums += [
                    float(np.abs(m[away].astype(np.float32) / 255.0 - gt[away]).mean())
                    for m in (alpha, *results)
                ]
                out_count += 1
        strokes_total += len(strokes)
        if out_count:
            outside_err.append(tuple(out_sums / out_count))  # type: ignore[arg-type]
        cells = ""
        for tool in TOOLS:
            tally = tallies[tool]
            before, plain, edge = tally.means()
            cells += f"{'':>10}{before:>7.4f}{plain:>7.4f}{edge:>7.4f}{tally.worse:>4}"
            if tally.before:
                per_photo[tool].append((before, plain, edge))
                photos_worse[tool] += edge > plain
            worse_total[tool] += tally.worse
            rows = zip(tally.before, tally.plain, tally.edge, tally.work, strict=True)
            needed[tool] += [(b, p, e) for b, p, e, w in rows if w >= WORK]
        size = f"{rgb.shape[1]}x{rgb.shape[0]}"
        print(f"{src.stem:<12}{size:>10}{len(strokes):>8}{cells}", flush=True)
    cells = ""
    for tool in TOOLS:
        rows = per_photo[tool]
        means = [statistics.fmean(r[k] for r in rows) if rows else float("nan") for k in range(3)]
        cells += f"{'':>10}{means[0]:>7.4f}{means[1]:>7.4f}{means[2]:>7.4f}{worse_total[tool]:>4}"
    print(f"{'MEAN':<12}{'':>10}{strokes_total:>8}{cells}")
    for tool in TOOLS:
        print(
            f"{tool}: edge-aware worse than plain on {photos_worse[tool]} of "
            f"{len(per_photo[tool])} photos (mean footprint error), on {worse_total[tool]} "
            f"of {strokes_total} strokes"
        )
    for tool in TOOLS:
        rows = needed[tool]
        if not rows:
            continue
        before, plain, edge = (statistics.fmean(r[k] for r in rows) for k in range(3))
        worse = sum(1 for _, p, e in rows if e > p + WORSE)
        print(
            f"{tool}, the {len(rows)} strokes with work to do (at least {WORK:g} of the error "
            f"theirs to fix): before {before:.4f}, plain {plain:.4f}, edge-aware {edge:.4f}, "
            f"edge-aware worse on {worse}"
        )
    if outside_err:
        before, plain, edge = (statistics.fmean(r[k] for r in outside_err) for k in range(3))
        print(
            f"outside the footprints: {outside_changed} pixels changed; mean error before "
            f"{before:.4f}, plain {plain:.4f}, edge-aware {edge:.4f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
