"""`--model best` against the default model, per photo, and the cutout-doubt signal.

    python tests/benchmarks/best_model.py matting=IMAGES:TRUTH portraits=IMAGES:TRUTH ...
        [--choose matting] [--sheet OUT.png NAME] [--precision int8]
        [--limit N] [--quick]

Each folder is given as NAME=IMAGES_DIR:TRUTH_DIR (alpha PNGs named as the photos; a
folder without truth as NAME=IMAGES_DIR). For every photo the default model (u2netp, edge
refinement on) and ``best`` (:data:`bgremover.network.models.BEST`, refinement on) are
run through the real engine (:meth:`Remover.remove`); printed per photo: SAD, IoU at 0.5
and mean |Δα| against the truth for both, the models ``best`` ran, and whether each
cutout is in doubt (:meth:`Result.doubts`, the reasons after it). Then per folder the
means, and the doubt signal's precision and recall for "IoU < 0.85", for the default's
cutouts and for best's, per folder and over all folders with truth.

The cascade's one chosen figure, ``ASK_SECOND_HAZE`` (the haze at which the first model is
unsure and the second is asked), is cross-validated: both models' masks are made for
every photo once, the cascade is played at each candidate figure, and on one folder the
largest figure (the fewest photos asking the second model, the least time) whose mean SAD
is within 2 % of that folder's lowest is chosen; the others are scored with it. Every
direction is printed (``--choose`` names the folder the product's figure was chosen on,
which is marked).

``--sheet OUT.png NAME`` also writes a contact sheet of the folder called NAME: each photo,
its default cutout and its best cutout on a checkerboard, doubtful cutouts framed in orange.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import budget
import numpy as np
from PIL import Image, ImageDraw

from bgremover.engine.pipeline import Remover
from bgremover.mask import combine
from bgremover.mask.metrics import iou, mean_abs_diff, sad
from bgremover.mask.refine import refine_alpha
from bgremover.network.transforms import score_map

SUFFIXES = {".jpg", ".jpeg", ".png", ".webp"}
CANDIDATES = (0.0, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15, 0.20, 0.25, 1e9)
BAD_IOU = 0.85


def photos(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in SUFFIXES)


def truth_of(photo: Path, truths: Path | None, shape: tuple[int, ...]) -> np.ndarray | None:
    if truths is None or not (truths / f"{photo.stem}.png").exists():
        return None
    truth = Image.open(truths / f"{photo.stem}.png").convert("L")
    if truth.size != (shape[1], shape[0]):
        truth = truth.resize((shape[1], shape[0]), Image.Resampling.BILINEAR)
    return np.asarray(truth)


def scores(alpha: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    return sad(alpha, truth), iou(alpha, truth), mean_abs_diff(alpha, truth)


def member_masks(best: Remover, rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both of best's models' masks of ``rgb``, as best makes each (bicubic upscale)."""
    from bgremover.engine.pipeline import model_mask
    from bgremover.files.imaging import from_array

    masks = []
    height, width = rgb.shape[:2]
    for member in best.members:
        raw, _ = member.infer_checked(member.prepare(from_array(rgb))[0])
        score = score_map(raw, member.family)
        masks.append(model_mask(score, width, height, member.family, True))
    return masks[0], masks[1]


def cascade(first: np.ndarray, second: np.ndarray, ask: float) -> np.ndarray:
    """The combined mask with ``ask`` as ASK_SECOND_HAZE (the product's rule otherwise)."""
    found = combine.evidence(first)
    if found.haze >= ask or found.odd():
        return combine.fuse(first, second)
    return first


def precision_recall(rows: list[tuple[float, bool]]) -> str:
    bad = [d for q, d in rows if q < BAD_IOU]
    flagged = [q for q, d in rows if d]
    hits = sum(1 for q, d in rows if d and q < BAD_IOU)
    recall = hits / len(bad) if bad else float("nan")
    precision = hits / len(flagged) if flagged else float("nan")
    return (
        f"{len(bad)} with IoU < {BAD_IOU}, {len(flagged)} in doubt, {hits} both: "
        f"recall {recall:.2f}, precision {precision:.2f}"
    )


