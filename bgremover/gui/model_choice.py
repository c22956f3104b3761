"""Choosing a model: how each is labelled (size, cached, licence, non-commercial), and
the question asked before one is downloaded. The Settings pane's model box and the
comparison's side choosers both use these, so a model reads the same in both.
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QMessageBox, QWidget

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


def download_question(spec: ModelSpec) -> tuple[str, str]:
    """The text and the details of the question asked before ``spec`` is downloaded."""
    text = f"{spec.name} is not downloaded yet: it is {size_text(spec.bytes, spec.bytes_exact)}."
    lines = [spec.about, "", f"Licence: {spec.licence}"]
    if spec.homepage:
        lines.append(spec.homepage)
    if spec.non_commercial:
        lines += ["", NON_COMMERCIAL_WARNING]
    lines += ["", "The download starts when the model is first used; the status bar shows "
              "its progress, and its Cancel stops it."]  # fmt: skip
    return text, "\n".join(lines)


def confirm_download(parent: QWidget | None, spec: ModelSpec) -> bool:
    """Ask before a model is downloaded: its size, its licence, and for non-commercial
    weights a plain warning. True when the user chose Download."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning if spec.non_commercial else QMessageBox.Icon.Question)
    box.setWindowTitle(f"Download {spec.name}?")
    text, info = download_question(spec)
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
    """A registry model's name, its size and whether it is cached (else what there is to
    download), and a mark on non-commercial weights."""
    size = size_text(size_bytes, exact)
    label = f"{name} — {size}, cached" if cached else f"{name} — {size} download"
    return label + (" · non-commercial" if non_commercial else "")


def model_tooltip(spec: ModelSpec) -> str:
    """What the model list's tooltip says of a registry model: what it is, its licence."""
    lines = [spec.about, f"Licence: {spec.licence}"]
    if spec.non_commercial:
        lines.append(NON_COMMERCIAL_WARNING)
    return "\n".join(lines)


def spec_label(spec: ModelSpec, store: ModelStore) -> str:
    cached = store.cached_path(spec) is not None
    return model_label(spec.name, spec.bytes, cached, spec.bytes_exact, spec.non_commercial)


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
    window (moved left where it would run past the window's right edge)."""

    def showPopup(self) -> None:
        super().showPopup()
        popup = self.view().window()
        right = self.window().geometry().right()
        overrun = popup.geometry().right() - right
        if overrun > 0:
            popup.move(max(popup.x() - overrun, self.window().geometry().left()), popup.y())


def needs_download(model: str, store: ModelStore) -> ModelSpec | None:
    """The registry spec of ``model`` when choosing it means a download; else None."""
    spec = REGISTRY.get(model)
    return spec if spec is not None and store.cached_path(spec) is None else None
