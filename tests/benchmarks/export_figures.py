"""The README's contact sheet of the export presets, made by the command line's own code.

    python tests/benchmarks/export_figures.py PHOTO [PHOTO ...] -o assets/export-presets.png
        [--limit N] [--quick]

One row per photo: the photo, then each built-in preset's output as the file it
writes (decoded again, so a JPEG's loss shows as it is), scaled into a cell.
Transparent outputs are drawn on a checkerboard, as the app shows them.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import budget
import numpy as np
from PIL import Image, ImageDraw

from bgremover import Remover
from bgremover.export.compose import compose_array
from bgremover.export.output import FORMATS
from bgremover.export.presets import BUILTIN, get_preset, options_from

CELL = 300
LABEL = 22
GAP = 8


def checkerboard(size: tuple[int, int], cell: int = 12) -> Image.Image:
    width, height = size
    ys, xs = np.mgrid[0:height, 0:width]
    light = ((xs // cell + ys // cell) % 2 == 0)[..., None]
    board = np.where(light, np.uint8(238), np.uint8(204)).repeat(3, axis=2)
    return Image.fromarray(board.astype(np.uint8), "RGB")


def shown(img: Image.Image) -> Image.Image:
    """An output as it looks: transparent parts on a checkerboard."""
    img.thumbnail((CELL, CELL), Image.Resampling.LANCZOS)
    if img.mode != "RGBA":
        return img.convert("RGB")
    board = checkerboard(img.size)
    board.paste(img, (0, 0), img)
    return board


def written(result, name: str) -> Image.Image:
    """The preset's output file for ``result``, encoded and decoded again."""
    options, fmt = options_from(get_preset(name).values)
    assert fmt is not None
    pixels = compose_array(result.image.rgb, result.alpha, options)
    buffer = io.BytesIO()
    FORMATS[fmt].encode(buffer, pixels, FORMATS[fmt], options=options)
    buffer.seek(0)
    img = Image.open(buffer)
    img.load()
    return img


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("photos", nargs="+", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    budget.add_arguments(parser, "photos", {"limit": 2})
    args = budget.parse_args(parser)
    photos = budget.limited(args.photos, args.limit)
    remover = Remover()
    columns = ["photo", *BUILTIN]
    width = len(columns) * (CELL + GAP) + GAP
    row_height = CELL + LABEL + GAP  # the picture, then what the file is
    height = len(photos) * row_height + LABEL + GAP
    sheet = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    for col, name in enumerate(columns):
        draw.text((GAP + col * (CELL + GAP) + 4, 4), name, fill=(0, 0, 0))
    for row, photo in enumerate(budget.each(photos, "photos")):
        result = remover.remove(photo)
        cells = [Image.fromarray(result.image.rgb)] + [written(result, n) for n in BUILTIN]
        for col, img in enumerate(cells):
            info = f"{img.format} {img.width}x{img.height} {img.mode}" if col else ""
            pic = shown(img)
            top = LABEL + row * row_height
            x = GAP + col * (CELL + GAP) + (CELL - pic.width) // 2
            sheet.paste(pic, (x, top + (CELL - pic.height) // 2))
            draw.text((GAP + col * (CELL + GAP) + 4, top + CELL + 4), info, fill=(90, 90, 90))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(args.output, optimize=True)
    print(f"wrote {args.output} ({sheet.width}x{sheet.height})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
