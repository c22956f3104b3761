"""The settings pane: one widget per setting, and one signal saying which ones changed."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDockWidget,
    QFormLayout,
    QFrame,
    QLabel,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ..export.options import EXPORT_OPTIONS, OPTIONS, ExportOption
from ..network.measured import fastest, measured_rows
from ..network.models import PRECISIONS, REGISTRY
from ..network.session import provider_choices
from ..network.store import ModelStore
from .export_panel import ExportPanel, select_data
from .model_choice import (
    ModelBox,
    confirm_download,
    model_tooltip,
    needs_download,
    relabel_models,
)
from .settings import Settings
from .wording import app_words

#: What each precision means to a user choosing it.
PRECISION_LABELS = {"fp32": "fp32 (exact)", "int8": "int8 (faster; see Compare)"}
#: Under the settings: whom a change reaches (:func:`applies_to` adds the menu item that
#: redoes the whole queue).
APPLIES_TO = (
    "Changes apply at once to the image shown, and to the others when you view or "
    "save them, and to batches."
)


def provider_label(name: str) -> str:
    """An ONNX Runtime provider's name as the pane shows it (CPU, CUDA, OpenVINO), with its
    options (``OpenVINO (GPU, FP16)``)."""
    base, *options = name.split(":")
    label = base.replace("ExecutionProvider", "")
    return f"{label} ({', '.join(options)})" if options else label


def applies_to() -> str:
    """The note under the settings: :data:`APPLIES_TO`, then the menu item that redoes
    the whole queue by its real text once a window has registered its menus."""
    return APPLIES_TO + app_words(" {reprocess} redoes the whole queue now.")


class SettingsPanel(QWidget):
    """Model, precision, provider, threads, edges, mask only; below them the Export
    panel (:attr:`export`: preset, background, framing, format).

    ``changed`` carries a dict of the settings the user changed (field -> new
    value), the Export panel's too; the panel never applies or saves them itself.
    """

    changed = Signal(dict)

    def __init__(self, settings: Settings, store: ModelStore, parent: QWidget | None = None):
        super().__init__(parent)
        self._store = store
        self.model_box = ModelBox()
        # As wide as the pane allows, not as the longest label (size, cached, licence
        # mark): the list opens wide instead.
        self.model_box.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.model_box.setMinimumContentsLength(20)
        for name, spec in REGISTRY.items():
            self.model_box.addItem(name, name)
            self.model_box.setItemData(
                self.model_box.count() - 1, model_tooltip(spec), Qt.ItemDataRole.ToolTipRole
            )
        self.refresh_model_labels()
        if settings.model not in REGISTRY:
            self.model_box.addItem(Path(settings.model).name, settings.model)
        select_data(self.model_box, settings.model)
        #: The model chosen: what a cancelled download question goes back to.
        self._model = settings.model
        self.precision_box = QComboBox()
        for precision in PRECISIONS:
            self.precision_box.addItem(PRECISION_LABELS.get(precision, precision), precision)
        select_data(self.precision_box, settings.precision)
        self.guard_box = QCheckBox("fp32 where int8 is unsure")
        self.guard_box.setToolTip(
            "With int8: a photo int8 is unsure of (a broad part of it near the mask's "
            "threshold, where int8 can flip whole regions) is made in fp32 as well, and "
            "that result is used. The image's details say when it happened."
        )
        self.guard_box.setChecked(settings.int8_guard)
        self.provider_box = QComboBox()
        self.provider_box.addItem("Auto", "auto")
        for name in provider_choices():
            self.provider_box.addItem(provider_label(name), name)
        select_data(self.provider_box, settings.providers)
        self.threads_box = QSpinBox()
        self.threads_box.setRange(0, 64)
        self.threads_box.setSpecialValueText("automatic")
        self.threads_box.setValue(settings.threads)
        # The export choices (format included) are the Export panel's: it reports their
        # changes itself, through this pane's signal, once each.
        self.export = ExportPanel(settings)
        self.export.changed.connect(self.changed)
        self.mask_only_box = QCheckBox("Mask only")
        self.mask_only_box.setChecked(settings.mask_only)
        self.mask_only_box.setToolTip("Save and show the mask (white kept, black removed)")
        self.refine_box = QCheckBox("Refine edges")
        self.refine_box.setToolTip(
            "Sharpen the mask's edges with the photo's colours (about 10-50 ms). Off gives "
            "the network's mask exactly as rembg computes it."
        )
        self.refine_box.setChecked(settings.refine)
        #: A check box per export option of this pane (its record's label and tip).
        self.option_boxes = {
            o.key: self._option_box(o, settings) for o in EXPORT_OPTIONS if o.pane == "settings"
        }
        self.decontaminate_box = self.option_boxes["decontaminate"]
        self.fallback_label = QLabel("")
        self.fallback_label.setWordWrap(True)
        self.applies_label = QLabel(applies_to())
        self.applies_label.setWordWrap(True)
        # A note to read, in the text's own colour (a disabled label reads as switched off).
        note = self.applies_label.font()
        if note.pointSizeF() > 0:
            note.setPointSizeF(note.pointSizeF() * 0.9)
            self.applies_label.setFont(note)

        engine = QWidget()
        form = QFormLayout(engine)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Model:", self.model_box)
        form.addRow("Precision:", self.precision_box)
        form.addRow("", self.guard_box)
        # The guard is int8's: its row is there only then (a row less keeps the pane from
        # needing a scroll bar at 800 px).
        self._engine_form = form
        form.setRowVisible(self.guard_box, settings.precision == "int8")
        form.addRow("Provider:", self.provider_box)
        form.addRow("Threads:", self.threads_box)
        form.addRow("", self.refine_box)
        for box in self.option_boxes.values():
            form.addRow("", box)
        form.addRow("", self.mask_only_box)
        form.addRow(self.fallback_label)
        form.addRow(self.applies_label)
        column = QVBoxLayout(self)
        column.addWidget(engine)
        column.addWidget(self.export)
        column.addStretch(1)
        self.setMaximumWidth(380)

        self.show_measured()
        self.model_box.currentIndexChanged.connect(self._model_chosen)
        self.precision_box.currentIndexChanged.connect(self._precision_chosen)
        self.guard_box.toggled.connect(lambda v: self._emit(int8_guard=v))
        self.provider_box.currentIndexChanged.connect(
            lambda: self._emit(providers=self.provider_box.currentData())
        )
        self.threads_box.valueChanged.connect(self._threads_chosen)
        self.mask_only_box.toggled.connect(lambda v: self._emit(mask_only=v))
        self.refine_box.toggled.connect(lambda v: self._emit(refine=v))

    def _emit(self, **changes: object) -> None:
        self.changed.emit(changes)

    def _option_box(self, option: ExportOption, settings: Settings) -> QCheckBox:
        """The check box of an export option: its record's label and tip; a click sets
        its setting."""
        box = QCheckBox(option.label)
        box.setToolTip(option.tip)
        name = option.settings[0]
        box.setChecked(bool(getattr(settings, name)))
        box.toggled.connect(lambda on: self._emit(**{name: on}))
        return box

    def _precision_chosen(self) -> None:
        precision = self.precision_box.currentData()
        self._engine_form.setRowVisible(self.guard_box, precision == "int8")
        self.show_measured()
        self._emit(precision=precision)

    def _threads_chosen(self, threads: int) -> None:
        self.show_measured()
        self._emit(threads=threads)

    def show_measured(self) -> None:
        """Label each provider with its time as ``bgremover bench --save`` measured it here
        for the model, precision and threads chosen, and Auto with what it then runs;
        plain names where nothing was measured."""
        rows = measured_rows(self._store.home, self._model, self.threads_box.value())
        precision = self.precision_box.currentData()
        by_provider = {r.provider: r for r in rows if r.precision == precision}
        choice = fastest(rows, precision)
        for index in range(self.provider_box.count()):
            name = self.provider_box.itemData(index)
            if name == "auto":
                text = "Auto" if choice is None else f"Auto: {provider_label(choice.provider)}"
                tip = (
                    "The accelerators this ONNX Runtime offers, then CPU. Measure them with "
                    "bgremover bench --save, and Auto runs the fastest one that makes the "
                    "CPU's masks."
                    if choice is None
                    else "Measured on this machine (bgremover bench --save): the fastest "
                    f"provider for this model in {precision} whose masks agree with the CPU's."
                )
            else:
                row = by_provider.get(name)
                text = provider_label(name)
                tip = ""
                if row is not None:
                    text += f" — {row.median_ms:.0f} ms"
                    memory = "" if row.memory_mb is None else f", {row.memory_mb:.0f} MB"
                    tip = (
                        f"{row.median_ms:.0f} ms per inference{memory}, measured on this "
                        f"machine; masks IoU {row.min_iou:.3f} against the CPU's."
                    )
                    if not row.agrees:
                        text += " (masks differ)"
                        tip += " Its masks differ from the CPU provider's: Auto does not pick it."
            self.provider_box.setItemText(index, text)
            self.provider_box.setItemData(index, tip or None, Qt.ItemDataRole.ToolTipRole)

    def _model_chosen(self) -> None:
        """A model not downloaded yet is asked about first (size, licence); Cancel keeps
        the model there was."""
        model = self.model_box.currentData()
        spec = needs_download(model, self._store)
        if spec is not None and not confirm_download(self, spec, self._store):
            self.show_model(self._model)
            return
        self._model = model
        self.show_measured()
        self._emit(model=model)

    # -- what the window tells the pane ------------------------------------------
    def choose_model(self, model: str) -> None:
        """Choose registry ``model`` as the user does in the model box (e.g. the Result
        view's Try Best): asked about first when it needs a download, then reported as a
        change. Nothing happens when it is the model chosen already."""
        index = self.model_box.findData(model)
        if index >= 0 and model != self._model:
            self.model_box.setCurrentIndex(index)  # -> _model_chosen, as a user's choice

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
        self._model = model
        self.show_measured()

    def forget_model_file(self, model: str) -> None:
        """Remove a model file's entry (it could not be used)."""
        index = self.model_box.findData(model)
        if index >= 0 and model not in REGISTRY:
            self.model_box.blockSignals(True)
            self.model_box.removeItem(index)
            self.model_box.blockSignals(False)

    def refresh_model_labels(self) -> None:
        """Each registry model's size and whether it is cached (else what there is to
        download); non-commercial weights marked."""
        relabel_models(self.model_box, self._store)

    def name_menus(self) -> None:
        """Word the note under the settings again, naming the menu items a window has
        registered since (wording.use_menus) by their real texts."""
        self.applies_label.setText(applies_to())

    def show_settings(self, settings: Settings) -> None:
        """Show ``settings`` (e.g. those a preset set) without reporting a change."""
        boxes = {OPTIONS[key].settings[0]: box for key, box in self.option_boxes.items()}
        boxes |= {"mask_only": self.mask_only_box, "refine": self.refine_box}
        boxes["int8_guard"] = self.guard_box
        for name, box in boxes.items():
            box.blockSignals(True)
            box.setChecked(bool(getattr(settings, name)))
            box.blockSignals(False)
        self.export.show_settings(settings)

    def in_dock(self, parent: QWidget) -> QDockWidget:
        """The pane in a dock titled Settings (for ``parent``, a main window), scrolling
        with the Export panel below it when the window is short."""
        scroll = QScrollArea()
        scroll.setWidget(self)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setMinimumWidth(self.sizeHint().width() + 16)
        dock = QDockWidget("Settings", parent)
        dock.setObjectName("settings")
        dock.setWidget(scroll)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable)
        return dock

    def show_fallbacks(self, fallbacks: tuple[str, ...]) -> None:
        self.fallback_label.setText("\n".join(f"Fallback — {r}" for r in fallbacks))
