"""The Result tab: its bar (view modes, hold for the original, zoom), the notice of a
cutout that may be wrong, the image view or the drop zone, and the words that say what
the image shown is.

The page shows what it is given and starts nothing; which image and which of its
pictures it shows is the window's (and, in edit mode, the edit controller's) to say.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QImage, QKeyEvent
from PySide6.QtWidgets import (
    QButtonGroup,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..engine.pipeline import Result
from ..network.models import BEST
from ..touchup.edit import Box
from .entry import QueueEntry, Status
from .results import made_by
from .settings import Settings
from .views import DropZone, ImageView

#: The Result view's modes: what Save writes (the output for the current settings:
#: cutout, on its background, or the mask), the photo, the mask.
VIEW_MODES = ("output", "original", "mask")
VIEW_LABELS = {"output": "Output", "original": "Original", "mask": "Mask"}
VIEW_TIPS = {
    "output": "What Save writes, with the current settings",
    "original": "The photo as it was opened",
    "mask": "The mask: white is kept, black removed",
}
#: Held down, shows the original in place of the output (before / after).
HOLD_ORIGINAL_KEY = Qt.Key.Key_Backslash
#: What the details say while the queue is empty.
EMPTY_TEXT = "Nothing open yet."


def raised_buttons(bar: QToolBar) -> None:
    """Draw a tool bar's buttons as buttons (a tool bar draws them flat until pressed)."""
    for button in bar.findChildren(QToolButton):
        if button.objectName() != "qt_toolbar_ext_button":  # its ">>" stays flat
            button.setAutoRaise(False)


def detail_text(entry: QueueEntry | None, queued: int, settings: Settings) -> str:
    """The details under the queue for ``entry`` (None: none selected of ``queued``)."""
    if entry is None:
        return "" if queued else EMPTY_TEXT
    p = entry.processed
    if p is not None:
        if entry.status in (Status.QUEUED, Status.PROCESSING):
            note = f"\nBeing made again ({entry.status.value})…"
        else:
            stale = p.stage_for(settings.engine(), settings.compose(), settings.output_format)
            note = "\nApplying the new settings…" if stale is not None else ""
        return entry.summary + note
    if entry.status is Status.FAILED:
        return f"Failed: {entry.error}"
    if entry.status is Status.STOPPED:
        return f"{entry.name}: {entry.error}"
    return f"{entry.name}: {waiting_state(entry)}"


def waiting_state(entry: QueueEntry) -> str:
    """What an image without a result shown is doing: "queued…", "loading…"."""
    return "loading…" if entry.unloaded else f"{entry.status.value}…"


def made_text(result: Result, ran: tuple[str, ...] = ()) -> str:
    """The status bar's note of what made ``result``: model, precision, providers. For a
    combined model, ``ran`` names the models that ran and their precisions ("best
    (u2netp fp32 + isnet-imgly int8)"), which its own name does not say."""
    active = ", ".join(x.replace("ExecutionProvider", "") for x in result.providers)
    return f"This image: {made_by(result, ran)} on {active}"


class DoubtNotice(QFrame):
    """The bar above the image when its cutout may be wrong: why (the evidence of its
    mask), with Try Best (hidden for a cutout Best made) and Touch Up. Hidden otherwise.

    It starts nothing: :attr:`tryModel` asks for Best to be chosen as the model box
    chooses it (the download question included), :attr:`touchUp` for edit mode.
    """

    #: Try Best was clicked: the registry model to choose.
    tryModel = Signal(str)
    #: Touch Up was clicked.
    touchUp = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("doubtNotice")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        # A warning's colours, set whole (text too), so that it reads in light and dark
        # themes alike.
        self.setStyleSheet(
            "#doubtNotice { background: #fff3cd; border: 1px solid #e0b000; border-radius: 3px; }"
            " #doubtNotice QLabel { color: #4a3800; }"
        )
        self.label = QLabel("")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.try_best = QPushButton("Try Best")
        self.try_best.setToolTip(
            f"Use the model {BEST.title or BEST.name} (Settings ▸ Model): this image is "
            "made again with it"
        )
        self.try_best.clicked.connect(lambda: self.tryModel.emit(BEST.name))
        self.touch_up = QPushButton("Touch Up")
        self.touch_up.setToolTip("Touch up this cutout's mask (Touch Up ▸ Edit Mask)")
        self.touch_up.clicked.connect(self.touchUp)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 4, 8, 4)
        row.addWidget(self.label, 1)
        row.addWidget(self.try_best)
        row.addWidget(self.touch_up)
        self.hide()

    def show_for(self, entry: QueueEntry | None) -> None:
        """The notice of ``entry``'s cutout when it is in doubt; hidden for None or a
        cutout nothing points against."""
        note = entry.doubt_note if entry is not None else ""
        if not note or entry is None:
            self.hide()
            return
        self.label.setText(note)
        self.try_best.setVisible(not entry.made_with_best)
        self.show()


