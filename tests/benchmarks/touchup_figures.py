"""The README's touch-up figures: before/after pictures made by the engine's own tools.

    python tests/benchmarks/touchup_figures.py PHOTOS_DIR OUT_DIR [--clicks-on IMAGE GT]
        [--limit N] [--quick]

- ``touchup-hair.png``: matplotlib's Grace Hopper portrait (public domain). u2netp keeps
  a purple halo of the flag behind her along the hat and the hair; one edge-aware erase
  stroke along that outline (drawn in yellow on the left) clears it and keeps the hair.
- ``touchup-clicks.png``: scikit-image's astronaut (public domain). u2netp keeps a
  faint part of the flag beside her; two Remove clicks on its stripes take it away.
  With ``--clicks-on IMAGE GT`` the clicks are placed instead by the clicks
  benchmark's simulated user against a ground truth, for any photo (for images that
  may not be redistributed, such as the matting set's plant: look at them, do not
  commit them).

Each panel is the cutout on a solid colour, so halos and leftovers show.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parent))

import budget
from clicks import next_click

from bgremover import Remover
from bgremover.files.imaging import read_image
from bgremover.touchup.edit import Editor, Operation

BACKGROUND = np.array([255, 0, 255], np.float32)  # magenta: halos of any colour show
HAIR_STROKE = [(160, 110), (150, 160), (148, 210), (156, 260), (172, 300), (195, 325)]
HAIR_RADIUS = 14
HAIR_CROP = (110, 95, 230, 335)
#: Two Remove clicks on the flag's stripes, where a user would put them.
ASTRONAUT_CLICKS = [(20.0, 300.0, False), (12.0, 460.0, False)]


def on_colour(rgb: np.ndarray, alpha: np.ndarray) -> Image.Image:
    a = alpha.astype(np.float32)[..., None] / 255.0
    return Image.fromarray((rgb * a + BACKGROUND * (1.0 - a) + 0.5).astype(np.uint8))


def side_by_side(before: Image.Image, after: Image.Image, zoom: int) -> Image.Image:
    w, h = before.size
    gap = 8
    sheet = Image.new("RGB", (2 * w + gap, h), "white")
    sheet.paste(before, (0, 0))
    sheet.paste(after, (w + gap, 0))
    return sheet.resize((sheet.width * zoom, h * zoom), Image.Resampling.NEAREST)


def hair_figure(photos: Path, remover: Remover) -> Image.Image:
    image = read_image(photos / "matplotlib_grace_hopper.jpg")
    result = remover.remove(image)
    editor = Editor(image.rgb, result.alpha)
    editor.apply(Operation.stroke("erase", HAIR_STROKE, HAIR_RADIUS, 0.8, edge_aware=True))
    before = on_colour(image.rgb, result.alpha)
    draw = ImageDraw.Draw(before)
    draw.line(HAIR_STROKE, fill=(255, 220, 0), width=1)
    after = on_colour(image.rgb, editor.alpha)
    return side_by_side(before.crop(HAIR_CROP), after.crop(HAIR_CROP), 3)


def clicks_figure(
    image_path: Path,
    remover: Remover,
    clicks: list[tuple[float, float, bool]] | None = None,
    truth: np.ndarray | None = None,
    count: int = 8,
) -> Image.Image:
    """Before (with the clicks drawn: green Add, red Remove) and after. The clicks are
    given, or placed one by one by the benchmark's simulated user against ``truth``."""
    image = read_image(image_path)
    result = remover.remove(image)
    editor = Editor(image.rgb, result.alpha, segment=remover.segment)
    placed = []
    for i in range(len(clicks) if clicks is not None else count):
        if clicks is not None:
            x, y, add = clicks[i]
        else:
            assert truth is not None
            found = next_click(editor.alpha, truth)
            if found is None:
                break
            x, y, add = found[0] + 0.5, found[1] + 0.5, found[2]
        editor.apply(Operation.click(x, y, add))
        placed.append((x, y, add))
    before = on_colour(image.rgb, result.alpha)
    draw = ImageDraw.Draw(before)
    r = max(6, round(0.018 * max(before.size)))
    for x, y, add in placed:
        colour = (40, 220, 60) if add else (235, 40, 40)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=colour, outline="white", width=2)
    after = on_colour(image.rgb, editor.alpha)
    return side_by_side(before, after, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("photos", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--clicks-on", nargs=2, type=Path, metavar=("IMAGE", "GT"))
    parser.add_argument("--clicks", type=int, default=8)
    budget.add_arguments(parser, "figures (hair, clicks)", {"limit": 1})
    args = budget.parse_args(parser)
    args.out.mkdir(parents=True, exist_ok=True)
    remover = Remover("u2netp", providers="cpu")
    figures: list[tuple[str, Callable[[], Image.Image]]]
    if args.clicks_on:
        image, gt = args.clicks_on
        truth = np.asarray(Image.open(gt).convert("L"))
        figures = [
            (
                f"touchup-clicks-{image.stem}.png",
                lambda: clicks_figure(image, remover, truth=truth, count=args.clicks),
            )
        ]
    else:
        astronaut = args.photos / "skimage_astronaut.png"
        figures = [
            ("touchup-hair.png", lambda: hair_figure(args.photos, remover)),
            (
                "touchup-clicks.png",
                lambda: clicks_figure(astronaut, remover, clicks=ASTRONAUT_CLICKS),
            ),
        ]
    for name, make in budget.each(budget.limited(figures, args.limit), "figures"):
        make().save(args.out / name, optimize=True)


if __name__ == "__main__":
    main()
