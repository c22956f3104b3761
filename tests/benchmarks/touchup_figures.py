"""The README's touch-up figures: before/after pictures made by the engine's own tools.

    python tests/benchmarks/touchup_figures.py PHOTOS_DIR OUT_DIR [--clicks-on IMAGE GT]

- ``touchup-hair.png``: matplotlib's Grace Hopper portrait (public domain). u2netp keeps
  a purple halo of the flag behind her along the hat and the hair; one edge-aware erase
  stroke along that outline (drawn in yellow on the left) clears it and keeps the hair.
- ``touchup-clicks.png``: scikit-image's astronaut (public domain). u2netp keeps part of
  the flag beside her; Remove clicks, placed by the clicks benchmark's simulated user
  against a reference mask, take it away. With ``--clicks-on IMAGE GT`` the same is
  done for any photo and its ground truth (for images that may not be redistributed:
  look at them, do not commit them).

Each panel is the cutout on a solid colour, so halos and leftovers show.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parent))

from clicks import next_click

from bgremover import Remover
from bgremover.edit import Editor, Operation
from bgremover.imaging import read_image

BACKGROUND = np.array([255, 0, 255], np.float32)  # magenta: halos of any colour show
HAIR_STROKE = [(160, 110), (150, 160), (148, 210), (156, 260), (172, 300), (195, 325)]
HAIR_RADIUS = 14
HAIR_CROP = (110, 95, 230, 335)


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
    image_path: Path, truth: np.ndarray, remover: Remover, clicks: int
) -> Image.Image:
    image = read_image(image_path)
    result = remover.remove(image)
    editor = Editor(image.rgb, result.alpha, segment=remover.segment)
    placed = []
    for _ in range(clicks):
        click = next_click(editor.alpha, truth)
        if click is None:
            break
        x, y, add = click
        editor.apply(Operation.click(x, y, add))
        placed.append(click)
    before = on_colour(image.rgb, result.alpha)
    draw = ImageDraw.Draw(before)
    r = max(4, round(0.012 * max(before.size)))
    for x, y, add in placed:
        colour = (40, 220, 60) if add else (235, 40, 40)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=colour, outline="white", width=2)
    after = on_colour(image.rgb, editor.alpha)
    zoom = max(1, 600 // max(before.size))
    return side_by_side(before, after, zoom)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("photos", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--clicks-on", nargs=2, type=Path, metavar=("IMAGE", "GT"))
    parser.add_argument("--clicks", type=int, default=3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    remover = Remover("u2netp", providers="cpu")
    if args.clicks_on:
        image, gt = args.clicks_on
        truth = np.asarray(Image.open(gt).convert("L"))
        fig = clicks_figure(image, truth, remover, args.clicks)
        fig.save(args.out / f"touchup-clicks-{image.stem}.png", optimize=True)
        return
    hair_figure(args.photos, remover).save(args.out / "touchup-hair.png", optimize=True)


if __name__ == "__main__":
    main()
