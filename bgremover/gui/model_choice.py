"""Choosing a model: how each is labelled (size, cached, licence, non-commercial), and
the question asked before one is downloaded. The Settings pane's model box and the
comparison's side choosers both use these, so a model reads the same in both.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import (
    QComboBox,
    QMessageBox,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QWidget,
)

from ..engine.pipeline import made_int8
from ..network.models import REGISTRY, ModelSpec, ModelStore, size_text

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