class ResultPage(QWidget):
    """The Result tab's page; :attr:`viewer` shows the image, :attr:`drop_zone` stands
    in for it while there is none, :attr:`notice` says above it when the cutout may be
    wrong."""

    #: A view mode's button was clicked (the mode's name).
    modeChosen = Signal(str)
    #: The before/after button or key was pressed (True) or released (False).
    holdChanged = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        #: The view mode shown (one of :data:`VIEW_MODES`), and whether the original is
        #: held in its place (the before/after key or button).
        self.mode = VIEW_MODES[0]
        self.holding = False
        self.viewer = ImageView()
        self.viewer.viewChanged.connect(self.show_zoom)
        self.drop_zone = DropZone()
        self.view_stack = QStackedWidget()
        self.view_stack.addWidget(self.drop_zone)
        self.view_stack.addWidget(self.viewer)
        self.mode_buttons = QButtonGroup(self)
        # A tool bar, so that a narrow window (1024 px) shows what does not fit behind
        # its ">>" button instead of refusing to be that narrow.
        bar = self.mode_bar = QToolBar()
        bar.setMovable(False)
        bar.setFloatable(False)
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        for i, name in enumerate(VIEW_MODES):
            button = QToolButton()
            button.setText(VIEW_LABELS[name])
            button.setCheckable(True)
            button.setChecked(name == self.mode)
            button.setToolTip(f"{VIEW_TIPS[name]} ({i + 1})")
            self.mode_buttons.addButton(button, i)
            bar.addWidget(button)
        self.mode_buttons.idClicked.connect(lambda i: self.modeChosen.emit(VIEW_MODES[i]))
        self.before_button = QToolButton()
        self.before_button.setText("Hold for Original")
        self.before_button.setToolTip("Hold to see the photo before; release for the output (\\)")
        self.before_button.pressed.connect(lambda: self.holdChanged.emit(True))
        self.before_button.released.connect(lambda: self.holdChanged.emit(False))
        gap = QWidget()
        gap.setFixedWidth(12)
        bar.addWidget(gap)
        bar.addWidget(self.before_button)
        stretch = QWidget()
        stretch.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self._edit_button_at = bar.addWidget(stretch)  # Edit Mask goes before it
        self.zoom_label = QLabel("")
        self.zoom_label.setToolTip("Zoom: wheel, Ctrl++ / Ctrl+-; Ctrl+0 fits, Ctrl+1 is 100 %")
        self.zoom_label.setMinimumWidth(self.zoom_label.fontMetrics().horizontalAdvance("6400 %"))
        self.zoom_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        bar.addWidget(self.zoom_label)
        self.zoom_buttons: list[QToolButton] = []
        for text, slot, tip in (
            ("Fit", lambda: self.viewer.fit(), "Fit the image to the view (Ctrl+0)"),
            ("100 %", lambda: self.viewer.actual_size(), "One image pixel a screen pixel (Ctrl+1)"),
        ):
            button = QToolButton()
            button.setText(text)
            button.setToolTip(tip)
            button.clicked.connect(slot)
            bar.addWidget(button)
            self.zoom_buttons.append(button)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(bar)
        self.notice = DoubtNotice()
        column.addWidget(self.notice)
        self._view_row = QHBoxLayout()  # the edit tools go beside the view
        self._view_row.addWidget(self.view_stack, 1)
        column.addLayout(self._view_row, 1)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Installed on the application: the before/after key (held, released) while
        this page's window is active, wherever the focus is."""
        kind = event.type()
        if (
            kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease)
            and isinstance(event, QKeyEvent)
            and event.key() == HOLD_ORIGINAL_KEY
            and self.window().isActiveWindow()
        ):
            if not event.isAutoRepeat():
                self.holdChanged.emit(kind == QEvent.Type.KeyPress)
            return True
        return super().eventFilter(watched, event)

    def add_edit_tools(self, button: QToolButton, bar: QWidget) -> None:
        """Edit mode's button on the bar, and its tools' column beside the view."""
        self.mode_bar.insertWidget(self._edit_button_at, button)
        raised_buttons(self.mode_bar)
        self._view_row.insertWidget(0, bar)

    def show_mode(self, mode: str) -> None:
        self.mode_buttons.button(VIEW_MODES.index(mode)).setChecked(True)

    def show_zoom(self) -> None:
        """The zoom's percentage; the bar's buttons only while an image is shown."""
        shown = self.viewer.has_image() and self.showing_image
        self.zoom_label.setText(f"{self.viewer.zoom * 100:.0f} %" if shown else "")
        for button in (*self.mode_buttons.buttons(), self.before_button, *self.zoom_buttons):
            button.setEnabled(shown)

    def show_image(self, image: QImage, overlay: QImage | None, editable: bool) -> None:
        """``image`` (with ``overlay`` over it); ``editable``: redrawn edit by edit."""
        self.view_stack.setCurrentWidget(self.viewer)
        self.viewer.set_image(image, editable=editable)
        self.viewer.set_overlay(overlay)
        self.show_zoom()

    @property
    def showing_image(self) -> bool:
        """The view shows an image (not the drop zone)."""
        return self.view_stack.currentWidget() is self.viewer

    def update_region(self, image: QImage, overlay: QImage | None, box: Box) -> None:
        """Redraw only ``box`` of the image shown (and of its overlay)."""
        self.viewer.update_region(image, box)
        if overlay is not None:
            self.viewer.update_overlay(overlay, box)

    def show_no_image(self, entry: QueueEntry | None, queued: int) -> None:
        """The drop zone, saying why there is no image: none selected (of ``queued``), or
        ``entry`` has no result to show (failed, not processed, or still coming)."""
        self.viewer.set_image(None)
        self.notice.show_for(None)
        self.view_stack.setCurrentWidget(self.drop_zone)
        self.show_zoom()
        if entry is None and queued:
            self.drop_zone.show_message("No image selected", "Select an image in the queue.")
        elif entry is None:
            self.drop_zone.show_empty()
        elif entry.status is Status.FAILED:
            self.drop_zone.show_message(f"{entry.name} could not be processed", entry.error)
        elif entry.status is Status.STOPPED:
            self.drop_zone.show_message(f"{entry.name} was not processed", entry.error)
        else:
            self.drop_zone.show_message(f"{entry.name}", waiting_state(entry).capitalize())
