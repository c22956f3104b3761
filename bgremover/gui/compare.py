"""The comparison view: fp32 | int8 | |Δα| side by side, locked zoom, and the numbers."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage, QLinearGradient, QPainter
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGridLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from ..report import DEFAULT_HEAT_SCALE, HEAT_LUT, heatmap
from .imageconv import to_qimage
from .views import ImageView, ViewLock
from .worker import Compared


class HeatLegend(QWidget):
    """The heatmap's colour bar with its scale, 0 to 1 (|Δα| in alpha units)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMinimumHeight(34)
        self.title = "|Δα|"
        self.full_scale = 1.0

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        bar = self.rect().adjusted(30, 2, -8, -18)
        grad = QLinearGradient(bar.topLeft(), bar.topRight())
        for i in range(0, 256, 15):
            r, g, b = (int(v) for v in HEAT_LUT[i])
            grad.setColorAt(i / 255, QColor(r, g, b))
        r, g, b = (int(v) for v in HEAT_LUT[255])
        grad.setColorAt(1.0, QColor(r, g, b))
        painter.fillRect(bar, grad)
        painter.setPen(self.palette().windowText().color())
        painter.drawText(2, bar.bottom(), self.title)
        for frac in (0.0, 0.5, 1.0):
            x = bar.left() + frac * bar.width()
            painter.drawLine(int(x), bar.bottom(), int(x), bar.bottom() + 3)
            label = f"{frac * self.full_scale:g}" + (
                "+" if frac == 1.0 and self.full_scale < 1 else ""
            )
            width = painter.fontMetrics().horizontalAdvance(label)
            painter.drawText(int(x - width / 2), bar.bottom() + 15, label)
        painter.end()


class ComparisonView(QWidget):
    """Three locked views (fp32 mask, int8 mask, difference) and the fidelity numbers."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.fp32_view = ImageView(checkerboard=False)
        self.int8_view = ImageView(checkerboard=False)
        self.diff_view = ImageView(checkerboard=False)
        self.lock = ViewLock(self.fp32_view, self.int8_view, self.diff_view)
        self.raw_toggle = QCheckBox("Show raw model output (before min–max normalisation)")
        self.raw_toggle.setToolTip(
            "Normalisation stretches each output to 0..1, which can hide the range "
            "compression int8 causes. The raw view shows the values the model produced."
        )
        self.raw_toggle.toggled.connect(self._refresh)
        self.scale_box = QComboBox()
        for value in (1.0, 0.5, 0.25, 0.1, 0.05):
            self.scale_box.addItem(f"heatmap full scale {value:g}", value)
        self.scale_box.setCurrentIndex(self.scale_box.findData(DEFAULT_HEAT_SCALE))
        self.scale_box.setToolTip("Differences at or above this value show at full colour")
        self.scale_box.currentIndexChanged.connect(self._rescale)
        self.legend = HeatLegend()
        self.legend.full_scale = DEFAULT_HEAT_SCALE
        self._heat_cache: dict[tuple[bool, float], QImage] = {}
        self.numbers: dict[str, QLabel] = {}
        self.result: Compared | None = None

        grid = QGridLayout()
        self.titles = []
        for col, (title, view) in enumerate(
            (
                ("fp32 mask", self.fp32_view),
                ("int8 mask", self.int8_view),
                ("|Δα| = |fp32 − int8|", self.diff_view),
            )
        ):
            label = QLabel(title)
            label.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.titles.append(label)
            grid.addWidget(label, 0, col)
            grid.addWidget(view, 1, col)
            grid.setColumnStretch(col, 1)
        grid.addWidget(self.scale_box, 2, 1, Qt.AlignmentFlag.AlignRight)
        grid.addWidget(self.legend, 2, 2)

        form = QFormLayout()
        for key, text in (
            ("mean", "mean |Δα| (image)"),
            ("band", "mean |Δα| (edge band)"),
            ("max", "max |Δα|"),
            ("iou", "IoU at 0.5"),
            ("t32", "inference fp32"),
            ("t8", "inference int8"),
            ("prov", "providers"),
            ("raw", "raw output range fp32 | int8"),
        ):
            value = QLabel("–")
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.numbers[key] = value
            form.addRow(text + ":", value)
        numbers = QWidget()
        numbers.setLayout(form)

        layout = QVBoxLayout(self)
        layout.addLayout(grid, 1)
        layout.addWidget(self.raw_toggle)
        layout.addWidget(numbers)
        self.placeholder = QLabel(
            "Select an image and this view runs it through the fp32 and int8 models. "
            "The first comparison makes the int8 model (about half a minute)."
        )
        self.placeholder.setWordWrap(True)
        layout.addWidget(self.placeholder)

    def clear(self) -> None:
        self.result = None
        self._heat_cache = {}
        for view in (self.fp32_view, self.int8_view, self.diff_view):
            view.set_image(None)
        for label in self.numbers.values():
            label.setText("–")
        self.placeholder.show()

    def set_result(self, result: Compared) -> None:
        if result is not self.result:
            self._heat_cache = {(False, DEFAULT_HEAT_SCALE): result.heat}
        self.result = result
        m = result.metrics
        self.numbers["mean"].setText(f"{m['mean_abs']:.4f}")
        self.numbers["band"].setText(
            f"{m['band_abs']:.4f}  (±{m['band_radius']} px around the fp32 outline, "
            f"{100 * m['band_fraction']:.1f} % of the image)"
        )
        self.numbers["max"].setText(f"{m['max_abs']:.3f}")
        self.numbers["iou"].setText(f"{m['iou']:.4f}")
        t32, t8 = m["infer_fp32_s"], m["infer_int8_s"]
        self.numbers["t32"].setText(f"{1000 * t32:.0f} ms")
        self.numbers["t8"].setText(f"{1000 * t8:.0f} ms  ({t32 / max(t8, 1e-9):.2f}× fp32 speed)")
        self.numbers["prov"].setText(
            f"fp32: {', '.join(result.comparison.fp32.providers)}   "
            f"int8: {', '.join(result.comparison.int8.providers)}"
        )
        ra, rb = m["raw_reference"], m["raw_other"]
        self.numbers["raw"].setText(
            f"[{ra['min']:.3g}, {ra['max']:.3g}] {ra['distinct_values']} levels  |  "
            f"[{rb['min']:.3g}, {rb['max']:.3g}] {rb['distinct_values']} levels"
        )
        self.placeholder.hide()
        self._refresh()

    def _refresh(self) -> None:
        r = self.result
        if r is None:
            return
        raw = self.raw_toggle.isChecked()
        self.legend.title = "|Δraw|" if raw else "|Δα|"
        self.titles[0].setText("fp32 raw output" if raw else "fp32 mask")
        self.titles[1].setText("int8 raw output" if raw else "int8 mask")
        self.titles[2].setText("|fp32 − int8| (raw)" if raw else "|Δα| = |fp32 − int8|")
        self.fp32_view.set_image(r.fp32_raw if raw else r.fp32_mask, r.size)
        self.int8_view.set_image(r.int8_raw if raw else r.int8_mask, r.size)
        self.diff_view.set_image(self._heat(raw), r.size)
        self.legend.update()

    def _heat(self, raw: bool) -> QImage:
        assert self.result is not None
        scale = float(self.scale_box.currentData())
        key = (raw, scale)
        if key not in self._heat_cache:
            c = self.result.comparison
            diff = c.raw_diff if raw else c.diff
            self._heat_cache[key] = to_qimage(heatmap(diff, scale))
        return self._heat_cache[key]

    def _rescale(self) -> None:
        self.legend.full_scale = float(self.scale_box.currentData())
        self._refresh()
