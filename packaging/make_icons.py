"""Draw the app icon and write it in the sizes each platform wants.

    python packaging/make_icons.py   # assets/icon.png, .ico, .icns and the window icon

A person's silhouette whose right half is cut out onto a checkerboard: what the
app does, readable from 16 px to 1024 px. Drawn with Pillow at 1024 px.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
#: The window icon the app loads through its package (works from a bundle too).
WINDOW_ICON = ROOT / "bgremover" / "gui" / "icon.png"
SIZE = 1024


def draw() -> Image.Image:
    s = SIZE
    icon = Image.new("RGBA", (s, s), (0, 0, 0, 0))
    # Rounded tile: deep blue on the left half, checkerboard on the right half.
    tile = Image.new("RGBA", (s, s), (32, 86, 170, 255))
    checker = Image.new("RGBA", (s, s), (235, 235, 235, 255))
    cd = ImageDraw.Draw(checker)
    cell = s // 8
    for y in range(0, s, cell):
        for x in range(0, s, cell):
            if (x // cell + y // cell) % 2:
                cd.rectangle([x, y, x + cell - 1, y + cell - 1], fill=(200, 200, 200, 255))
    tile.paste(checker.crop((s // 2, 0, s, s)), (s // 2, 0))
    rounded = Image.new("L", (s, s), 0)
    ImageDraw.Draw(rounded).rounded_rectangle([24, 24, s - 24, s - 24], radius=s // 5, fill=255)
    icon.paste(tile, (0, 0), rounded)
    # The silhouette: head and shoulders, warm white, over both halves.
    person = Image.new("L", (s, s), 0)
    pd = ImageDraw.Draw(person)
    pd.ellipse([s * 0.35, s * 0.18, s * 0.65, s * 0.50], fill=255)
    pd.ellipse([s * 0.18, s * 0.55, s * 0.82, s * 1.15], fill=255)
    person = Image.composite(person, Image.new("L", (s, s), 0), rounded)
    icon.paste(Image.new("RGBA", (s, s), (255, 214, 150, 255)), (0, 0), person)
    return icon


def main() -> None:
    icon = draw()
    icon.resize((512, 512), Image.Resampling.LANCZOS).save(ASSETS / "icon.png", optimize=True)
    icon.save(ASSETS / "icon.ico", sizes=[(16, 16), (24, 24), (32, 32), (48, 48), (64, 64),
                                          (128, 128), (256, 256)])  # fmt: skip
    icon.save(ASSETS / "icon.icns")
    icon.resize((256, 256), Image.Resampling.LANCZOS).save(WINDOW_ICON, optimize=True)
    for name in ("icon.png", "icon.ico", "icon.icns"):
        print(ASSETS / name, (ASSETS / name).stat().st_size)


if __name__ == "__main__":
    main()
