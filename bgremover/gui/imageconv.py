"""numpy <-> Qt image conversion.

QImage (unlike QPixmap) may be built on the worker thread, so the heavy
conversions happen there and the GUI thread only shows the results.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage


def to_qimage(array: np.ndarray) -> QImage:
    """uint8 (H, W) grey, (H, W, 3) RGB or (H, W, 4) RGBA -> an independent QImage."""
    a = np.ascontiguousarray(array)
    h, w = a.shape[:2]
    if a.ndim == 2:
        fmt, stride = QImage.Format.Format_Grayscale8, w
    elif a.shape[2] == 3:
        fmt, stride = QImage.Format.Format_RGB888, 3 * w
    else:
        fmt, stride = QImage.Format.Format_RGBA8888, 4 * w
    # .copy() detaches the QImage from the numpy buffer, which may be freed.
    return QImage(a.data, w, h, stride, fmt).copy()


def to_display(array: np.ndarray) -> QImage:
    """Like :func:`to_qimage`, in the format the screen's pixmaps use.

    Showing an image converts it to the screen's format (32-bit RGB, or premultiplied
    ARGB with transparency): for a 12-megapixel cutout that is tens of milliseconds.
    Done here, on the worker thread, the GUI thread's pixmap is only a copy.
    """
    image = to_qimage(array)
    if array.ndim == 2:
        return image
    target = (
        QImage.Format.Format_RGB32
        if array.shape[2] == 3
        else QImage.Format.Format_ARGB32_Premultiplied
    )
    return image.convertToFormat(target)


def qimage_to_rgba(image: QImage) -> np.ndarray:
    """A QImage (e.g. from the clipboard) -> RGBA uint8 array."""
    img = image.convertToFormat(QImage.Format.Format_RGBA8888)
    w, h = img.width(), img.height()
    buf = np.frombuffer(img.constBits(), dtype=np.uint8, count=img.sizeInBytes())
    return buf.reshape(h, img.bytesPerLine())[:, : 4 * w].reshape(h, w, 4).copy()


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
