"""The Export panel: what the saved file looks like (preset, background, framing,
effects) and how it is encoded, with one signal saying which settings changed.

One module because the panel's rows share one change signal and one set of fields; the
rows are made from the option records, its questions and swatches have modules of their own.

Its fields are the :class:`~bgremover.gui.settings.Settings` export fields, spelled as
presets and the command line spell them, so a preset chosen here, one saved from here
and the command line's flags are read by the same code. Labels, tooltips and ranges are
the option records' (:mod:`bgremover.export.options`); each on/off option whose record asks for
a check box of this panel gets one, in the row its record names (one of
:data:`~bgremover.export.options.ROWS`: a record naming none is refused when it is made),
greyed out for the formats it does not act on.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import (
    QDragEnterEvent,
    QDropEvent,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QColorDialog,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QToolButton,
    QWidget,
)

from ..errors import UsageError
from ..export.compose import Enlarged
from ..export.options import BLUR as BLUR_STRENGTH
from ..export.options import (
    DEFAULT_QUALITY,
    EXPORT_OPTIONS,
    OPTIONS,
    OUTLINE_WIDTH,
    QUALITY,
    ROWS,
    SIDE,
    ExportOption,
    parse_blur,
    parse_canvas,
    parse_length,
    parse_outline,
)
from ..export.output import FORMATS
from ..export.presets import (
    Preset,
    builtin_presets,
    load_presets,
    options_from,
    remove_preset,
    save_preset,
    values_of,
)
from ..files.imaging import IMAGE_EXTENSIONS, is_image_name
from .questions import PresetNameDialog, ask_yes, warn
from .settings import Settings, background_problem, export_fields
from .swatches import (
    BLUR,
    CHOOSE_COLOUR,
    CHOOSE_IMAGE,
    IMAGE,
    choice_icon,
    colour_name,
    colour_or_white,
    colour_swatch,
    qcolor,
)

#: The background choices offered at once ("" is transparent); any other colour
#: through "Other colour…".
BACKGROUNDS = {"": "Transparent", "#ffffff": "White", "#000000": "Black"}
#: The canvas choices: keep the photo's frame, an aspect ratio, or a size of one's own.
CANVASES = {"": "Keep", "1:1": "1:1 square", "4:5": "4:5 portrait", "3:2": "3:2", "16:9": "16:9"}
CANVAS_SIZE = "size"
FIT_LABELS = {
    "fill": "Fill (cut to cover)",
    "fit": "Fit (whole image, bars)",
    "stretch": "Stretch",
}
POSITION_LABELS = {"center": "Centre", "bottom": "Bottom (standing)"}
#: The preset box's item when the options are no preset's.
CUSTOM = ""


def select_data(box: QComboBox, value: object) -> None:
    """Select the item whose data is ``value`` (the first item when there is none)."""
    box.setCurrentIndex(max(box.findData(value), 0))


def dropped_image(event: QDragEnterEvent | QDropEvent) -> Path | None:
    """The one local image file being dragged, if that is what it is."""
    urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
    if len(urls) != 1 or not urls[0].isLocalFile():
        return None
    path = Path(urls[0].toLocalFile())
    return path if path.is_file() and is_image_name(path) else None


def matching_preset(settings: Settings, presets: dict[str, Preset]) -> str:
    """The preset whose options the settings have (the one chosen last first); "" none."""
    try:
        mine = options_from(settings.values())[0]
    except UsageError:
        return CUSTOM
    names = sorted(presets, key=lambda n: n != settings.preset)
    for name in names:
        options, fmt = options_from(presets[name].values)
        if options == mine and (fmt or settings.output_format) == settings.output_format:
            return name
    return CUSTOM


class ExportPanel(QGroupBox):
    """Preset, background, crop and canvas, effects, format: what Save writes.

    ``changed`` carries a dict of the settings the user changed (field -> new value);
    the panel never applies or saves them itself. The window shows it the settings it
    applied with :meth:`show_settings`. An image file dropped on the panel becomes the
    background.
    """

    changed = Signal(dict)

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__("Export", parent)
        self.setAcceptDrops(True)
        self._settings = settings
        self.presets: dict[str, Preset] = {}
        self.preset_problem = ""

        self.preset_box = QComboBox()
        self.preset_box.setToolTip(
            "Ready-made export settings (yours too). Choosing one sets every option below."
        )
        self.preset_box.activated.connect(self._preset_chosen)
        self.save_preset_button = QPushButton("Save as Preset…")
        self.save_preset_button.setToolTip("Keep the options below under a name of your own")
        self.save_preset_button.clicked.connect(lambda: self.save_as_preset())
        self.remove_preset_button = QPushButton("Remove")
        self.remove_preset_button.setToolTip(
            "Delete the preset of yours chosen above (a built-in of its name comes back)"
        )
        self.remove_preset_button.clicked.connect(lambda: self.remove_chosen_preset())

        self.background_box = QComboBox()
        self.background_box.setToolTip(OPTIONS["background"].tip)
        for colour, label in BACKGROUNDS.items():
            self.background_box.addItem(colour_swatch(colour), label, colour)
        self.background_box.addItem(choice_icon(CHOOSE_COLOUR), "Other colour…", CHOOSE_COLOUR)
        self.background_box.addItem(choice_icon(BLUR), "Blur of the photo", BLUR)
        self.background_box.addItem(choice_icon(IMAGE), "Image…", CHOOSE_IMAGE)
        self.background_box.activated.connect(self._background_chosen)
        self.blur_spin = QDoubleSpinBox()
        self.blur_spin.setRange(0.1, float(BLUR_STRENGTH.high or 20))
        self.blur_spin.setSingleStep(0.5)
        self.blur_spin.setDecimals(1)
        self.blur_spin.setToolTip("How strongly the photo's own background is blurred (1: a bit)")
        self.blur_spin.valueChanged.connect(lambda v: self._emit(background=f"blur:{v:g}"))
        self.fit_box = QComboBox()
        for fit, label in FIT_LABELS.items():
            self.fit_box.addItem(label, fit)
        self.fit_box.setToolTip(OPTIONS["background_fit"].tip)
        self.fit_box.currentIndexChanged.connect(
            lambda: self._emit(background_fit=self.fit_box.currentData())
        )

        #: A check box per on/off option of this panel (its record's label and tip).
        self.switch_boxes = {
            o.key: self._switch_box(o)
            for o in EXPORT_OPTIONS
            if o.widget == "check" and o.pane == "export"
        }
        self.shadow_box = self.switch_boxes["shadow"]
        self.margin_spin = QDoubleSpinBox()
        self.margin_spin.setRange(0, 5000)
        self.margin_spin.setDecimals(1)
        self.margin_spin.setToolTip(OPTIONS["margin"].tip)
        self.margin_unit = QComboBox()
        self.margin_unit.addItem("px", "px")
        self.margin_unit.addItem("%", "%")
        self.margin_unit.setToolTip("Pixels, or percent of the subject's size (of the canvas's)")
        self.margin_spin.valueChanged.connect(lambda: self._emit(margin=self._margin_text()))
        self.margin_unit.currentIndexChanged.connect(lambda: self._emit(margin=self._margin_text()))

        self.canvas_box = QComboBox()
        for canvas, label in CANVASES.items():
            self.canvas_box.addItem(label, canvas)
        self.canvas_box.addItem("Size…", CANVAS_SIZE)
        self.canvas_box.setToolTip(OPTIONS["canvas"].tip)
        self.canvas_box.activated.connect(self._canvas_chosen)
        self.canvas_w = QSpinBox()
        self.canvas_h = QSpinBox()
        for spin, what in ((self.canvas_w, "width"), (self.canvas_h, "height")):
            spin.setRange(16, int(SIDE.high or 30000))
            spin.setValue(2000)
            spin.setSuffix(" px")
            spin.setToolTip(f"The canvas's {what} in pixels")
            spin.editingFinished.connect(self._canvas_size_changed)
        self.position_box = QComboBox()
        for position, label in POSITION_LABELS.items():
            self.position_box.addItem(label, position)
        self.position_box.setToolTip(OPTIONS["position"].tip)
        self.position_box.currentIndexChanged.connect(
            lambda: self._emit(position=self.position_box.currentData())
        )
        self.max_size_spin = QSpinBox()
        self.max_size_spin.setRange(0, int(SIDE.high or 30000))  # 0: as it comes
        self.max_size_spin.setSingleStep(100)
        self.max_size_spin.setSuffix(" px")
        self.max_size_spin.setSpecialValueText("as it comes")
        self.max_size_spin.setToolTip(OPTIONS["max_size"].tip)
        self.max_size_spin.editingFinished.connect(
            lambda: self._emit(max_size=self.max_size_spin.value())
        )

        self.outline_box = QCheckBox(OPTIONS["outline"].label)
        self.outline_box.setToolTip(OPTIONS["outline"].tip)
        self.outline_box.toggled.connect(lambda: self._emit(outline=self._outline_text()))
        self.outline_width = QSpinBox()
        self.outline_width.setRange(1, int(OUTLINE_WIDTH.high or 500))
        self.outline_width.setValue(8)
        self.outline_width.setSuffix(" px")
        self.outline_width.setToolTip("How wide the outline is, in pixels of the picture")
        self.outline_width.valueChanged.connect(lambda: self._emit(outline=self._outline_text()))
        self.outline_colour = "#ffffff"
        self.outline_button = QToolButton()
        self.outline_button.setToolTip("The outline's colour")
        self.outline_button.clicked.connect(self._choose_outline_colour)

        self.format_box = QComboBox()
        for fmt in FORMATS.values():
            self.format_box.addItem(fmt.label, fmt.name)
        self.format_box.setToolTip(OPTIONS["format"].tip)
        self.format_box.currentIndexChanged.connect(
            lambda: self._emit(output_format=self.format_box.currentData())
        )
        self.quality_spin = QSpinBox()
        self.quality_spin.setRange(0, int(QUALITY.high or 100))  # 0: the format's own
        self.quality_spin.setSpecialValueText("default")
        # Wide enough for "92 (default)", the format's own quality.
        metrics = self.quality_spin.fontMetrics()
        self.quality_spin.setMinimumWidth(metrics.horizontalAdvance("100 (default)") + 36)
        self.quality_spin.setToolTip(OPTIONS["quality"].tip)
        self.quality_spin.editingFinished.connect(
            lambda: self._emit(quality=self.quality_spin.value())
        )

        self.problem_label = QLabel("")
        self.problem_label.setWordWrap(True)
        self.problem_label.setStyleSheet("color: #b00020;")
        self.problem_label.setVisible(False)
        # A note, not a problem: the file can be saved, but it will look soft.
        self.enlarged_label = QLabel("")
        self.enlarged_label.setWordWrap(True)
        self.enlarged_label.setStyleSheet("color: #8a5a00;")
        self.enlarged_label.setVisible(False)

        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.form = form
        form.addRow("Preset:", self.preset_box)
        form.addRow("", _row(self.save_preset_button, self.remove_preset_button))
        form.addRow(OPTIONS["background"].label, self.background_box)
        form.addRow("Blur strength:", self.blur_spin)
        form.addRow(OPTIONS["background_fit"].label, self.fit_box)
        framing, effects, quality, file = (self._switches_in(row) for row in ROWS)
        form.addRow("", _one_or_row(*framing))
        form.addRow(OPTIONS["margin"].label, _row(self.margin_spin, self.margin_unit))
        form.addRow(OPTIONS["canvas"].label, self.canvas_box)
        size_row = _row(self.canvas_w, QLabel("×"), self.canvas_h)
        self._size_row = size_row
        form.addRow("Size:", size_row)
        form.addRow(OPTIONS["position"].label, self.position_box)
        form.addRow(self.enlarged_label)  # by the canvas rows: in view when they are
        form.addRow(OPTIONS["max_size"].label, self.max_size_spin)
        # The records' effects get a row of their own, so the panel stays narrow enough
        # for a 1024 px screen (test_gui_views).
        form.addRow("Effects:", _row(self.shadow_box, self.outline_box))
        effects.remove(self.shadow_box)
        if effects:
            form.addRow("", _one_or_row(*effects))
        self._outline_row = _row(self.outline_width, self.outline_button)
        form.addRow("Outline style:", self._outline_row)
        form.addRow(OPTIONS["format"].label, self.format_box)
        form.addRow(OPTIONS["quality"].label, _row(self.quality_spin, *quality))
        form.addRow("", _one_or_row(*file))
        form.addRow(self.problem_label)

        self.reload_presets()
        self.show_settings(settings)

    def _switch_box(self, option: ExportOption) -> QCheckBox:
        """The check box of an on/off option: its record's label and tip; a click sets
        its setting."""
        box = QCheckBox(option.label)
        box.setToolTip(option.tip)
        name = option.settings[0]
        box.toggled.connect(lambda on: self._emit(**{name: on}))
        return box

    def _switches_in(self, row: str) -> list[QCheckBox]:
        """The check boxes of the switches whose records put them in ``row``."""
        return [box for key, box in self.switch_boxes.items() if OPTIONS[key].row == row]

    # -- what the user does ---------------------------------------------------------
    def _emit(self, **changes: Any) -> None:
        """One or more options set by hand: the preset is no longer the one chosen."""
        changes.setdefault("preset", "")
        self.changed.emit(changes)

    def _margin_text(self) -> str:
        value = self.margin_spin.value()
        return f"{value:g}{self.margin_unit.currentData()}" if value else ""

    def _outline_text(self) -> str:
        if not self.outline_box.isChecked():
            return ""
        return f"{self.outline_width.value()}:{self.outline_colour}"

    def _preset_chosen(self, index: int) -> None:
        name = self.preset_box.itemData(index)
        preset = self.presets.get(name)
        if preset is None:
            return  # "Custom": nothing to set
        changes = export_fields(preset.values)
        changes["preset"] = name
        self.changed.emit(changes)

    def save_as_preset(self, name: str | None = None) -> Path | None:
        """Save the options shown as a user preset (asking its name); its file, or None.

        A name that is already a preset's asks first: a built-in is never changed (yours
        is used instead of it until removed), and one of yours is replaced only when
        confirmed.
        """
        if name is None:
            name = PresetNameDialog.ask(self, self._suggested_name())
            if name is None:
                return None
        name = name.strip()
        existing = self.presets.get(name)
        if existing is not None and not self._confirm_replace(existing):
            return None
        settings = self._settings
        try:
            options = settings.compose(mask_only=False)
            values = values_of(options, settings.output_format)
            path = save_preset(name, values, "saved from the app", replace=existing is not None)
        except (UsageError, OSError) as exc:
            message = getattr(exc, "message", str(exc))
            fix = getattr(exc, "fix", "") or "Check the presets folder can be written."
            warn(self, "Preset not saved", f"The preset could not be saved: {message}\n\n{fix}")
            return None
        self.reload_presets()
        self.changed.emit({"preset": name})
        return path

    def _suggested_name(self) -> str:
        """A name that is no preset's yet: the chosen preset's with ``my-`` before it."""
        chosen = self._settings.preset
        base = f"my-{chosen}" if chosen else "my-preset"
        name, n = base, 2
        while name in self.presets:
            name, n = f"{base}-{n}", n + 1
        return name

    def _confirm_replace(self, existing: Preset) -> bool:
        if existing.builtin:
            text = (
                f"{existing.name!r} is a built-in preset. Save yours under this name? It will "
                "be used instead of the built-in one, which is kept: remove yours (Remove, "
                "beside Save as Preset…) to get the built-in back."
            )
            yes = "Use Mine Instead"
        else:
            text = (
                f"You already have a preset called {existing.name!r} ({existing.path}). "
                "Replace it with the options shown now?"
            )
            yes = "Replace"
        return ask_yes(self, "Preset exists", text, yes)

    def remove_chosen_preset(self, confirm: bool = True) -> bool:
        """Delete the user's preset chosen in the box (asking first); whether it was."""
        preset = self.presets.get(self.preset_box.currentData())
        if preset is None or preset.builtin:
            return False
        if preset.shadows_builtin:
            after = "The built-in preset of this name is used again."
        else:
            after = "This cannot be undone."
        text = f"Delete your preset {preset.name!r} ({preset.path})? {after}"
        if confirm and not ask_yes(self, "Remove preset", text, "Remove"):
            return False
        try:
            remove_preset(preset.name)
        except UsageError as exc:
            warn(self, "Preset not removed", f"{exc.message}\n\n{exc.fix}")
            return False
        self.reload_presets()
        self.changed.emit({"preset": matching_preset(self._settings, self.presets)})
        return True

    def _background_chosen(self, index: int) -> None:
        chosen = self.background_box.itemData(index)
        settings = self._settings
        if chosen == CHOOSE_COLOUR:
            self.show_settings(settings)  # unless a colour is chosen below
            blurred = parse_blur_or_none(settings.background) is not None
            start = "" if blurred else settings.background
            color = QColorDialog.getColor(
                qcolor(start or "#ffffff"),
                self,
                "Background colour",
                QColorDialog.ColorDialogOption.ShowAlphaChannel,
            )
            if color.isValid():
                self._emit(background=colour_name(color), background_image="")
        elif chosen == BLUR:
            self._emit(background=f"blur:{self.blur_spin.value():g}", background_image="")
        elif chosen == CHOOSE_IMAGE:
            self.show_settings(settings)
            patterns = " ".join(f"*{e}" for e in sorted(IMAGE_EXTENSIONS))
            path, _ = QFileDialog.getOpenFileName(
                self, "Background image", "", f"Images ({patterns})"
            )
            if path:
                self.use_background_image(Path(path))
        elif chosen == IMAGE:
            pass  # the image already chosen
        else:
            self._emit(background=chosen, background_image="")

    def use_background_image(self, path: Path) -> None:
        """Put the cutout on the image file ``path`` (a colour stays for a fit's bars)."""
        problem = background_problem(str(path))
        if problem:
            warn(
                self,
                "Not used as the background",
                f"{problem}\n\nChoose a photo or picture file bgremover reads (JPEG, PNG, "
                "WebP, TIFF…).",
            )
            return
        background = self._settings.background
        keep = background if parse_blur_or_none(background) is None else ""
        self._emit(background_image=str(path.resolve()), background=keep)

    def _canvas_chosen(self, index: int) -> None:
        chosen = self.canvas_box.itemData(index)
        if chosen == CANVAS_SIZE:
            self._emit(canvas=f"{self.canvas_w.value()}x{self.canvas_h.value()}")
        else:
            self._emit(canvas=chosen)

    def _canvas_size_changed(self) -> None:
        if self.canvas_box.currentData() == CANVAS_SIZE:
            canvas = f"{self.canvas_w.value()}x{self.canvas_h.value()}"
            if canvas != self._settings.canvas:
                self._emit(canvas=canvas)

    def _choose_outline_colour(self) -> None:
        color = QColorDialog.getColor(qcolor(self.outline_colour), self, "Outline colour")
        if color.isValid():
            self.outline_colour = colour_name(color)
            self.outline_box.setChecked(True)
            self._emit(outline=self._outline_text())

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if dropped_image(event) is not None:
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        path = dropped_image(event)
        if path is None:
            event.ignore()
            return
        event.acceptProposedAction()
        self.use_background_image(path)

    # -- what the window tells the panel --------------------------------------------
    def reload_presets(self) -> None:
        """Read the presets again (built-in and the user's)."""
        try:
            self.presets = load_presets()
            self.preset_problem = ""
        except UsageError as exc:
            self.presets = builtin_presets()
            self.preset_problem = f"Your presets were not read: {exc.message} {exc.fix}".strip()
        box = self.preset_box
        box.blockSignals(True)
        box.clear()
        for name, preset in self.presets.items():
            box.addItem(name, name)
            tip = preset.description or preset.summary()
            box.setItemData(box.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        box.blockSignals(False)
        self.show_settings(self._settings)

    def show_enlarged(self, enlarged: Enlarged | None) -> None:
        """Note, under the canvas rows, that the image shown is enlarged so much by its
        canvas that it will look soft (None: it is not)."""
        text = "" if enlarged is None else f"Note: {enlarged.words()}"
        self.enlarged_label.setText(text)
        self.enlarged_label.setVisible(bool(text))

    def show_settings(self, settings: Settings) -> None:
        """Show ``settings`` without reporting a change, and what keeps them from being
        written, if anything."""
        self._settings = settings
        widgets = [
            self.preset_box,
            self.background_box,
            self.blur_spin,
            self.fit_box,
            *self.switch_boxes.values(),
            self.margin_spin,
            self.margin_unit,
            self.canvas_box,
            self.canvas_w,
            self.canvas_h,
            self.position_box,
            self.max_size_spin,
            self.outline_box,
            self.outline_width,
            self.format_box,
            self.quality_spin,
        ]
        for widget in widgets:
            widget.blockSignals(True)
        try:
            self._show(settings)
        finally:
            for widget in widgets:
                widget.blockSignals(False)

    def _show(self, s: Settings) -> None:
        # Preset: the one the options are, else "Custom" (listed only then).
        name = matching_preset(s, self.presets)
        custom = self.preset_box.findData(CUSTOM)
        if name == CUSTOM and custom < 0:
            self.preset_box.insertItem(0, "Custom", CUSTOM)
            self.preset_box.setItemData(
                0, "Options set one by one, as no preset has them", Qt.ItemDataRole.ToolTipRole
            )
        elif name != CUSTOM and custom >= 0:
            self.preset_box.removeItem(custom)
        select_data(self.preset_box, name)
        chosen = self.presets.get(name)
        self.remove_preset_button.setEnabled(chosen is not None and not chosen.builtin)

        # Background: a colour (one of its own gets an item), the blur, or an image.
        box = self.background_box
        blur = parse_blur_or_none(s.background) is not None
        image_item = box.findData(IMAGE)
        if s.background_image:
            label = f"Image: {Path(s.background_image).name}"
            if image_item < 0:
                box.insertItem(box.findData(CHOOSE_IMAGE), choice_icon(IMAGE), label, IMAGE)
                image_item = box.findData(IMAGE)
            box.setItemText(image_item, label)
            box.setItemData(image_item, s.background_image, Qt.ItemDataRole.ToolTipRole)
            box.setCurrentIndex(image_item)
        else:
            if image_item >= 0:
                box.removeItem(image_item)
            if blur:
                select_data(box, BLUR)
                strength = parse_blur_or_none(s.background)
                self.blur_spin.setValue(strength if isinstance(strength, float) else 1.0)
            else:
                colour = colour_or_white(s.background) if s.background else ""
                if box.findData(colour) < 0:
                    custom_at = box.findData(CHOOSE_COLOUR)
                    if box.itemData(custom_at - 1) not in BACKGROUNDS:
                        box.removeItem(custom_at - 1)  # one colour of its own at a time
                        custom_at -= 1
                    box.insertItem(custom_at, colour_swatch(colour), colour, colour)
                select_data(box, colour)
        self.form.setRowVisible(self.blur_spin, blur and not s.background_image)
        self.form.setRowVisible(self.fit_box, bool(s.background_image))
        select_data(self.fit_box, s.background_fit)

        for key, check in self.switch_boxes.items():
            check.setChecked(bool(getattr(s, OPTIONS[key].settings[0])))
            check.setEnabled(s.output_format in (OPTIONS[key].formats or FORMATS))
        try:
            margin = parse_length(s.margin or "0")
        except UsageError:
            margin = parse_length("0")
        self.margin_spin.setValue(margin.value)
        select_data(self.margin_unit, "%" if margin.percent else "px")
        framed = s.crop or bool(s.canvas)
        self.margin_spin.setEnabled(framed)
        self.margin_unit.setEnabled(framed)

        size = None
        with contextlib.suppress(UsageError):
            size = parse_canvas(s.canvas)[0] if s.canvas else None
        if size is not None:
            select_data(self.canvas_box, CANVAS_SIZE)
            self.canvas_w.setValue(size[0])
            self.canvas_h.setValue(size[1])
        elif self.canvas_box.findData(s.canvas) >= 0:
            select_data(self.canvas_box, s.canvas)
        else:
            # A ratio the box does not list (from a preset of one's own): an item for it.
            self.canvas_box.insertItem(self.canvas_box.count() - 1, s.canvas, s.canvas)
            select_data(self.canvas_box, s.canvas)
        self.form.setRowVisible(self._size_row, size is not None)
        select_data(self.position_box, s.position)
        self.position_box.setEnabled(bool(s.canvas))
        self.max_size_spin.setValue(s.max_size)

        self.outline_box.setChecked(bool(s.outline))
        if s.outline:
            try:
                outline = parse_outline(s.outline)
                self.outline_width.setValue(round(outline.width))
                r, g, b, a = outline.color
                self.outline_colour = f"#{r:02x}{g:02x}{b:02x}" + (f"{a:02x}" if a < 255 else "")
            except UsageError:
                pass
        self.outline_button.setIcon(colour_swatch(self.outline_colour))
        # Shown only with an outline: the pane keeps its height (no scroll bar) when
        # another row, such as the canvas size, appears.
        self.form.setRowVisible(self._outline_row, bool(s.outline))

        select_data(self.format_box, s.output_format)
        lossy = s.output_format == "jpeg" or (s.output_format == "webp" and not s.lossless)
        self.quality_spin.setEnabled(lossy)
        default = DEFAULT_QUALITY.get(s.output_format)
        # The format's own quality reads the same whether a preset names it or not.
        self.quality_spin.setValue(0 if s.quality == default else s.quality)
        self.quality_spin.setSpecialValueText(f"{default} (default)" if default else "default")

        problem = s.export_problem()
        lines = []
        if problem is not None:
            lines.append(f"Cannot be saved like this: {problem.message} {problem.fix}".strip())
        if self.preset_problem:
            lines.append(self.preset_problem)
        self.problem_label.setText("\n".join(lines))
        self.problem_label.setVisible(bool(lines))


def parse_blur_or_none(text: str) -> float | None:
    """The blur strength of a background setting; None when it is no blur (a colour...)."""
    try:
        return parse_blur(text) if text else None
    except UsageError:
        return 1.0


def _one_or_row(*widgets: QWidget) -> QWidget:
    """One widget itself, or several side by side."""
    return widgets[0] if len(widgets) == 1 else _row(*widgets)


def _row(*widgets: QWidget) -> QWidget:
    row = QWidget()
    lay = QHBoxLayout(row)
    lay.setContentsMargins(0, 0, 0, 0)
    for widget in widgets:
        lay.addWidget(widget)
    lay.addStretch(1)
    return row
