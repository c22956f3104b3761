"""The comparison view: sides A and B of one photo, as cutouts, masks or masks over the
photo, side by side or in one wipe view, with their difference, a locked zoom, the
places where they differ most, and the numbers.

A and B are each a model and a precision, chosen above the panes: fp32 and int8 of the
current model by default, or any two (u2netp against IS-Net, say). Choosing a model not
downloaded yet asks first, with its size and licence.

What the view shows before a result (a message in the panes, dashes for the numbers)
takes the same room as the result, so nothing moves when it arrives.
"""

from __future__ import annotations

import cv2
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QImage
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..compare.report import DEFAULT_HEAT_SCALE, HEAT_SCALES, heatmap
from ..compare.spots import Spot, difference_spots
from ..network.store import ModelStore
from .compare_panes import (
    LEGEND_TITLES,
    ComparePane,
    HeatLegend,
    PaneArea,
    WipeView,
    mask_over_photo,
)
from .imageconv import to_display, to_qimage
from .model_choice import DEFAULT_SIDES, Side, SideChooser
from .results import Compared
from .settings import qsettings
from .views import ElidedLabel, ImageView, ViewLock

#: What each side can show: (key, the word in titles, the choice's text, its tooltip).
SHOWS = (
    ("cutout", "cutout", "Cutouts", "Each side's cutout on the checkerboard"),
    ("mask", "mask", "Masks", "Each side's mask: white kept, black dropped"),
    (
        "overlay",
        "mask over the photo",
        "Masks on the photo",
        "The photo, with what each side drops tinted",
    ),
)
SHOW_WORDS = {key: word for key, word, _text, _tip in SHOWS}
SPOT_BUTTON = "Biggest difference"
#: Where the view's choices are remembered (the app's settings file).
LAYOUT_KEY, SHOW_KEY, HEAT_KEY = "compare/layout", "compare/show", "compare/differences"
SPOT_TIP = (
    "Zoom to where A and B differ most along the edges (hair, fur, outlines); again for "
    "the next place (Ctrl+D)"
)


