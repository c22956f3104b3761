"""The comparison view: A | B | |Δα| side by side, locked zoom, and the numbers.

A and B are each a model and a precision, chosen above the panes: fp32 and int8 of the
current model by default, or any two (u2netp against IS-Net, say). Choosing a model not
downloaded yet asks first, with its size and licence.

The three panes share the space the tab has: side by side, or (for a wide photo, where
that leaves them mostly empty) the two masks side by side above the difference, or one
above the other, whichever shows the photo largest. Their views fit the photo, and keep
fitting it as the window is resized, until the user zooms. What the view shows before a
result (a message in the panes, dashes for the numbers) takes the same room as the
result, so nothing moves when it arrives.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QImage,
    QLinearGradient,
    QPainter,
    QPaintEvent,
    QResizeEvent,
    QStandardItemModel,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..compare.report import DEFAULT_HEAT_SCALE, HEAT_SCALES, heat_lut, heatmap, scale_label
from ..network.models import PRECISIONS, REGISTRY, ModelStore
from .imageconv import to_qimage
from .model_choice import (
    DEFAULT_SIDES,
    ModelBox,
    Side,
    confirm_download,
    model_tooltip,
    needs_download,
    relabel_models,
)
from .results import Compared
from .views import ElidedLabel, ImageView, ViewLock

#: The legend's titles; the colour bar starts after the wider one, so it never moves.
LEGEND_TITLES = ("|Δα|", "|Δraw|")


class HeatLegend(QWidget):
    """The heatmap's colour bar with its scale, 0 to the full scale."""

    BAR_HEIGHT = 12
    TICK = 3
    #: The shortest colour bar: the three labels below it never touch.
    MIN_BAR = 90

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = LEGEND_TITLES[0]
        self.full_scale = DEFAULT_HEAT_SCALE
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def _title_width(self) -> int:
        fm = self.fontMetrics()
        return max(fm.horizontalAdvance(t) for t in (*LEGEND_TITLES, self.title)) + 8

    def _label_width(self) -> int:
        fm = self.fontMetrics()
        return max(fm.horizontalAdvance(scale_label(s, s)) for s in HEAT_SCALES) + 4

    def sizeHint(self) -> QSize:
        return self.minimumSizeHint() + QSize(60, 0)

    def minimumSizeHint(self) -> QSize:
        height = self.BAR_HEIGHT + self.TICK + self.fontMetrics().height() + 2
        return QSize(self._title_width() + self._label_width() + self.MIN_BAR, height)

    def bar_rect(self) -> QRect:
        """Where the colour bar is drawn: right of the title, room for the labels below."""
        half = self._label_width() // 2
        left = self._title_width() + half
        return QRect(left, 0, max(1, self.width() - left - half), self.BAR_HEIGHT)

    def title_rect(self) -> QRect:
        return QRect(0, 0, self._title_width(), self.BAR_HEIGHT + self.TICK)

    def paintEvent(self, event: QPaintEvent) -> None:
        lut = heat_lut()
        painter = QPainter(self)
        bar = self.bar_rect()
        grad = QLinearGradient(bar.topLeft(), bar.topRight())
        for i in (*range(0, 256, 15), 255):
            r, g, b = (int(v) for v in lut[i])
            grad.setColorAt(i / 255, QColor(r, g, b))
        painter.fillRect(bar, grad)
        painter.setPen(self.palette().windowText().color())
        painter.drawText(self.title_rect(), Qt.AlignmentFlag.AlignVCenter, self.title)
        fm = painter.fontMetrics()
        for frac in (0.0, 0.5, 1.0):
            x = bar.left() + round(frac * (bar.width() - 1))
            painter.drawLine(x, bar.bottom(), x, bar.bottom() + self.TICK)
            label = scale_label(frac * self.full_scale, self.full_scale)
            width = fm.horizontalAdvance(label)
            painter.drawText(x - width // 2, bar.bottom() + self.TICK + fm.ascent() + 1, label)
        painter.end()


class ComparePane(QWidget):
    """A title above one of the locked views."""

    def __init__(self, title: str, view: ImageView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self.title = ElidedLabel(title)
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(view, 1)

    def chrome(self) -> QSize:
        """The room the pane takes beyond its view's viewport (title, frame)."""
        frame = 2 * self.view.frameWidth()
        return QSize(frame, self.title.sizeHint().height() + 2 + frame)


#: The arrangements of the three panes, as (columns, rows); the first wins a tie.
ARRANGEMENTS = ((3, 1), (2, 2), (1, 3))


class _Message(QLabel):
    """The message over the empty panes; it is re-centred whenever its text changes."""

    def setText(self, text: str) -> None:
        super().setText(text)
        area = self.parentWidget()
        if isinstance(area, PaneArea):
            area.place_message()


class PaneArea(QWidget):
    """Lays the panes out to show the photo largest, with a message over them when there
    is no result (the panes keep their place, so the result takes the message's room)."""

    SPACING = 6

    def __init__(self, panes: list[ComparePane], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.panes = panes
        for pane in panes:
            pane.setParent(self)
        #: (width, height) of the photo the arrangement is chosen for; None before any.
        self.image_size: tuple[int, int] | None = None
        self.columns = 3
        self.placeholder = _Message(self)
        self.placeholder.setWordWrap(True)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setFrameShape(QFrame.Shape.StyledPanel)
        self.placeholder.setAutoFillBackground(True)
        self.placeholder.setMargin(12)
        self.placeholder.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def sizeHint(self) -> QSize:
        return QSize(640, 360)

    def minimumSizeHint(self) -> QSize:
        return QSize(3 * 90 + 2 * self.SPACING, 160)

    def set_image_size(self, size: tuple[int, int] | None) -> None:
        if size is not None and size != self.image_size:
            self.image_size = size
            self._arrange()

    def cells(self, columns: int) -> list[QRect]:
        """The panes' rectangles with ``columns`` columns (two: the third centred below)."""
        rows = -(-len(self.panes) // columns)
        s = self.SPACING
        w = max(1, (self.width() - (columns - 1) * s) // columns)
        h = max(1, (self.height() - (rows - 1) * s) // rows)
        rects = []
        for i in range(len(self.panes)):
            row, col = divmod(i, columns)
            x = col * (w + s)
            if row == rows - 1:  # a short last row is centred
                in_row = len(self.panes) - row * columns
                x += (self.width() - (in_row * w + (in_row - 1) * s)) // 2
            rects.append(QRect(x, row * (h + s), w, h))
        return rects

    def scale(self, columns: int) -> float:
        """How large the photo shows, fitted, with ``columns`` columns."""
        if self.image_size is None:
            return 0.0
        iw, ih = self.image_size
        chrome = self.panes[0].chrome()
        cell = self.cells(columns)[0]
        return min(
            max(1, cell.width() - chrome.width()) / iw, max(1, cell.height() - chrome.height()) / ih
        )

    def best_columns(self) -> int:
        if self.image_size is None:
            return self.columns
        best, best_scale = 3, 0.0
        for columns, _rows in ARRANGEMENTS:
            scale = self.scale(columns)
            if scale > best_scale * 1.02:  # a clear gain, not a pixel's
                best, best_scale = columns, scale
        return best

    def _arrange(self) -> None:
        self.columns = self.best_columns()
        for pane, rect in zip(self.panes, self.cells(self.columns), strict=True):
            pane.setGeometry(rect)
        self.place_message()

    def place_message(self) -> None:
        width = min(self.width() - 24, 480)
        height = min(self.height() - 24, self.placeholder.heightForWidth(width))
        self.placeholder.setGeometry(
            (self.width() - width) // 2, (self.height() - height) // 2, width, height
        )
        self.placeholder.raise_()

    def show_panes(self, shown: bool) -> None:
        """The empty panes give way to the message (their places are kept for the
        result), so that it reads on its own, not over the panes' frames and titles."""
        for pane in self.panes:
            pane.setVisible(shown)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._arrange()


def offers_int8(model: str) -> bool:
    """Whether ``model`` has an int8 version (a model file of unknown family: tried)."""
    spec = REGISTRY.get(model)
    return spec is None or bool(spec.int8_recipes)


class SideChooser(QWidget):
    """One side of the comparison: a model (the current one, or any registry model,
    each with its size and whether it is cached) and a precision."""

    #: The user chose another model or precision (a download was agreed to).
    changed = Signal()

    def __init__(
        self, name: str, side: Side, store: ModelStore, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.name = name
        self._store = store
        self._current_model = ""
        self.model_box = ModelBox()
        # Narrow in the bar (both sides fit a 1024 px window); the list opens wide, inside
        # the window.
        self.model_box.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.model_box.setMinimumContentsLength(10)
        self.model_box.addItem("current model", None)
        for spec_name, spec in REGISTRY.items():
            self.model_box.addItem(spec_name, spec_name)
            self.model_box.setItemData(
                self.model_box.count() - 1, model_tooltip(spec), Qt.ItemDataRole.ToolTipRole
            )
        self.model_box.setToolTip(f"The model of side {name}")
        self.precision_box = QComboBox()
        for precision in PRECISIONS:
            self.precision_box.addItem(precision, precision)
        self.precision_box.setToolTip(f"The precision of side {name}")
        self.refresh_labels()
        self.set_side(side)
        self._shown = self.side()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        label = QLabel(f"{name}:")
        label.setBuddy(self.model_box)
        layout.addWidget(label)
        layout.addWidget(self.model_box, 1)
        layout.addWidget(self.precision_box)
        self.model_box.currentIndexChanged.connect(self._chosen)
        self.precision_box.currentIndexChanged.connect(self._chosen)

    def side(self) -> Side:
        return self.model_box.currentData(), self.precision_box.currentData()

    def model(self) -> str:
        """The model this side runs (the current model's name when it follows it)."""
        return self.model_box.currentData() or self._current_model

    def set_side(self, side: Side) -> None:
        """Show ``side`` (a model file gets an entry) without reporting a change."""
        model, precision = side
        if model is not None and self.model_box.findData(model) < 0:
            from pathlib import Path

            self.model_box.addItem(Path(model).name, model)
            self.model_box.setItemData(
                self.model_box.count() - 1, model, Qt.ItemDataRole.ToolTipRole
            )
        for box, value in ((self.model_box, model), (self.precision_box, precision)):
            box.blockSignals(True)
            box.setCurrentIndex(max(0, box.findData(value)))
            box.blockSignals(False)
        self._offer_precisions()
        self._shown = self.side()

    def set_current_model(self, model: str) -> None:
        """The settings' model: what "current model" means."""
        from pathlib import Path

        self._current_model = model
        shown = model if model in REGISTRY else Path(model).name
        self.model_box.setItemText(0, f"current model ({shown})")
        self._offer_precisions()

    def refresh_labels(self) -> None:
        relabel_models(self.model_box, self._store)

    def _offer_precisions(self) -> None:
        """int8 only for models that have it; such a side falls back to fp32."""
        int8 = offers_int8(self.model())
        model = self.precision_box.model()
        assert isinstance(model, QStandardItemModel)  # a combo box's own model
        item = model.item(self.precision_box.findData("int8"))
        item.setEnabled(int8)
        if not int8 and self.precision_box.currentData() == "int8":
            self.precision_box.blockSignals(True)
            self.precision_box.setCurrentIndex(self.precision_box.findData("fp32"))
            self.precision_box.blockSignals(False)

    def _chosen(self) -> None:
        spec = needs_download(self.model(), self._store)
        asked = spec is not None and self.model_box.currentData() != self._shown[0]
        if asked and spec is not None and not confirm_download(self, spec, self._store):
            self.set_side(self._shown)  # Cancel: the side it was
            return
        self._offer_precisions()
        if self.side() != self._shown:
            self._shown = self.side()
            self.changed.emit()


class ComparisonView(QWidget):
    """Three locked views (A's mask, B's mask, their difference), the sides' choosers
    and the fidelity numbers."""

    #: The user chose another side A or B: the comparison must be made again.
    sides_changed = Signal()

    def __init__(self, store: ModelStore | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        store = store or ModelStore()
        self.a_view = ImageView(checkerboard=False)
        self.b_view = ImageView(checkerboard=False)
        self.diff_view = ImageView(checkerboard=False)
        self.views = (self.a_view, self.b_view, self.diff_view)
        self.lock = ViewLock(*self.views)
        self.side_a = SideChooser("A", DEFAULT_SIDES[0], store)
        self.side_b = SideChooser("B", DEFAULT_SIDES[1], store)
        for chooser in (self.side_a, self.side_b):
            chooser.changed.connect(self.sides_changed)
        self.fit_button = QToolButton()
        self.fit_button.setText("Fit")
        self.fit_button.setToolTip("Fit the image to the panes (Ctrl+0)")
        self.fit_button.clicked.connect(self.fit)
        self.actual_button = QToolButton()
        self.actual_button.setText("100 %")
        self.actual_button.setToolTip("One image pixel per screen pixel (Ctrl+1)")
        self.actual_button.clicked.connect(self.actual_size)
        self.raw_toggle = QCheckBox("Raw model output")
        self.raw_toggle.setToolTip(
            "The values the model produced, before min–max normalisation. Normalisation "
            "stretches each output to 0..1, which can hide the range compression int8 causes."
        )
        self.raw_toggle.toggled.connect(self._refresh)
        self.scale_box = QComboBox()
        for scale in HEAT_SCALES:
            self.scale_box.addItem(f"full scale {scale:g}", scale)
        self.scale_box.setCurrentIndex(self.scale_box.findData(DEFAULT_HEAT_SCALE))
        self.scale_box.setToolTip(
            "The heatmap's full scale: differences at or above it show at full colour"
        )
        self.scale_box.currentIndexChanged.connect(self._rescale)
        self.legend = HeatLegend()
        self._heat_cache: dict[tuple[bool, float], QImage | None] = {}
        self.numbers: dict[str, QLabel] = {}
        self.result: Compared | None = None

        self.panes = [
            ComparePane("A mask", self.a_view),
            ComparePane("B mask", self.b_view),
            ComparePane("|Δα| = |A − B|", self.diff_view),
        ]
        self.titles = [pane.title for pane in self.panes]
        self.pane_area = PaneArea(self.panes)
        self.placeholder = self.pane_area.placeholder

        sides = QHBoxLayout()
        sides.addWidget(self.side_a, 1)
        sides.addSpacing(12)
        sides.addWidget(self.side_b, 1)

        # A tool bar: in a narrow window (1024 px) what does not fit is behind its ">>".
        tools = QToolBar()
        tools.setMovable(False)
        tools.setFloatable(False)
        tools.addWidget(self.fit_button)
        tools.addWidget(self.actual_button)
        tools.addSeparator()
        tools.addWidget(self.raw_toggle)
        stretch = QWidget()
        stretch.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        tools.addWidget(stretch)
        tools.addWidget(self.scale_box)
        tools.addWidget(self.legend)
        for button in (self.fit_button, self.actual_button):
            button.setAutoRaise(False)  # buttons, as on the Result tab

        form = QFormLayout()
        form.setVerticalSpacing(2)
        for key, text in (
            ("mean", "mean |Δα| (image)"),
            ("band", "mean |Δα| (edge band)"),
            ("max", "max |Δα|"),
            ("iou", "IoU at 0.5"),
            ("t32", "inference A"),
            ("t8", "inference B"),
            ("prov", "providers"),
            ("raw", "raw output range A | B"),
        ):
            value = ElidedLabel("–")  # in a narrow window a long one ends in "…"
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.numbers[key] = value
            form.addRow(text + ":", value)
        #: What B does to the photo, in words (a warning when int8 changes it materially).
        self.verdict = QLabel("")
        self.verdict.setWordWrap(True)
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # Room for two lines, result or not, so that the panes do not move when it comes.
        self.verdict.setMinimumHeight(2 * self.verdict.fontMetrics().lineSpacing())
        self.numbers_box = QWidget()
        self.numbers_box.setLayout(form)
        # One line per number, placeholder or not: its height never changes.
        self.numbers_box.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

        layout = QVBoxLayout(self)
        layout.addLayout(sides)
        layout.addWidget(tools)
        layout.addWidget(self.pane_area, 1)
        layout.addWidget(self.verdict)
        layout.addWidget(self.numbers_box)
        self.clear()

    # -- the sides -------------------------------------------------------------------
    def sides(self) -> tuple[Side, Side]:
        """What A and B are, as chosen: (model or None for the current one, precision)."""
        return self.side_a.side(), self.side_b.side()

    def set_sides(self, a: Side, b: Side) -> None:
        """Show these sides as chosen, without reporting a change."""
        self.side_a.set_side(a)
        self.side_b.set_side(b)

    def set_current_model(self, model: str) -> None:
        for chooser in (self.side_a, self.side_b):
            chooser.set_current_model(model)

    def refresh_model_labels(self) -> None:
        """A model was downloaded: the choosers say it is cached."""
        for chooser in (self.side_a, self.side_b):
            chooser.refresh_labels()

    # -- zoom of the locked views ---------------------------------------------------
    def fit(self) -> None:
        """Fit the image to the panes; it stays fitted as they change size."""
        for view in self.views:
            view.fit()

    def actual_size(self) -> None:
        self.a_view.actual_size()  # the lock gives the others the same zoom

    # -- content -------------------------------------------------------------------
    def clear(self, size: tuple[int, int] | None = None) -> None:
        """No result: the panes empty, a message over them, dashes for the numbers.

        ``size`` (width, height), when the photo's is known, arranges the panes for it
        now, so that its result arrives without moving them."""
        self.result = None
        self._heat_cache = {}
        for view in self.views:
            view.set_image(None)
        for label in self.numbers.values():
            label.setText("–")
        self.verdict.setText("")
        self.pane_area.set_image_size(size)
        if not self.placeholder.text():
            self.placeholder.setText(
                "Select an image and this view runs it through side A and side B (fp32 "
                "and int8 of the model unless you choose others above). The first "
                "comparison makes the int8 model, once; the status bar shows its progress "
                "and the time left."
            )
        self._refresh()
        self.placeholder.show()
        self.pane_area.show_panes(False)

    def set_result(self, result: Compared) -> None:
        if result is not self.result:
            self._heat_cache = {(False, DEFAULT_HEAT_SCALE): result.heat}
        self.result = result
        c, m = result.comparison, result.metrics
        self.numbers["mean"].setText(f"{m['mean_abs']:.4f}")
        self.numbers["band"].setText(
            f"{m['band_abs']:.4f}  (±{m['band_radius']} px around A's outline, "
            f"{100 * m['band_fraction']:.1f} % of the image)"
        )
        self.numbers["max"].setText(f"{m['max_abs']:.3f}")
        self.numbers["iou"].setText(f"{m['iou']:.4f}")
        # What int8 breaks is a warning, drawn as one; two models that disagree are said
        # in neutral words (neither is the reference), and agreement is a quiet note.
        warning = bool(m.get("warning", m["material"]))
        self.verdict.setText(("⚠ " if warning else "") + m["verdict"])
        self.verdict.setStyleSheet("color: #b00020; font-weight: bold;" if warning else "")
        ta, tb = m["infer_a_s"], m["infer_b_s"]
        self.numbers["t32"].setText(f"{1000 * ta:.0f} ms  ({c.label_a})")
        ratio = c.speed_ratio
        pace = f"{ratio:.2f}× the speed of A" if ratio >= 1 else f"{1 / ratio:.1f}× the time of A"
        self.numbers["t8"].setText(f"{1000 * tb:.0f} ms  ({c.label_b}: {pace})")
        self.numbers["prov"].setText(
            f"A: {', '.join(c.a.providers)}   B: {', '.join(c.b.providers)}"
        )
        ra, rb = m["raw_reference"], m["raw_other"]
        self.numbers["raw"].setText(
            f"[{ra['min']:.3g}, {ra['max']:.3g}] {ra['distinct_values']} levels  |  "
            f"[{rb['min']:.3g}, {rb['max']:.3g}] {rb['distinct_values']} levels"
        )
        self.placeholder.hide()
        self.pane_area.show_panes(True)
        self.pane_area.set_image_size(result.size)
        self._refresh()

    def _refresh(self) -> None:
        raw = self.raw_toggle.isChecked()
        r = self.result
        self.legend.title = LEGEND_TITLES[1] if raw else LEGEND_TITLES[0]
        what = "raw output" if raw else "mask"
        if r is None:
            self.titles[0].setText(f"A {what}")
            self.titles[1].setText(f"B {what}")
            self.titles[2].setText("|A − B| (raw)" if raw else "|Δα| = |A − B|")
            self.legend.update()
            return
        c = r.comparison
        self.titles[0].setText(f"A: {c.label_a} {what} · {1000 * c.metrics['infer_a_s']:.0f} ms")
        self.titles[1].setText(f"B: {c.label_b} {what} · {1000 * c.metrics['infer_b_s']:.0f} ms")
        if raw and c.raw_diff is None:
            (ha, wa), (hb, wb) = c.raw_a.shape, c.raw_b.shape
            self.titles[2].setText(f"no |A − B| of raw outputs {wa}×{ha} and {wb}×{hb}")
        else:
            self.titles[2].setText("|A − B| (raw)" if raw else "|Δα| = |A − B|")
        self.legend.update()
        self.a_view.set_image(r.a_raw if raw else r.a_mask, r.size)
        self.b_view.set_image(r.b_raw if raw else r.b_mask, r.size)
        self.diff_view.set_image(self._heat(raw), r.size)

    def _heat(self, raw: bool) -> QImage | None:
        """The heatmap shown; None for raw outputs of different sizes (no such difference)."""
        assert self.result is not None
        scale = float(self.scale_box.currentData())
        key = (raw, scale)
        if key not in self._heat_cache:
            c = self.result.comparison
            diff = c.raw_diff if raw else c.diff
            self._heat_cache[key] = None if diff is None else to_qimage(heatmap(diff, scale))
        return self._heat_cache[key]

    def _rescale(self) -> None:
        self.legend.full_scale = float(self.scale_box.currentData())
        self._refresh()
