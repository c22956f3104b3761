"""The settings pane: one widget per setting, and one signal saying which ones changed."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import (
    QCheckBox,
    QColorDialog,
    QComboBox,
    QFormLayout,
    QLabel,
    QSpinBox,
    QWidget,
)

from ..models import PRECISIONS, REGISTRY, ModelStore
from ..output import FORMATS
from ..session import available_providers
from .settings import Settings

#: What each precision means to a user choosing it.
PRECISION_LABELS = {"fp32": "fp32 (exact)", "int8": "int8 (faster; see Compare)"}
#: The background choices offered at once ("" is transparent); any other colour
#: through "Other colour…".
BACKGROUNDS = {"": "Transparent", "#ffffff": "White", "#000000": "Black"}
#: The data of the background box's last item, which opens the colour dialog.
CHOOSE_COLOUR = "choose"
#: Under the settings: whom a change reaches.
APPLIES_TO = (
    "Changes apply at once to the image shown, and to the others when you view or "
    "save them, and to batches. Edit ▸ Reprocess All (Ctrl+R) redoes the whole queue now."
)


def colour_swatch(colour: str, size: int = 16) -> QIcon:
    """A small square of ``colour``; a checkerboard for transparent ("")."""
    pixmap = QPixmap(size, size)
    pixmap.fill(QColor(245, 245, 245))
    painter = QPainter(pixmap)
    if colour:
        painter.fillRect(0, 0, size, size, QColor(colour))
    else:
        half = size // 2
        painter.fillRect(0, 0, half, half, QColor(204, 204, 204))
        painter.fillRect(half, half, half, half, QColor(204, 204, 204))
    painter.setPen(QColor(128, 128, 128))
    painter.drawRect(0, 0, size - 1, size - 1)
    painter.end()
    return QIcon(pixmap)


def model_label(name: str, size_bytes: int, cached: bool) -> str:
    """A registry model's name, with what there is to download when it is not cached."""
    if cached:
        return name
    mb = size_bytes / 1e6
    return f"{name} ({mb:.1f} MB download)" if mb < 10 else f"{name} ({mb:.0f} MB download)"


def select_data(box: QComboBox, value: object) -> None:
    """Select the item whose data is ``value`` (the first item when there is none)."""
    box.setCurrentIndex(max(box.findData(value), 0))


