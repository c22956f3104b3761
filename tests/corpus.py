"""Builds, on the fly, a folder of valid and broken inputs of every kind users meet.

`build_corpus(folder)` writes the files and returns {relative path: expectation}, where
the expectation is "ok" (must give a correct output) or a phrase the error must contain.
No binary blobs are stored in the repository: everything is generated with Pillow.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
from PIL import Image, ImageCms


def _photo(w: int = 96, h: int = 72) -> Image.Image:
    """A small image with a bright subject on a dark background."""
    yy, xx = np.mgrid[0:h, 0:w]
    subject = ((yy - h / 2) ** 2 / (h / 3) ** 2 + (xx - w / 2) ** 2 / (w / 4) ** 2) <= 1
    rgb = np.zeros((h, w, 3), np.uint8)
    rgb[..., 0] = 40 + 180 * subject
    rgb[..., 1] = 60 + 120 * subject
    rgb[..., 2] = 90
    return Image.fromarray(rgb)


def _bytes(img: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def build_corpus(root: Path) -> dict[str, str]:
    root.mkdir(parents=True, exist_ok=True)
    expect: dict[str, str] = {}

    def put(name: str, data: bytes, expectation: str) -> None:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        expect[name] = expectation

    photo = _photo()
    # Every mode and depth.
    put("modes/rgb.jpg", _bytes(photo, "JPEG", quality=90), "ok")
    put("modes/grey.png", _bytes(photo.convert("L"), "PNG"), "ok")
    put("modes/grey_alpha.png", _bytes(photo.convert("LA"), "PNG"), "ok")
    pal = photo.convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    put("modes/palette_transparent.png", _bytes(pal, "PNG", transparency=0), "ok")
    rgba = photo.convert("RGBA")
    rgba.putalpha(Image.linear_gradient("L").resize(photo.size))
    put("modes/rgba.png", _bytes(rgba, "PNG"), "ok")
    put("modes/cmyk.jpg", _bytes(photo.convert("CMYK"), "JPEG", quality=90), "ok")
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    put("modes/cmyk_icc.tif", _bytes(photo.convert("CMYK"), "TIFF", icc_profile=icc), "ok")
    grey16 = (np.asarray(photo.convert("L")).astype(np.uint16) * 257).astype(np.uint16)
    put("modes/grey16.png", _bytes(Image.fromarray(grey16), "PNG"), "ok")
    grey_f = np.asarray(photo.convert("L")).astype(np.float32) / 255
    put("modes/float.tif", _bytes(Image.fromarray(grey_f, mode="F"), "TIFF"), "ok")
    exif = Image.Exif()
    exif[0x0112] = 6
    put("modes/exif_rotated.jpg", _bytes(photo, "JPEG", exif=exif), "ok")
    put("modes/bitmap.bmp", _bytes(photo, "BMP"), "ok")
    frames = [photo, photo.transpose(Image.Transpose.FLIP_LEFT_RIGHT)]
    put(
        "animated/anim.gif", _bytes(frames[0], "GIF", save_all=True, append_images=frames[1:]), "ok"
    )
    put(
        "animated/anim.webp",
        _bytes(frames[0], "WEBP", save_all=True, append_images=frames[1:], lossless=True),
        "ok",
    )
    # Degenerate sizes.
    put("sizes/one_pixel.png", _bytes(Image.new("RGB", (1, 1), (200, 30, 30)), "PNG"), "ok")
    put("sizes/one_row.png", _bytes(_photo(37, 1), "PNG"), "ok")
    put("sizes/one_column.png", _bytes(_photo(1, 29), "PNG"), "ok")
    put("sizes/panorama.png", _bytes(_photo(20000, 50), "PNG"), "ok")
    # Names.
    put("names/with spaces.jpg", _bytes(photo, "JPEG"), "ok")
    put("names/ünïcödé 写真.png", _bytes(photo, "PNG"), "ok")
    put("names/" + "long_" * 45 + ".png", _bytes(photo, "PNG"), "ok")
    # Broken files.
    jpeg, png = _bytes(photo, "JPEG"), _bytes(photo, "PNG")
    put("broken/empty.jpg", b"", "empty")
    put("broken/truncated.jpg", jpeg[: len(jpeg) // 2], "truncated")
    put("broken/truncated.png", png[: len(png) // 2], "truncated")
    put("broken/text.jpg", b"this is a text file, not a photo\n", "not an image format")
    put("broken/random.png", os.urandom(2048), "not an image format")
    put(
        "broken/svg.png",
        b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>',
        "not an image format",
    )
    put("broken/bomb.png", _bomb_png(30000, 30000), "megapixels")
    return expect


def _bomb_png(w: int, h: int) -> bytes:
    """A small PNG whose header announces w x h pixels (a decompression bomb)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)  # 8-bit greyscale
    row = b"\x00" + b"\x00" * w
    body = zlib.compress(row * 64, 9)  # only the first rows: the file stays small
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")
    )
