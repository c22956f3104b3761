"""Choosing a model: how each is labelled (size, cached, licence, non-commercial), and
the question asked before one is downloaded, and a side of the comparison (a model and a
precision). The Settings pane's model box and the comparison's side choosers both use
these, so a model reads the same in both.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPaintEvent, QStandardItemModel
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QWidget,
)

from ..engine.pipeline import made_int8
from ..network.models import PRECISIONS, REGISTRY, ModelSpec, size_text
from ..network.store import ModelStore

#: A side of a comparison as the user chose it: a model (None: the model of the
#: settings) and a precision.
Side = tuple[str | None, str]
#: The default comparison: fp32 against int8 of the current model.
DEFAULT_SIDES: tuple[Side, Side] = ((None, "fp32"), (None, "int8"))


#: What a non-commercial model's download question says, plainly.
NON_COMMERCIAL_WARNING = (
    "Non-commercial licence: you may use these weights for personal, research and other "
    "non-commercial work only. Commercial use needs a licence from its owner."
)


def missing_files(spec: ModelSpec, store: ModelStore | None = None) -> list[ModelSpec]:
    """The model files choosing ``spec`` downloads: its own, or for a combined model those
    of its models not cached in ``store`` (None: all of them)."""
    if not spec.members:
        return [spec]
    members = [REGISTRY[m] for m in spec.members]
    return [m for m in members if store is None or store.cached_path(m) is None] or members


def download_question(spec: ModelSpec, store: ModelStore | None = None) -> tuple[str, str]:
    """The text and the details of the question asked before ``spec`` is downloaded; for a
    combined model, of the models it needs that ``store`` lacks."""
    files = missing_files(spec, store)
    size = size_text(sum(f.bytes for f in files), all(f.bytes_exact for f in files))
    if spec.members:
        names = ", ".join(f.name for f in files)
        text = (
            f"{spec.title or spec.name} runs {' and '.join(spec.members)}; choosing it "
            f"downloads the models it needs that are not downloaded yet: {names}, {size}."
        )
    else:
        text = f"{spec.name} is not downloaded yet: it is {size}."
    lines = [spec.about, "", f"Licence: {spec.licence}"]
    homepages = dict.fromkeys(f.homepage for f in files if f.homepage)
    lines += list(homepages) if spec.members else ([spec.homepage] if spec.homepage else [])
    if spec.non_commercial:
        lines += ["", NON_COMMERCIAL_WARNING]
    lines += ["", "The download starts when the model is first used; the status bar shows "
              "its progress, and its Cancel stops it."]  # fmt: skip
    made = " and ".join(made_int8(spec))
    if made:
        lines += [f"Then, once, its first use makes the int8 version of {made}: a few "
                  "minutes, shown there too."]  # fmt: skip
    return text, "\n".join(lines)


def confirm_download(
    parent: QWidget | None, spec: ModelSpec, store: ModelStore | None = None
) -> bool:
    """Ask before a model is downloaded (for a combined model, the models it needs that
    ``store`` lacks): its size, its licence, and for non-commercial weights a plain
    warning. True when the user chose Download."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning if spec.non_commercial else QMessageBox.Icon.Question)
    box.setWindowTitle(f"Download {', '.join(f.name for f in missing_files(spec, store))}?")
    text, info = download_question(spec, store)
    box.setText(text)
    box.setInformativeText(info)
    download = box.addButton("Download", QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    return box.clickedButton() is download


def model_label(
    name: str, size_bytes: int, cached: bool, exact: bool = True, non_commercial: bool = False
) -> str:
    """A registry model's name (a combined model's title), its size and whether it is
    cached (else what there is to download), and a mark on non-commercial weights."""
    size = size_text(size_bytes, exact)
    label = f"{name} — {size}, cached" if cached else f"{name} — {size} download"
    return label + (" · non-commercial" if non_commercial else "")


def model_tooltip(spec: ModelSpec) -> str:
    """What the model list's tooltip says of a registry model: what it is, its licence
    (a combined model's: each of its models'), and the models a combined model runs."""
    lines = [spec.about, f"Licence: {spec.licence}"]
    if spec.members:
        lines.append(f"Its models: {', '.join(spec.members)}; each is downloaded and cached "
                     "on its own, and used as any model is.")  # fmt: skip
    if spec.non_commercial:
        lines.append(NON_COMMERCIAL_WARNING)
    return "\n".join(lines)


def spec_label(spec: ModelSpec, store: ModelStore) -> str:
    """:func:`model_label` of ``spec`` as ``store`` holds it (a combined model is cached
    when each of its models is)."""
    cached = store.cached_path(spec) is not None
    name = spec.title or spec.name
    return model_label(name, spec.bytes, cached, spec.bytes_exact, spec.non_commercial)


def relabel_models(box: QComboBox, store: ModelStore) -> None:
    """Label each registry model in ``box`` (size, cached or not, marks) and open its list
    wide enough for every label, whatever the box's own width."""
    for i in range(box.count()):
        spec = REGISTRY.get(box.itemData(i))
        if spec is not None:
            box.setItemText(i, spec_label(spec, store))
    metrics = box.fontMetrics()
    widest = max((metrics.horizontalAdvance(box.itemText(i)) for i in range(box.count())),
                 default=0)  # fmt: skip
    box.view().setMinimumWidth(widest + 3 * metrics.averageCharWidth())


class ModelBox(QComboBox):
    """The model choice: its list, wider than the box for the labels, opens inside the
    window (moved left where it would run past the window's right edge); the box shows
    a label too long for it cut with "…", never clipped mid-letter."""

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        field = self.style().subControlRect(
            QStyle.ComplexControl.CC_ComboBox,
            option,
            QStyle.SubControl.SC_ComboBoxEditField,
            self,
        )
        option.currentText = self.fontMetrics().elidedText(
            option.currentText, Qt.TextElideMode.ElideRight, field.width()
        )
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)

    def showPopup(self) -> None:
        super().showPopup()
        popup = self.view().window()
        right = self.window().geometry().right()
        overrun = popup.geometry().right() - right
        if overrun > 0:
            popup.move(max(popup.x() - overrun, self.window().geometry().left()), popup.y())


def needs_download(model: str, store: ModelStore) -> ModelSpec | None:
    """The registry spec of ``model`` when choosing it means a download (for a combined
    model: one of its models is not cached); else None."""
    spec = REGISTRY.get(model)
    return spec if spec is not None and store.cached_path(spec) is None else None


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