class SettingsPanel(QWidget):
    """Model, precision, provider, threads, format, background, edges, mask only.

    ``changed`` carries a dict of the settings the user changed (field -> new
    value); the panel never applies or saves them itself.
    """

    changed = Signal(dict)

    def __init__(self, settings: Settings, store: ModelStore, parent: QWidget | None = None):
        super().__init__(parent)
        self._store = store
        self.model_box = QComboBox()
        for name, spec in REGISTRY.items():
            self.model_box.addItem(name, name)
            self.model_box.setItemData(
                self.model_box.count() - 1, spec.description, Qt.ItemDataRole.ToolTipRole
            )
        self.refresh_model_labels()
        if settings.model not in REGISTRY:
            self.model_box.addItem(Path(settings.model).name, settings.model)
        select_data(self.model_box, settings.model)
        self.precision_box = QComboBox()
        for precision in PRECISIONS:
            self.precision_box.addItem(PRECISION_LABELS.get(precision, precision), precision)
        select_data(self.precision_box, settings.precision)
        self.provider_box = QComboBox()
        self.provider_box.addItem("Auto", "auto")
        for name in available_providers():
            self.provider_box.addItem(name.replace("ExecutionProvider", ""), name)
        select_data(self.provider_box, settings.providers)
        self.threads_box = QSpinBox()
        self.threads_box.setRange(0, 64)
        self.threads_box.setSpecialValueText("automatic")
        self.threads_box.setValue(settings.threads)
        self.format_box = QComboBox()
        for fmt in FORMATS.values():
            self.format_box.addItem(fmt.label, fmt.name)
        select_data(self.format_box, settings.output_format)
        self.background_box = QComboBox()
        self.background_box.setToolTip("What the cutout is put on, in the view and in the file")
        for colour, label in BACKGROUNDS.items():
            self.background_box.addItem(colour_swatch(colour), label, colour)
        self.background_box.addItem("Other colour…", CHOOSE_COLOUR)
        self.background_box.activated.connect(self._background_chosen)
        self.mask_only_box = QCheckBox("Mask only")
        self.mask_only_box.setChecked(settings.mask_only)
        self.refine_box = QCheckBox("Refine edges")
        self.refine_box.setToolTip(
            "Sharpen the mask's edges with the photo's colours (about 10-50 ms). Off gives "
            "the network's mask exactly as rembg computes it."
        )
        self.refine_box.setChecked(settings.refine)
        self.decontaminate_box = QCheckBox("Decontaminate colours")
        self.decontaminate_box.setToolTip(
            "When saving: re-estimate the subject's colours in see-through hair so no tint of "
            "the old background remains on a new one (slower)."
        )
        self.decontaminate_box.setChecked(settings.decontaminate)
        self.fallback_label = QLabel("")
        self.fallback_label.setWordWrap(True)
        self.applies_label = QLabel(APPLIES_TO)
        self.applies_label.setWordWrap(True)
        self.applies_label.setEnabled(False)  # drawn as a quiet note
        self.show_background(settings.background)

        form = QFormLayout(self)
        form.addRow("Model:", self.model_box)
        form.addRow("Precision:", self.precision_box)
        form.addRow("Provider:", self.provider_box)
        form.addRow("Threads:", self.threads_box)
        form.addRow("Output format:", self.format_box)
        form.addRow("Background:", self.background_box)
        form.addRow("", self.refine_box)
        form.addRow("", self.decontaminate_box)
        form.addRow("", self.mask_only_box)
        form.addRow(self.fallback_label)
        form.addRow(self.applies_label)
        self.setMaximumWidth(360)

        self.model_box.currentIndexChanged.connect(
            lambda: self._emit(model=self.model_box.currentData())
        )
        self.precision_box.currentIndexChanged.connect(
            lambda: self._emit(precision=self.precision_box.currentData())
        )
        self.provider_box.currentIndexChanged.connect(
            lambda: self._emit(providers=self.provider_box.currentData())
        )
        self.threads_box.valueChanged.connect(lambda v: self._emit(threads=v))
        self.format_box.currentIndexChanged.connect(
            lambda: self._emit(output_format=self.format_box.currentData())
        )
        self.mask_only_box.toggled.connect(lambda v: self._emit(mask_only=v))
        self.refine_box.toggled.connect(lambda v: self._emit(refine=v))
        self.decontaminate_box.toggled.connect(lambda v: self._emit(decontaminate=v))

    def _emit(self, **changes: object) -> None:
        self.changed.emit(changes)

    # -- what the window tells the pane ------------------------------------------
    def show_model(self, model: str) -> None:
        """Show ``model`` as chosen (adding a model file's entry) without reporting a change."""
        if self.model_box.findData(model) < 0:
            self.model_box.addItem(Path(model).name, model)
            self.model_box.setItemData(
                self.model_box.count() - 1, model, Qt.ItemDataRole.ToolTipRole
            )
        self.model_box.blockSignals(True)
        select_data(self.model_box, model)
        self.model_box.blockSignals(False)

    def forget_model_file(self, model: str) -> None:
        """Remove a model file's entry (it could not be used)."""
        index = self.model_box.findData(model)
        if index >= 0 and model not in REGISTRY:
            self.model_box.blockSignals(True)
            self.model_box.removeItem(index)
            self.model_box.blockSignals(False)

    def refresh_model_labels(self) -> None:
        """Registry models not yet downloaded say how much there is to download."""
        for i in range(self.model_box.count()):
            name = self.model_box.itemData(i)
            spec = REGISTRY.get(name)
            if spec is None:
                continue
            cached = self._store.cached_path(spec) is not None
            self.model_box.setItemText(i, model_label(name, spec.bytes, cached))
        # The list opens wide enough for every label, whatever the pane's width.
        metrics = self.model_box.fontMetrics()
        texts = (self.model_box.itemText(i) for i in range(self.model_box.count()))
        widest = max((metrics.horizontalAdvance(t) for t in texts), default=0)
        self.model_box.view().setMinimumWidth(widest + 3 * metrics.averageCharWidth())

    def show_background(self, background: str) -> None:
        """Show ``background`` as chosen (a colour of its own gets an item) without
        reporting a change."""
        box = self.background_box
        index = box.findData(background)
        if index < 0:
            custom = box.count() - 1  # before "Other colour…"
            if box.itemData(custom - 1) not in BACKGROUNDS:
                box.removeItem(custom - 1)  # one custom colour at a time
                custom -= 1
            box.insertItem(custom, colour_swatch(background), background, background)
            index = custom
        box.blockSignals(True)
        box.setCurrentIndex(index)
        box.blockSignals(False)
        self._background = background

    def show_fallbacks(self, fallbacks: tuple[str, ...]) -> None:
        self.fallback_label.setText("\n".join(f"Fallback — {r}" for r in fallbacks))

    def _background_chosen(self, index: int) -> None:
        chosen = self.background_box.itemData(index)
        if chosen != CHOOSE_COLOUR:
            self._emit(background=chosen)
            return
        self.show_background(self._background)  # unless a colour is chosen below
        color = QColorDialog.getColor(
            QColor(self._background or "#ffffff"),
            self,
            "Background colour",
            QColorDialog.ColorDialogOption.ShowAlphaChannel,
        )
        if color.isValid():
            # Qt writes #AARRGGBB; the engine reads #RRGGBBAA.
            rgb = color.name(QColor.NameFormat.HexRgb)
            self._emit(background=rgb if color.alpha() == 255 else f"{rgb}{color.alpha():02x}")
