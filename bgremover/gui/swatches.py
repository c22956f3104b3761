"""Small icons for colour and background choices, and the colours as the settings keep
them ("#rrggbb" or "#rrggbbaa")."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap, QRadialGradient

from ..errors import UsageError
from ..export.options import color_text

#: The data of the background box's items that open a dialog or are no colour.
CHOOSE_COLOUR = "choose"
BLUR = "blur"
IMAGE = "image"
CHOOSE_IMAGE = "choose-image"


def colour_swatch(colour: str, size: int = 16) -> QIcon:
    """A small square of ``colour``; a checkerboard for transparent ("")."""
    pixmap = QPixmap(size, size)
    pixmap.fill(QColor(245, 245, 245))
    painter = QPainter(pixmap)
    if colour:
        painter.fillRect(0, 0, size, size, qcolor(colour))
    else:
        half = size // 2
        painter.fillRect(0, 0, half, half, QColor(204, 204, 204))
        painter.fillRect(half, half, half, half, QColor(204, 204, 204))
    painter.setPen(QColor(128, 128, 128))
    painter.drawRect(0, 0, size - 1, size - 1)
    painter.end()
    return QIcon(pixmap)


def choice_icon(kind: str, size: int = 16) -> QIcon:
    """An icon of a swatch's size for the background choices that are no colour, so
    that every item's text lines up: ``CHOOSE_COLOUR`` (four colours), ``BLUR`` (a
    soft blot) or ``IMAGE`` (a small landscape)."""
    pixmap = QPixmap(size, size)
    pixmap.fill(QColor(245, 245, 245))
    painter = QPainter(pixmap)
    half = size // 2
    if kind == CHOOSE_COLOUR:
        for (x, y), rgb in zip(
            ((0, 0), (half, 0), (0, half), (half, half)),
            ((214, 69, 65), (240, 190, 50), (60, 150, 90), (60, 110, 200)),
            strict=True,
        ):
            painter.fillRect(x, y, size - half, size - half, QColor(*rgb))
    elif kind == BLUR:
        gradient = QRadialGradient(half, half, half)
        gradient.setColorAt(0.0, QColor(90, 120, 160))
        gradient.setColorAt(1.0, QColor(225, 230, 238))
        painter.fillRect(0, 0, size, size, gradient)
    else:
        painter.fillRect(0, 0, size, size, QColor(150, 195, 235))
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(80, 150, 80))
        painter.drawEllipse(-half // 2, half, size + half, size)
    painter.setPen(QColor(128, 128, 128))
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawRect(0, 0, size - 1, size - 1)
    painter.end()
    return QIcon(pixmap)


def qcolor(colour: str) -> QColor:
    """A settings colour ("#rrggbb" or "#rrggbbaa") as a QColor (Qt reads #aarrggbb)."""
    text = colour_or_white(colour)
    color = QColor(text[:7])
    if len(text) == 9:
        color.setAlpha(int(text[7:9], 16))
    return color


def colour_or_white(colour: str) -> str:
    try:
        return color_text(colour)
    except UsageError:
        return "#ffffff"


def colour_name(color: QColor) -> str:
    """A QColor as the settings keep colours."""
    rgb = color.name(QColor.NameFormat.HexRgb)
    return rgb if color.alpha() == 255 else f"{rgb}{color.alpha():02x}"