class ComparisonView(QWidget):
    """Sides A and B (cutouts, masks or masks over the photo) side by side or in one wipe
    view, their difference on request, the places they differ most, the sides' choosers
    and the fidelity numbers."""

    #: The user chose another side A or B: the comparison must be made again.
    sides_changed = Signal()

    def __init__(self, store: ModelStore | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        store = store or ModelStore()
        self.a_view = ImageView()
        self.b_view = ImageView()
        self.diff_view = ImageView(checkerboard=False)
        self.wipe_view = WipeView()
        self.views = (self.a_view, self.b_view, self.diff_view, self.wipe_view)
        for view in self.views:
            # Dragging pans: scroll bars would only take room from the image, and come
            # and go as it is zoomed (a Fit then fits the room they left).
            view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            view.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.lock = ViewLock(*self.views)
        self.side_a = SideChooser("A", DEFAULT_SIDES[0], store)
        self.side_b = SideChooser("B", DEFAULT_SIDES[1], store)
        for chooser in (self.side_a, self.side_b):
            chooser.changed.connect(self.sides_changed)
        self.side_by_side_button = _tool("Side by side", "A and B in panes of their own")
        self.wipe_button = _tool(
            "Wipe", "A and B on one image: drag the divider to see one or the other"
        )
        self.layout_group = QButtonGroup(self)
        for button in (self.side_by_side_button, self.wipe_button):
            button.setCheckable(True)
            self.layout_group.addButton(button)
        self.side_by_side_button.setChecked(True)
        self.layout_group.buttonToggled.connect(self._refresh)
        self.show_box = QComboBox()
        for key, _word, text, tip in SHOWS:
            self.show_box.addItem(text, key)
            self.show_box.setItemData(self.show_box.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        self.show_box.setToolTip("What each side shows")
        self.show_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.show_box.currentIndexChanged.connect(self._refresh)
        self.heat_button = _tool(
            "Differences",
            "|Δα| = |A − B| as a heatmap: a third pane side by side, over the image in the "
            "wipe view",
        )
        self.heat_button.setCheckable(True)
        self.heat_button.toggled.connect(self._refresh)
        self.spot_button = _tool(SPOT_BUTTON, SPOT_TIP)
        self.spot_button.setShortcut("Ctrl+D")
        self.spot_button.clicked.connect(self.next_difference)
        self.fit_button = _tool("Fit", "Fit the image to the panes (Ctrl+0)")
        self.fit_button.clicked.connect(self.fit)
        self.actual_button = _tool("100 %", "One image pixel per screen pixel (Ctrl+1)")
        self.actual_button.clicked.connect(self.actual_size)
        self.raw_toggle = QCheckBox("Raw model output")
        self.raw_toggle.setToolTip(
            "The values the model produced, before min–max normalisation. Normalisation "
            "stretches each output to 0..1, which can hide the range compression int8 causes."
        )
        self.raw_toggle.toggled.connect(self._refresh)
        self.scale_box = QComboBox()
        for scale in HEAT_SCALES:
            self.scale_box.addItem(f"{scale:g}", scale)
        self.scale_box.setCurrentIndex(self.scale_box.findData(DEFAULT_HEAT_SCALE))
        self.scale_box.setToolTip(
            "The heatmap's full scale: differences at or above it show at full colour"
        )
        self.scale_box.setAccessibleName("The heatmap's full scale")
        self.scale_box.currentIndexChanged.connect(self._rescale)
        self.legend = HeatLegend()
        #: Pictures made from the result on the GUI thread, kept while it shows: the
        #: heatmaps by (raw, scale[, "over"]), the masks over the photo.
        self._heat_cache: dict[tuple[bool, float, bool], QImage | None] = {}
        self._overlays: tuple[QImage, QImage] | None = None
        #: The places A and B differ most (found when first asked for) and the one shown.
        self._spots: list[Spot] | None = None
        self._spot = -1
        self.numbers: dict[str, QLabel] = {}
        self.result: Compared | None = None

        self.panes = [
            ComparePane("A", self.a_view),
            ComparePane("B", self.b_view),
            ComparePane("|Δα| = |A − B|", self.diff_view),
            ComparePane("A | B", self.wipe_view),
        ]
        self.titles = [pane.title for pane in self.panes]
        self.pane_area = PaneArea(self.panes)
        self.placeholder = self.pane_area.placeholder

        sides = QHBoxLayout()
        sides.addWidget(self.side_a, 1)
        sides.addSpacing(12)
        sides.addWidget(self.side_b, 1)

        # Two tool bars, how the sides show and where they differ, so that at 1024 px
        # each fits whole (what would not is behind a ">>").
        view_tools, difference_tools = _tool_bar(), _tool_bar()
        for widget in (self.side_by_side_button, self.wipe_button, self.show_box):
            view_tools.addWidget(widget)
        view_tools.addSeparator()
        view_tools.addWidget(self.fit_button)
        view_tools.addWidget(self.actual_button)
        view_tools.addWidget(_stretch())
        view_tools.addWidget(self.raw_toggle)
        difference_tools.addWidget(self.spot_button)
        difference_tools.addWidget(self.heat_button)
        difference_tools.addWidget(_stretch())
        #: The heatmap's scale and legend show while the heatmap does.
        self._heat_tools = (
            difference_tools.addWidget(self.scale_box),
            difference_tools.addWidget(self.legend),
        )

        # Two columns of numbers (what B changes | speed and outputs): the panes keep
        # the height four more lines would take.
        columns = (QFormLayout(), QFormLayout())
        for i, (key, text) in enumerate(
            (
                ("mean", "mean |Δα| (image)"),
                ("band", "mean |Δα| (edge band)"),
                ("max", "max |Δα|"),
                ("iou", "IoU at 0.5"),
                ("t32", "inference A"),
                ("t8", "inference B"),
                ("prov", "providers"),
                ("raw", "raw output range A | B"),
            )
        ):
            value = ElidedLabel("–")  # in a narrow window a long one ends in "…"
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            value.setMinimumWidth(40)
            self.numbers[key] = value
            columns[i // 4].setVerticalSpacing(2)
            columns[i // 4].addRow(text + ":", value)
        #: What B does to the photo, in words (a warning when int8 changes it materially).
        self.verdict = QLabel("")
        self.verdict.setWordWrap(True)
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # Room for two lines, result or not, so that the panes do not move when it comes.
        self.verdict.setMinimumHeight(2 * self.verdict.fontMetrics().lineSpacing())
        self.numbers_box = QWidget()
        row = QHBoxLayout(self.numbers_box)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(16)
        for column in columns:
            row.addLayout(column, 1)
        # One line per number, placeholder or not: its height never changes.
        self.numbers_box.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

        layout = QVBoxLayout(self)
        layout.addLayout(sides)
        # Its height with the legend, shown or not: the panes do not move when it comes.
        difference_tools.setMinimumHeight(difference_tools.sizeHint().height())
        layout.addWidget(view_tools)
        layout.addWidget(difference_tools)
        layout.addWidget(self.pane_area, 1)
        layout.addWidget(self.verdict)
        layout.addWidget(self.numbers_box)
        self._restore_choices()
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

    # -- what shows -----------------------------------------------------------------
    def shown_views(self) -> list[ImageView]:
        """The views laid out now (the others hidden)."""
        return [pane.view for pane in self.pane_area.shown]

    def fit(self) -> None:
        """Fit the image to the panes; it stays fitted as they change size."""
        for view in self.shown_views():
            view.fit()

    def actual_size(self) -> None:
        self.shown_views()[0].actual_size()  # the lock gives the others the same zoom

    def next_difference(self) -> None:
        """Zoom to the next place where A and B differ most along the edges (the first
        after the last), and say which of how many it is."""
        r = self.result
        if r is None:
            return
        c = r.comparison
        if self._spots is None:
            self._spots = difference_spots(c.diff, c.a.mask, c.b.mask)
        if not self._spots:
            self.spot_button.setText("No difference on the edges")
            return
        self._spot = (self._spot + 1) % len(self._spots)
        spot = self._spots[self._spot]
        x0, y0, x1, y1 = spot.box
        margin = 0.15 * max(x1 - x0, y1 - y0)  # a little of what is around it
        region = QRectF(x0, y0, x1 - x0, y1 - y0).adjusted(-margin, -margin, margin, margin)
        self.shown_views()[0].show_region(region)  # the lock takes the others there
        if self.wipe_button.isChecked():  # A and B meet in the middle of the place
            self.wipe_view.set_fraction((x0 + x1) / 2 / r.size[0])
        # The button says where the user is, and that pressing again goes on.
        self.spot_button.setText(f"Next difference ({self._spot + 1} of {len(self._spots)})")
        self.spot_button.setToolTip(
            f"{SPOT_TIP}\n\nShown: difference {self._spot + 1} of {len(self._spots)}, mean "
            f"|Δα| {spot.mean_abs:.2f} on the edges there"
        )

    # -- the user's choices of what shows, remembered between runs ----------------------
    def _restore_choices(self) -> None:
        settings = qsettings()  # all read first: each choice set writes them all
        wipe = settings.value(LAYOUT_KEY, "side") == "wipe"
        show = self.show_box.findData(settings.value(SHOW_KEY, "cutout"))
        heat = bool(settings.value(HEAT_KEY, False, type=bool))
        self.wipe_button.setChecked(wipe)
        self.show_box.setCurrentIndex(max(0, show))
        self.heat_button.setChecked(heat)

    def _remember_choices(self) -> None:
        settings = qsettings()
        settings.setValue(LAYOUT_KEY, "wipe" if self.wipe_button.isChecked() else "side")
        settings.setValue(SHOW_KEY, self.show_box.currentData())
        settings.setValue(HEAT_KEY, self.heat_button.isChecked())

    # -- content -------------------------------------------------------------------
    def clear(self, size: tuple[int, int] | None = None) -> None:
        """No result: the panes empty, a message over them, dashes for the numbers.

        ``size`` (width, height), when the photo's is known, arranges the panes for it
        now, so that its result arrives without moving them."""
        self.result = None
        self._forget_pictures()
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
                "comparison in int8 makes the model's int8 version, once: about 2 minutes "
                "for u2netp on 2 cores, 10 for IS-Net. The status bar shows how far it is "
                "and the time left."
            )
        self._refresh()
        self.placeholder.show()
        self.pane_area.show_panes(False)

    def _forget_pictures(self) -> None:
        self._heat_cache, self._overlays = {}, None
        self._spots, self._spot = None, -1
        self.spot_button.setText(SPOT_BUTTON)
        self.spot_button.setToolTip(SPOT_TIP)

    def set_result(self, result: Compared) -> None:
        if result is not self.result:
            self._forget_pictures()
            self._heat_cache[(False, DEFAULT_HEAT_SCALE, False)] = result.heat
        self.result = result
        c, m = result.comparison, result.metrics
        self.numbers["mean"].setText(f"{m['mean_abs']:.4f}")
        # The number alone, whole in a narrow window; where the band is, in its tooltip.
        band = self.numbers["band"]
        band.setText(f"{m['band_abs']:.4f}")
        band.setToolTip(
            f"±{m['band_radius']} px around A's outline, {100 * m['band_fraction']:.1f} % "
            "of the image"
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
        self._remember_choices()
        # The view the user is looking at, before another layout may lay it aside.
        lead = next((v for v in self.views if v.isVisible() and v.has_image()), None)
        raw, heat = self.raw_toggle.isChecked(), self.heat_button.isChecked()
        wipe = self.wipe_button.isChecked()
        show = self.show_box.currentData()
        self.show_box.setEnabled(not raw)  # the raw outputs are masks
        for action in self._heat_tools:
            action.setVisible(heat)
        a_pane, b_pane, diff_pane, wipe_pane = self.panes
        self.pane_area.set_shown(
            [wipe_pane] if wipe else [a_pane, b_pane, diff_pane] if heat else [a_pane, b_pane]
        )
        for view in (self.a_view, self.b_view, self.wipe_view):
            view.set_checkerboard(show == "cutout" and not raw)
        r = self.result
        self.legend.title = LEGEND_TITLES[1] if raw else LEGEND_TITLES[0]
        what = "raw output" if raw else SHOW_WORDS[show]
        diff_title = "|A − B| (raw)" if raw else "|Δα| = |A − B|"
        if r is None:
            self.titles[0].setText(f"A {what}")
            self.titles[1].setText(f"B {what}")
            self.titles[2].setText(diff_title)
            self.titles[3].setText(f"◂ A {what} | B {what} ▸")
            self.legend.update()
            return
        c = r.comparison
        a_title = f"A: {c.label_a} {what} · {1000 * c.metrics['infer_a_s']:.0f} ms"
        b_title = f"B: {c.label_b} {what} · {1000 * c.metrics['infer_b_s']:.0f} ms"
        self.titles[0].setText(a_title)
        self.titles[1].setText(b_title)
        if raw and c.raw_diff is None:
            (ha, wa), (hb, wb) = c.raw_a.shape, c.raw_b.shape
            self.titles[2].setText(f"no |A − B| of raw outputs {wa}×{ha} and {wb}×{hb}")
        else:
            self.titles[2].setText(diff_title)
        self.titles[3].setText(f"◂ {a_title}  |  {b_title} ▸")
        self.legend.update()
        self._draw(raw, show, heat, lead)

    def _draw(self, raw: bool, show: str, heat: bool, lead: ImageView | None) -> None:
        """The pictures into the views shown, at the place and zoom the user was looking
        at; the views laid aside let go of theirs (a 12-megapixel picture is 48 MB)."""
        r = self.result
        assert r is not None
        shown = self.shown_views()
        a, b = self._pictures(raw, show)
        pictures: dict[ImageView, QImage | None] = {self.a_view: a, self.b_view: b}
        if self.diff_view in shown:
            pictures[self.diff_view] = self._heat(raw)
        with self.lock.held():  # a view fitting its new picture does not move the lead
            for view, picture in pictures.items():
                if view in shown:
                    view.set_image(picture, r.size)
            if self.wipe_view in shown:
                self.wipe_view.set_pair(a, b, r.size)
                self.wipe_view.set_overlay(self._heat(raw, over=True) if heat else None)
            for view in shown:
                if lead is not None and lead not in shown and lead.sceneRect() == view.sceneRect():
                    view.follow(lead)
        for view in self.views:
            if view not in shown:
                view.set_image(None)

    def _pictures(self, raw: bool, show: str) -> tuple[QImage, QImage]:
        """What sides A and B show."""
        r = self.result
        assert r is not None
        if raw:
            return r.a_raw, r.b_raw
        if show == "cutout":
            return r.a_cut, r.b_cut
        if show == "mask":
            return r.a_mask, r.b_mask
        if self._overlays is None:  # made when first asked for: most never are
            photo = to_display(r.comparison.a.image.rgb)
            self._overlays = (
                mask_over_photo(photo, r.a_mask),
                mask_over_photo(photo, r.b_mask),
            )
        return self._overlays

    def _heat(self, raw: bool, over: bool = False) -> QImage | None:
        """The heatmap shown; None for raw outputs of different sizes (no such difference).
        ``over``: to lay over the image, transparent where A and B agree."""
        assert self.result is not None
        scale = float(self.scale_box.currentData())
        key = (raw, scale, over)
        if key not in self._heat_cache:
            c = self.result.comparison
            diff = c.raw_diff if raw else c.diff
            if diff is None:
                image = None
            elif not over:
                image = to_qimage(heatmap(diff, scale))
            else:
                heat = self._heat(raw)
                assert heat is not None
                # Opaque from the full scale up, as the heatmap's colours are.
                opacity = cv2.convertScaleAbs(diff, alpha=1 / scale)
                image = heat.convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)
                image.setAlphaChannel(to_qimage(opacity))
            self._heat_cache[key] = image
        return self._heat_cache[key]

    def _rescale(self) -> None:
        self.legend.full_scale = float(self.scale_box.currentData())
        self._refresh()


def _tool(text: str, tip: str) -> QToolButton:
    """A tool bar button that looks like one (as on the Result tab)."""
    button = QToolButton()
    button.setText(text)
    button.setToolTip(tip)
    button.setAutoRaise(False)
    return button


def _tool_bar() -> QToolBar:
    bar = QToolBar()
    bar.setMovable(False)
    bar.setFloatable(False)
    return bar


def _stretch() -> QWidget:
    """Room that pushes what comes after it to the tool bar's end."""
    stretch = QWidget()
    stretch.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
    return stretch