def checker(alpha: np.ndarray, rgb: np.ndarray) -> np.ndarray:
    h, w = alpha.shape
    yy, xx = np.mgrid[0:h, 0:w]
    board = np.where(((yy // 12 + xx // 12) % 2)[..., None] == 0, 235, 200).astype(np.float32)
    a = alpha[..., None].astype(np.float32) / 255
    return (rgb * a + board * (1 - a)).astype(np.uint8)


def sheet(out: Path, rows: list[dict]) -> None:
    tiles = []
    for r in rows:
        rd, rb, rgb = r["default"], r["best"], r["rgb"]
        height = 160
        width = max(1, round(rgb.shape[1] * height / rgb.shape[0]))
        row = []
        for pic, result in (
            (rgb, None),
            (checker(rd.alpha, rgb), rd),
            (checker(rb.alpha, rgb), rb),
        ):
            tile = Image.fromarray(pic).resize((width, height))
            if result is not None and result.doubts:
                ImageDraw.Draw(tile).rectangle(
                    (0, 0, width - 1, height - 1), outline=(255, 140, 0), width=5
                )
            row.append(tile)
        label = Image.new("RGB", (3 * width + 8, 14), "white")
        ImageDraw.Draw(label).text((2, 1), f"{r['photo']}  ({' + '.join(rb.models)})", fill="black")
        strip = Image.new("RGB", (3 * width + 8, height + 14), "white")
        strip.paste(label, (0, 0))
        for i, tile in enumerate(row):
            strip.paste(tile, (i * (width + 4), 14))
        tiles.append(strip)
    columns = 3
    cell_w = max(t.width for t in tiles) + 10
    cell_h = max(t.height for t in tiles) + 10
    rows = -(-len(tiles) // columns)
    canvas = Image.new("RGB", (columns * cell_w, rows * cell_h + 20), "white")
    ImageDraw.Draw(canvas).text(
        (5, 4),
        "photo | default (u2netp) | best   - orange frame: the cutout is in doubt",
        fill="black",
    )
    for i, tile in enumerate(tiles):
        canvas.paste(tile, ((i % columns) * cell_w + 5, (i // columns) * cell_h + 25))
    canvas.save(out)
    print(f"contact sheet: {out}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+", help="NAME=IMAGES_DIR[:TRUTH_DIR]")
    ap.add_argument(
        "--choose", default="matting", help="the folder the product's figure was chosen on"
    )
    ap.add_argument("--sheet", nargs=2, metavar=("OUT", "NAME"))
    ap.add_argument(
        "--precision", default="fp32", help="best's precision (int8: each model in int8, guarded)"
    )
    budget.add_arguments(ap, "photos of each folder", {"limit": 2})
    args = budget.parse_args(ap, argv)

    default, best = Remover("u2netp"), Remover("best", precision=args.precision)
    default.load()
    best.load()
    per_folder: dict[str, list[dict]] = {}
    found = []
    for spec in args.folders:
        name, _, dirs = spec.partition("=")
        images, _, truths = dirs.partition(":")
        found.append((name, budget.limited(photos(Path(images)), args.limit), truths))
    count = sum(len(found_photos) for _, found_photos, _ in found)
    estimate = budget.Estimate(count, "photos", then=", then the cross-validation")
    for name, found_photos, truths in found:
        rows = per_folder.setdefault(name, [])
        for photo in found_photos:
            t0 = time.perf_counter()
            rd = default.remove(photo)
            t1 = time.perf_counter()
            rb = best.remove(photo)
            t2 = time.perf_counter()
            truth = truth_of(photo, Path(truths) if truths else None, rd.alpha.shape)
            first, second = member_masks(best, rd.image.rgb)
            row = {
                "photo": photo.stem, "default": rd, "best": rb, "truth": truth,
                "rgb": rd.image.rgb, "first": first, "second": second,
                "seconds": (t1 - t0, t2 - t1),
            }  # fmt: skip
            rows.append(row)
            line = f"{name:10s} {photo.stem:24s}"
            if truth is not None:
                sd, sb = scores(rd.alpha, truth), scores(rb.alpha, truth)
                row["scores"] = (sd, sb)
                line += (
                    f" default SAD {sd[0]:7.2f} IoU {sd[1]:.3f} |Δα| {sd[2]:.4f}"
                    f" | best SAD {sb[0]:7.2f} IoU {sb[1]:.3f} |Δα| {sb[2]:.4f}"
                )
            line += f" | ran {'+'.join(rb.models)} {rb.precision}"
            if rb.guard is not None:
                line += f" (int8 doubt {rb.guard.doubt:.4f})"
            line += f" | {t1 - t0:.2f} s / {t2 - t1:.2f} s"
            line += f" | doubt default: {'; '.join(rd.doubts) or '-'}"
            line += f" | best: {'; '.join(rb.doubts) or '-'}"
            print(line, flush=True)
            estimate.tick()

    print()
    every_default: list[tuple[float, bool]] = []
    every_best: list[tuple[float, bool]] = []
    for name, rows in per_folder.items():
        scored = [r for r in rows if "scores" in r]
        asked = sum(len(r["best"].models) > 1 for r in rows)
        print(f"== {name}: {len(rows)} photos, best asked its second model on {asked}")
        if not scored:
            continue
        for i, who in enumerate(("default", "best")):
            mean = np.mean([r["scores"][i] for r in scored], axis=0)
            print(f"   {who:8s} SAD {mean[0]:.2f}  IoU {mean[1]:.4f}  |Δα| {mean[2]:.4f}")
        d_rows = [(r["scores"][0][1], bool(r["default"].doubts)) for r in scored]
        b_rows = [(r["scores"][1][1], bool(r["best"].doubts)) for r in scored]
        every_default += d_rows
        every_best += b_rows
        print(f"   doubt, default's cutouts: {precision_recall(d_rows)}")
        print(f"   doubt, best's cutouts:    {precision_recall(b_rows)}")
    print(f"== all folders with truth, doubt, default's cutouts: {precision_recall(every_default)}")
    print(f"== all folders with truth, doubt, best's cutouts:    {precision_recall(every_best)}")
    seconds = [r["seconds"] for rows in per_folder.values() for r in rows]
    print(
        "== median seconds per photo (one at a time, not the pipelined batch): default "
        f"{statistics.median(s[0] for s in seconds):.2f}, "
        f"best {statistics.median(s[1] for s in seconds):.2f}"
    )

    # Cross-validation of ASK_SECOND_HAZE: chosen on one folder, scored on the others.
    scored_folders = {n: [r for r in rows if "scores" in r] for n, rows in per_folder.items()}
    scored_folders = {n: rows for n, rows in scored_folders.items() if rows}
    table: dict[str, dict[float, np.ndarray]] = {}
    asks: dict[str, dict[float, int]] = {}
    for name, rows in scored_folders.items():
        table[name], asks[name] = {}, {}
        for ask in CANDIDATES:
            made = []
            for r in rows:
                alpha = refine_alpha(r["rgb"], cascade(r["first"], r["second"], ask))
                made.append(scores(alpha, r["truth"]))
            table[name][ask] = np.mean(made, axis=0)
            asks[name][ask] = sum(
                cascade(r["first"], r["second"], ask) is not r["first"] for r in rows
            )
    print(
        "\n== cascade figure ASK_SECOND_HAZE: mean SAD / IoU / |Δα| per folder, and on how "
        "many photos the second model runs (1e9: never)"
    )
    for ask in CANDIDATES:
        cells = "  ".join(
            f"{n}: {t[ask][0]:6.2f} / {t[ask][1]:.4f} / {t[ask][2]:.4f} ({asks[n][ask]} asked)"
            for n, t in table.items()
        )
        print(f"   {ask:>6g}  {cells}")
    for chosen_on, t in table.items():
        lowest = min(t[a][0] for a in CANDIDATES)
        ask = max(a for a in CANDIDATES if t[a][0] <= 1.02 * lowest)
        mark = " (the product's)" if chosen_on == args.choose else ""
        others = ", ".join(
            f"{n} SAD {o[ask][0]:.2f} IoU {o[ask][1]:.4f} |Δα| {o[ask][2]:.4f}"
            for n, o in table.items()
            if n != chosen_on
        )
        print(f"   chosen on {chosen_on}{mark}: {ask:g} -> {others}")
    print(f"   the product's figure: {combine.ASK_SECOND_HAZE:g}")

    if args.sheet:
        sheet(Path(args.sheet[0]), per_folder[args.sheet[1]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
