"""The Export panel's questions and messages: a warning that blocks nothing, a question
whose safe answer is the default, and the preset name dialog."""

from __future__ import annotations

from PySide6.QtCore import QRegularExpression, Qt
from PySide6.QtGui import QRegularExpressionValidator
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QWidget,
)

from ..export.presets import NAME_PATTERN


def warn(parent: QWidget, title: str, text: str) -> QMessageBox:
    """A warning that blocks nothing (the window stays usable)."""
    box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, parent)
    box.setWindowModality(Qt.WindowModality.NonModal)
    box.show()
    return box


def ask_yes(parent: QWidget, title: str, text: str, yes: str) -> bool:
    """A question whose safe answer (Cancel) is the default; whether ``yes`` was chosen."""
    box = QMessageBox(
        QMessageBox.Icon.Question, title, text, QMessageBox.StandardButton.NoButton, parent
    )
    accept = box.addButton(yes, QMessageBox.ButtonRole.AcceptRole)
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(cancel)
    box.exec()
    return box.clickedButton() is accept


class PresetNameDialog(QDialog):
    """Asks a preset's name; OK is offered only for a name presets accept."""

    def __init__(self, parent: QWidget | None, suggested: str) -> None:
        super().__init__(parent)
        self.setWindowTitle("Save as Preset")
        self.name_edit = QLineEdit(suggested)
        self.name_edit.selectAll()
        self.name_edit.setValidator(QRegularExpressionValidator(QRegularExpression(NAME_PATTERN)))
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.name_edit.textChanged.connect(
            lambda text: buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(
                bool(text.strip())
            )
        )
        form = QFormLayout(self)
        form.addRow(QLabel("The export options shown now, under a name of your own."))
        form.addRow("Name:", self.name_edit)
        form.addRow(QLabel("Letters, digits, - _ . (up to 64)."))
        form.addRow(buttons)
        # Wide enough that window managers do not cut the title ("Save ... Preset").
        self.setMinimumWidth(max(380, self.fontMetrics().horizontalAdvance("M" * 30)))

    @classmethod
    def ask(cls, parent: QWidget | None, suggested: str) -> str | None:
        dialog = cls(parent, suggested)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        return dialog.name_edit.text().strip() or None
