"""numpy -> Qt images: the pixels are shared, kept alive, and shown in the screen's format."""

from __future__ import annotations

import gc

import numpy as np
import pytest

pytest.importorskip("PySide6")
from PySide6.QtGui import QColor, QImage

from bgremover.gui.imageconv import qimage_to_rgba, to_display, to_qimage


def test_a_qimage_keeps_its_pixels_after_the_array_is_gone() -> None:
    """The app shares arrays with QImages instead of copying (see imageconv.py); that is
    safe only while PySide6 keeps the array alive as long as the QImage."""
    image = to_qimage(np.full((300, 200, 3), (10, 20, 30), np.uint8))
    gc.collect()
    clutter = [np.full((300, 200, 3), 255, np.uint8) for _ in range(50)]  # reuse freed memory
    assert image.pixelColor(150, 100) == QColor(10, 20, 30) and len(clutter) == 50


def words(image: QImage) -> np.ndarray:
    data = np.frombuffer(image.constBits(), np.uint8, count=image.sizeInBytes())
    return data.reshape(image.height(), image.bytesPerLine())[:, : 4 * image.width()]


def test_display_images_are_in_the_screen_format_with_the_same_colours() -> None:
    rng = np.random.default_rng(1)
    rgba = rng.integers(0, 256, (37, 53, 4), dtype=np.uint8)
    rgba[0, 0] = (200, 100, 50, 0)  # fully transparent
    cut = to_display(rgba)
    assert cut.format() == QImage.Format.Format_ARGB32_Premultiplied
    expected = to_qimage(rgba).convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)
    # The premultiplied bytes agree with Qt's own conversion (within rounding).
    difference = np.abs(words(cut).astype(int) - words(expected).astype(int)).max()
    assert difference <= 1
    rgb = rgba[..., :3].copy()
    photo = to_display(rgb)
    assert photo.format() == QImage.Format.Format_RGB32
    assert (qimage_to_rgba(photo)[..., :3] == rgb).all()
    grey = to_display(rgba[..., 0].copy())
    assert grey.format() == QImage.Format.Format_Grayscale8
