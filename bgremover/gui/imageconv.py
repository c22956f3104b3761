"""numpy <-> Qt image conversion.

QImage (unlike QPixmap) may be built on the worker thread, so the conversions
happen there and the GUI thread only shows the results. A QImage made here
shares the array's pixels instead of copying them: PySide6 keeps the array alive
for as long as the QImage lives (tests/test_imageconv.py holds it to that), and
copying a 12-megapixel image inside Qt holds Python's lock for 30 ms or more,
which the GUI thread would feel. The arrays are never written to afterwards.

Qt code that keeps an image of its own beyond the Python object (the clipboard, a
QMimeData) must get ``image.copy()``, which owns its pixels. QPixmap.fromImage
copies the pixels itself.
"""

from __future__ import annotations

import sys

import cv2
import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage

_FORMATS = {
    1: QImage.Format.Format_Grayscale8,
    3: QImage.Format.Format_RGB888,
    4: QImage.Format.Format_RGBA8888,
}


def _wrap(array: np.ndarray, fmt: QImage.Format) -> QImage:
    a = np.ascontiguousarray(array)
    h, w = a.shape[:2]
    return QImage(a.data, w, h, a.strides[0], fmt)


def to_qimage(array: np.ndarray) -> QImage:
    """uint8 (H, W) grey, (H, W, 3) RGB or (H, W, 4) RGBA -> a QImage over its pixels."""
    channels = 1 if array.ndim == 2 else array.shape[2]
    return _wrap(array, _FORMATS[channels])


def to_display(array: np.ndarray) -> QImage:
    """Like :func:`to_qimage`, in the format the screen's pixmaps use.

    Showing an image converts it to the screen's format (32-bit RGB, or premultiplied
    ARGB with transparency): for a 12-megapixel cutout tens of milliseconds, on the GUI
    thread. Done here with OpenCV (which lets other threads run meanwhile), the GUI
    thread's pixmap is a plain copy. Grey images are shown as they are.
    """
    if array.ndim == 2 or sys.byteorder != "little":
        # Qt's 32-bit formats are words; the byte orders below hold on little-endian CPUs.
        image = to_qimage(array)
        if array.ndim == 2:
            return image
        return image.convertToFormat(
            QImage.Format.Format_RGB32
            if array.shape[2] == 3
            else QImage.Format.Format_ARGB32_Premultiplied
        )
    if array.shape[2] == 3:  # RGB32 is 0xffRRGGBB: bytes B, G, R, 255
        return _wrap(cv2.cvtColor(array, cv2.COLOR_RGB2BGRA), QImage.Format.Format_RGB32)
    bgra = cv2.cvtColor(array, cv2.COLOR_RGBA2BGRA)
    cv2.cvtColor(bgra, cv2.COLOR_RGBA2mRGBA, dst=bgra)  # premultiply the three colours
    return _wrap(bgra, QImage.Format.Format_ARGB32_Premultiplied)


def qimage_to_rgba(image: QImage) -> np.ndarray:
    """A QImage (e.g. from the clipboard) -> RGBA uint8 array."""
    img = image.convertToFormat(QImage.Format.Format_RGBA8888)
    w, h = img.width(), img.height()
    buf = np.frombuffer(img.constBits(), dtype=np.uint8, count=img.sizeInBytes())
    rgba: np.ndarray = buf.reshape(h, img.bytesPerLine())[:, : 4 * w].reshape(h, w, 4).copy()
    return rgba


def thumbnail(rgb: np.ndarray, alpha: np.ndarray | None, side: int = 64) -> QImage:
    """A small preview of a cutout (or of the original when ``alpha`` is None)."""
    h, w = rgb.shape[:2]
    step = max(1, max(h, w) // (side * 2))
    small = rgb[::step, ::step]
    if alpha is not None:
        small = np.dstack([small, alpha[::step, ::step]])
    return to_qimage(small).scaled(
        side, side, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation
    )


def to_indexed(array: np.ndarray, colors: list[int]) -> QImage:
    """uint8 (H, W) -> an 8-bit indexed QImage over its pixels, each value shown as
    ``colors[value]`` (ARGB, as ``QColor.rgba()`` gives): e.g. a mask as a tinted overlay."""
    image = _wrap(array, QImage.Format.Format_Indexed8)
    image.setColorTable(colors)
    return image
