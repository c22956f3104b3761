"""Where the presets that crop or place put the subject, photo by photo.

    python tests/benchmarks/subject_layout.py [--data ../shared/data]
        [--folders photos matting portraits] [--before] [--shares 0.01 0.05 ...]
        [--limit N] [--quick]

For every photo of the folders and every built-in preset that crops or puts the subject
on a canvas, one row: how far the subject's centre is from the canvas's (in % of the
canvas, the larger of x and y), the largest alpha outside the subject's box on the output
(everything there should be below 0.1), the share of the subject that the box leaves out
or clears ("lost": of the model's alpha on the true subject, reference alpha 0.5 or more),
the scale (output pixels per photo pixel) and whether the upscale note was given.

The subject's box is, where the folder has a reference alpha (matting/gt, the human-made
ground truth; portraits/reference_alpha, P3M-Net's mattes), the box of what the model found
of the true subject (both alphas above 0.1), put on the output by the photo's layout: so
the rows say where the real subject went, not where the code thinks it is, and a part the
model missed altogether moves no centre. photos/ has no reference: there the code's own
box is used (its rows check the centring and the note, not what the box chose). ``--before`` adds
the same figures with the box of every alpha above 10/255 (the box before it was decided
by alpha mass and connectivity). ``--shares`` runs the rows again for other values of
bgremover.mask.subject.PART_SHARE, to choose it on one folder (then score it on the others).
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
from pathlib import Path

import budget
import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {
    "photos": ("photos", None),
    "matting": ("matting/input", "matting/gt"),
    "portraits": ("portraits/input", "portraits/reference_alpha"),
}
LIMIT_CENTRE = 2.0  # % of the canvas
LIMIT_OUTSIDE = 0.1  # alpha


def reference_alpha(folder: Path, photo: Path, shape: tuple[int, int]) -> np.ndarray | None:
    found = [p for p in folder.glob(photo.stem + ".*") if p.suffix in (".png", ".jpg")]
    if not found:
        return None
    with Image.open(found[0]) as img:
        alpha = np.asarray(img.convert("L"))
    if alpha.shape != shape:
        alpha = np.asarray(Image.fromarray(alpha).resize(shape[::-1], Image.Resampling.BILINEAR))
    return alpha


def bounds(mask: np.ndarray) -> tuple[int, int, int, int] | None:
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if rows.size == 0:
        return None
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def measure(alpha, reference, options, subject):
    """(centre offset %, max alpha outside, cut-off %, scale) of one layout."""
    from bgremover.export.compose import _placed_alpha, layout

    lay = layout(alpha, options, subject)
    placed = _placed_alpha(alpha, lay, options, subject)
    truth = bounds((reference > 25) & (alpha > 25)) if reference is not None else subject.box
    if truth is None:
        return None
    (left, top), (right, bottom) = lay.to_output(*truth[:2]), lay.to_output(*truth[2:])
    width, height = lay.size
    dx = abs((left + right) / 2 - width / 2) / width
    dy = abs((top + bottom) / 2 - height / 2) / height
    centre = 100 * (dx if options.position == "bottom" else max(dx, dy))
    outside = np.ones(placed.shape, bool)  # one pixel of slack for the rounding
    y0, y1 = max(0, math.floor(top) - 1), min(height, math.ceil(bottom) + 1)
    x0, x1 = max(0, math.floor(left) - 1), min(width, math.ceil(right) + 1)
    outside[y0:y1, x0:x1] = False
    most = float(placed[outside].max()) / 255 if outside.any() else 0.0
    cut = float("nan")
    if reference is not None and subject.box is not None:
        kept = np.zeros(alpha.shape, bool)
        bx0, by0, bx1, by1 = subject.box
        kept[by0:by1, bx0:bx1] = True
        if subject.leftover is not None:
            kept &= ~subject.leftover
        on_subject = reference >= 128
        total = float(alpha[on_subject].sum(dtype=np.float64))
        lost = float(alpha[on_subject & ~kept].sum(dtype=np.float64))
        cut = 100 * lost / total if total else 0.0
    return centre, most, cut, lay.scale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--folders", nargs="+", default=list(FOLDERS), choices=list(FOLDERS))
    parser.add_argument("--before", action="store_true", help="also the box of alpha > 10")
    parser.add_argument("--shares", nargs="+", type=float, help="PART_SHARE values to try")
    budget.add_arguments(parser, "photos of each folder", {"limit": 2})
    args = budget.parse_args(parser)

    from bgremover.engine.pipeline import Remover
    from bgremover.export.compose import enlargement
    from bgremover.export.presets import BUILTIN, get_preset, options_from
    from bgremover.files.imaging import walk_images
    from bgremover.mask import subject as subject_rules
    from bgremover.mask.subject import Subject, _bounds, find_subject

    presets = {}
    for name in BUILTIN:
        options, _ = options_from(get_preset(name).values)
        if options.crop or options.canvas is not None or options.aspect is not None:
            presets[name] = options
    remover = Remover()
    shares = args.shares or [subject_rules.PART_SHARE]
    head = (
        f"{'share':>5s} {'photo':34s} {'preset':20s} {'box':4s} {'centre%':>7s} {'α out':>6s} "
        f"{'lost%':>6s} {'scale':>6s} {'note':>4s}"
    )
    if args.before:
        head += f"  {'before: centre%':>15s} {'α out':>6s}"
    print(head)
    failed: dict[str, list[str]] = {}
    worst: dict[tuple[str, str], list[float]] = {}
    found = [
        budget.limited(walk_images(args.data / FOLDERS[k][0]), args.limit) for k in args.folders
    ]
    estimate = budget.Estimate(sum(map(len, found)), "photos")
    for key, images in zip(args.folders, found, strict=True):
        refs = FOLDERS[key][1]
        for photo in images:
            alpha = remover.remove(photo).alpha
            reference = reference_alpha(args.data / refs, photo, alpha.shape) if refs else None
            plain = Subject(_bounds(alpha > 10))
            for share, (name, options) in itertools.product(shares, presets.items()):
                subject_rules.PART_SHARE = share
                subject = find_subject(alpha)
                now = measure(alpha, reference, options, subject)
                if now is None:
                    print(f"{share:5.3f} {key + '/' + photo.name:34s} {name:20s} no subject")
                    continue
                centre, most, cut, scale = now
                noted = enlargement(alpha, options, subject) is not None
                line = (
                    f"{share:5.3f} {key + '/' + photo.name:34s} {name:20s} "
                    f"{'ref' if reference is not None else 'own':4s} {centre:7.2f} "
                    f"{most:6.3f} {cut:6.2f} {scale:6.2f} {'yes' if noted else 'no':>4s}"
                )
                if args.before:
                    old = measure(alpha, reference, options, plain)
                    if old is not None:
                        line += f"  {old[0]:15.2f} {old[1]:6.3f}"
                print(line, flush=True)
                label = name if len(shares) == 1 else f"{name} @{share:g}"
                if centre > LIMIT_CENTRE or most >= LIMIT_OUTSIDE:
                    failed.setdefault(label, []).append(f"{key}/{photo.name}")
                worst.setdefault((key, label), []).append(centre)
                worst.setdefault((key, label + " out"), []).append(most)
                if reference is not None:
                    worst.setdefault((key, label + " cut"), []).append(cut)
            estimate.tick()
    print()
    for (key, name), values in worst.items():
        if name.endswith((" out", " cut")):
            continue
        outs = worst[(key, name + " out")]
        cuts = worst.get((key, name + " cut"))
        cut_words = f", lost {max(cuts):.2f} % of the subject at most" if cuts else ""
        print(
            f"{key:10s} {name:26s} {len(values):3d} photos: centre off at most "
            f"{max(values):.2f} % (median {statistics.median(values):.2f}; limit "
            f"{LIMIT_CENTRE:g}), alpha outside the box at most {max(outs):.3f} (limit "
            f"{LIMIT_OUTSIDE:g}){cut_words}"
        )
    for name, photos in failed.items():
        print(f"{name}: past a limit on {len(photos)}: {', '.join(photos)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
