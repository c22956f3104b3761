"""Work that is not saved: what would be lost, in words, and the one question asked
before anything drops it.

The rule is the same everywhere: removing images from the queue, clearing it and
quitting ask first when they would drop a cutout never written, or the user's edits
not written as they are now (:attr:`~.entry.QueueEntry.unsaved`), and say how many, and
how many of those carry edits. Nothing that loses nothing asks: a cutout written with
settings changed since is saved.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QMessageBox, QWidget

from .entry import QueueEntry


def unsaved_words(entries: Sequence[QueueEntry]) -> str:
    """What dropping ``entries`` would lose, in one sentence; "" when nothing."""
    lost = [e for e in entries if e.unsaved]
    if not lost:
        return ""
    if len(lost) == 1:
        edited = ", with your edits," if lost[0].edited else ""
        return f"The cutout of {lost[0].name}{edited} has not been saved."
    with_edits = sum(e.edited for e in lost)
    if with_edits == len(lost):
        which = ", all of them with your edits"
    elif with_edits:
        which = f", {with_edits} of them with your edits"
    else:
        which = ", none of them with edits"
    return f"{len(lost)} cutouts have not been saved{which}."


#: Said after a question about unsaved cutouts: the way to keep them.
SAVE_HINT = "To keep your work, choose Cancel: File ▸ Save All… writes every cutout to a folder."


def ask_before_losing(
    parent: QWidget, title: str, question: str, verb: str, hint: str = ""
) -> bool:
    """Ask ``question`` (what would be lost), then "``verb`` anyway?" and ``hint``; True
    when the user chose ``verb``. Cancel is the default: Enter or Escape lose nothing.

    The button that goes ahead is the standard Discard button, named ``verb``.
    """
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle(title)
    box.setText(question)
    box.setInformativeText(f"{verb} anyway?" + (f" {hint}" if hint else ""))
    go = box.addButton(QMessageBox.StandardButton.Discard)
    go.setText(verb)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    box.setEscapeButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    return box.clickedButton() is go
