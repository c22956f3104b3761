"""The streaming PNG writer: standard files that Pillow and OpenCV read back exactly."""

from __future__ import annotations

import io
import zlib

import cv2
import numpy as np
import pytest
from PIL import Image

from bgremover.files.png import SIGNATURE, PngWriter


def encode(pixels: np.ndarray, strip: int) -> bytes:
    buffer = io.BytesIO()
    height, width = pixels.shape[:2]
    writer = PngWriter(buffer, width, height, 1 if pixels.ndim == 2 else pixels.shape[2])
    for y in range(0, height, strip):
        writer.write_rows(pixels[y : y + strip])
    writer.close()
    return buffer.getvalue()


@pytest.mark.parametrize(("channels", "mode"), [(1, "L"), (2, "LA"), (3, "RGB"), (4, "RGBA")])
@pytest.mark.parametrize("strip", [1, 7, 1000])
def test_round_trip_through_pillow(channels: int, mode: str, strip: int) -> None:
    rng = np.random.default_rng(channels * 100 + strip)
    shape = (53, 71) if channels == 1 else (53, 71, channels)
    pixels = rng.integers(0, 256, shape, dtype=np.uint8)
    data = encode(pixels, strip)
    assert data.startswith(SIGNATURE)
    with Image.open(io.BytesIO(data)) as img:
        assert img.format == "PNG" and img.mode == mode and img.size == (71, 53)
        np.testing.assert_array_equal(np.asarray(img), pixels)


def test_opencv_reads_it_and_smooth_images_compress() -> None:
    y, x = np.mgrid[0:300, 0:400]
    rgba = np.dstack([x % 256, y % 256, (x + y) % 256, np.full_like(x, 200)]).astype(np.uint8)
    data = encode(rgba, 64)
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    np.testing.assert_array_equal(cv2.cvtColor(decoded, cv2.COLOR_BGRA2RGBA), rgba)
    assert len(data) < rgba.nbytes / 20  # the Up filter turns gradients into constants


def test_chunks_have_valid_crcs() -> None:
    data = encode(np.zeros((600, 900, 4), np.uint8) + 7, 256)
    pos, kinds = len(SIGNATURE), []
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        crc = int.from_bytes(data[pos + 8 + length : pos + 12 + length], "big")
        assert crc == zlib.crc32(kind + body)
        kinds.append(kind)
        pos += 12 + length
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and b"IDAT" in kinds


def test_wrong_rows_are_refused() -> None:
    writer = PngWriter(io.BytesIO(), 10, 4, 3)
    with pytest.raises(ValueError, match="do not fit"):
        writer.write_rows(np.zeros((2, 10, 4), np.uint8))
    with pytest.raises(ValueError, match="uint8"):
        writer.write_rows(np.zeros((2, 10, 3), np.float32))
    writer.write_rows(np.zeros((3, 10, 3), np.uint8))
    with pytest.raises(ValueError, match="more rows"):
        writer.write_rows(np.zeros((2, 10, 3), np.uint8))
    with pytest.raises(ValueError, match="3 of its 4 rows"):
        writer.close()
    with pytest.raises(ValueError, match="channels"):
        PngWriter(io.BytesIO(), 10, 4, 5)
