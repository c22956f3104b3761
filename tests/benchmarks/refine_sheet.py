"""A contact sheet to look at refinement: every photo of a folder cut out without and with
edge refinement, on a solid colour, side by side.

    python tests/benchmarks/refine_sheet.py FOLDER OUT.png [--colour "#ff00ff"] [--tile 360]
        [--limit N] [--quick]

Each row is one photo: the network's mask as rembg computes it (``--no-refine``), then the
refined one, each on the colour (magenta by default: neither skin, sky nor foliage), so
blotches, bites along the outline and steps in the hair show. Made with the engine the
command line runs (u2netp fp32).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import budget
import numpy as np
from PIL import Image, ImageDraw

from bgremover import Remover
from bgremover.export.options import parse_color
from bgremover.files.imaging import IMAGE_EXTENSIONS, read_image


def on_colour(
    rgb: np.ndarray, alpha: np.ndarray, colour: tuple[int, ...], tile: int
) -> Image.Image:
    a = alpha[..., None].astype(np.float32) / 255
    flat = rgb * a + np.asarray(colour[:3], np.float32) * (1 - a)
    image = Image.fromarray(np.clip(flat + 0.5, 0, 255).astype(np.uint8))
    image.thumbnail((tile, tile), Image.Resampling.LANCZOS)
    return image


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--colour", default="#ff00ff")
    parser.add_argument("--tile", type=int, default=360)
    budget.add_arguments(parser, "photos", {"limit": 2})
    args = budget.parse_args(parser)
    colour = parse_color(args.colour)
    plain, refined = Remover("u2netp", refine=False), Remover("u2netp")
    found = sorted(p for p in args.folder.iterdir() if p.suffix.lower() in IMAGE_EXTENSIONS)
    photos = budget.limited(found, args.limit)
    label, tile = 18, args.tile
    sheet = Image.new("RGB", (2 * tile + 12, len(photos) * (tile + label + 6)), "white")
    draw = ImageDraw.Draw(sheet)
    for row, photo in enumerate(budget.each(photos, "photos")):
        image = read_image(photo)
        y = row * (tile + label + 6)
        draw.text((4, y + 2), f"{photo.name}: --no-refine | refined", fill="black")
        for column, remover in enumerate((plain, refined)):
            result = remover.remove(image)
            cut = on_colour(result.image.rgb, result.alpha, colour, tile)
            sheet.paste(cut, (column * (tile + 12), y + label))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(args.out)
    print(f"{len(photos)} photos -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
