"""The status bar: one owner of its text, by priority; text shortened at a word; the time
left of a model's preparation from its measured rate (a fake clock: no sleeps)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest
from PySide6.QtWidgets import QLabel, QMainWindow

from bgremover.engine.pipeline import EngineConfig
from bgremover.gui.results import Preparing
from bgremover.gui.status import Pace, PreparationBar, Priority, StatusText, clock_text
from bgremover.gui.views import ElidedLabel, elide_at_word

PROVIDER = "This image: u2netp fp32 on CPU"
HINT = "Edit mode: B keep, R remove; [ ] brush size; O overlay; middle button pans; E when done."


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def shown(label: QLabel) -> str:
    """What a label draws (an ElidedLabel's text() is the whole text)."""
    return QLabel.text(label)


# The time left


def test_the_time_left_follows_the_rate_after_a_slow_first_step() -> None:
    """Setting up took a minute, then each step 2 s: from the second step on the estimate
    is the true time left, where the average since the start stood at twice it."""
    clock = FakeClock()
    pace = Pace(clock)
    pace.start(0)
    clock.now += 60  # imports, reading, shape inference: the first step
    pace.update(1)
    assert pace.seconds_left(1, 100) == pytest.approx(99 * 60)  # all it knows so far
    for step in range(2, 21):
        clock.now += 2
        pace.update(step)
        assert pace.seconds_left(step, 100) == pytest.approx((100 - step) * 2)
    average_since_start = (clock.now - 1000.0) / 20 * 80
    assert average_since_start > 2 * pace.seconds_left(20, 100)


def test_the_time_left_converges_when_the_pace_changes() -> None:
    """Steps of 1 s, then of 3 s: the estimate moves to the new pace within a minute of
    it, and steadily (each estimate between the last one and the truth)."""
    clock = FakeClock()
    pace = Pace(clock)
    pace.start(0)
    for step in range(1, 41):
        clock.now += 1
        pace.update(step)
    assert pace.seconds_left(40, 400) == pytest.approx(360, rel=0.01)
    errors = []
    for step in range(41, 81):
        clock.now += 3
        pace.update(step)
        errors.append(abs(pace.seconds_left(step, 400) - (400 - step) * 3) / ((400 - step) * 3))
    assert all(later <= earlier for earlier, later in itertools.pairwise(errors))
    assert errors[20] < 0.1 and errors[-1] < 0.01  # a minute, two minutes at 3 s a step


def test_no_time_left_without_progress_a_total_or_two_seconds() -> None:
    clock = FakeClock()
    pace = Pace(clock)
    pace.start(0)
    assert pace.seconds_left(0, 60) is None  # nothing measured
    clock.now += 1
    pace.update(30)
    assert pace.seconds_left(30, 60) is None  # under two seconds seen
    clock.now += 1
    pace.update(30)  # no progress: the rate stays, 30 steps a second
    assert pace.seconds_left(30, 60) == pytest.approx(1)
    assert pace.seconds_left(30, None) is None
    pace.update(5)  # started over
    assert pace.rate is None


def test_a_clock_says_hours_minutes_and_seconds() -> None:
    assert [clock_text(s) for s in (5, 59.6, 170, 3723)] == ["0:05", "1:00", "2:50", "1:02:03"]


def test_the_preparation_shows_its_time_left_whole_and_names_the_model_made(qtbot) -> None:
    """Best's int8 build names IS-Net, the model it makes; in a narrow bar the line is
    shortened at a word and the time left stays whole ("ab…" was all that showed)."""
    bar = PreparationBar()
    qtbot.addWidget(bar)
    clock = FakeClock()
    bar.pace.clock = clock
    best = EngineConfig(model="best")
    bar.show_progress(3, Preparing(best, "quantize", 0, 140, model="isnet-imgly"))
    assert bar.label.text() == "Making the int8 version of isnet-imgly (once): 0 of 140 steps"
    for step in (4, 20):
        clock.now += 10
        bar.show_progress(3, Preparing(best, "quantize", step, 140, model="isnet-imgly"))
    # 16 steps in the last 10 s: 120 steps left take 75 s.
    assert bar.label.text().endswith(": 20 of 140 steps, about 1:15 left")
    bar.show()
    narrow = bar.label.fontMetrics().horizontalAdvance("Making the int8 … about 1:15 left")
    bar.label.setFixedWidth(narrow + 4)
    drawn = shown(bar.label)
    assert drawn.endswith("… about 1:15 left") and drawn.startswith("Making")
    words = drawn.removesuffix("… about 1:15 left").split()
    assert words == bar.label.text().split()[: len(words)]  # whole words only
    assert bar.label.toolTip() == bar.label.text()


# Shortened at a word


def test_text_is_shortened_at_a_word(qtbot) -> None:
    label = ElidedLabel(at_word=True)
    qtbot.addWidget(label)
    fm = label.fontMetrics()
    width = fm.horizontalAdvance(HINT) // 2
    cut = elide_at_word(HINT, fm, width)
    assert cut.endswith("…") and fm.horizontalAdvance(cut) <= width
    head = cut.removesuffix("…")
    assert HINT.startswith(head) and HINT[len(head)] in " ;,"  # ends where a word ends
    assert elide_at_word(HINT, fm, fm.horizontalAdvance(HINT)) == HINT
    assert elide_at_word("Unbreakable", fm, 5) == "…"  # never half a word
    assert elide_at_word("Downloading it", fm, 5, ", about 0:10 left") == "… about 0:10 left"


# One owner, by priority


@pytest.fixture()
def window(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)
    window.resize(900, 300)
    text = StatusText(window.statusBar())
    window.show()
    qtbot.waitExposed(window)
    return window, text


def test_the_highest_priority_alone_shows_and_the_others_come_back(window) -> None:
    """The provider, a message and a task at once: only the task shows; when it ends the
    message does, and when the message's time is up, the provider again."""
    from bgremover.gui.save_many import SaveManyBar

    win, text = window
    bar = win.statusBar()
    text.provider_label.setText(PROVIDER)
    assert text.shown is Priority.PROVIDER and text.provider_label.isVisible()
    assert not text.message.isVisible()
    # Saving many images: a task added to the bar by its own module, not this one.
    saving = SaveManyBar()
    bar.addPermanentWidget(saving)
    saving.show()
    bar.showMessage("Obtaining isnet-imgly from npm package @imgly/background-removal-data")
    assert text.shown is Priority.TASK
    assert not text.provider_label.isVisible() and shown(text.message) == ""
    saving.hide()  # the save ended: the message shows, alone
    assert text.shown is Priority.MESSAGE and shown(text.message).startswith("Obtaining")
    assert not text.provider_label.isVisible()
    text.set_hint(HINT)
    assert text.shown is Priority.MESSAGE  # the hint waits under the message
    bar.clearMessage()  # its time is up
    assert text.shown is Priority.HINT and text.message.text() == HINT
    text.set_hint("")
    assert text.shown is Priority.PROVIDER and text.provider_label.isVisible()
    assert not text.message.isVisible()


def test_a_message_that_times_out_gives_the_room_back(window, qtbot) -> None:
    win, text = window
    text.provider_label.setText(PROVIDER)
    win.statusBar().showMessage("Saved photo.png", 50)
    assert text.shown is Priority.MESSAGE and not text.provider_label.isVisible()
    qtbot.waitUntil(lambda: text.shown is Priority.PROVIDER, timeout=5000)
    assert text.provider_label.isVisible()


def test_qt_draws_no_message_of_its_own_and_long_text_ends_at_a_word(window, qtbot) -> None:
    """The owner's text is the bar's first part and spans it, so Qt's own message (drawn
    left of the first permanent part, cut at its edge: "middle buttcThis image") has no
    room; a long message is shortened at a word, whole in its tooltip."""
    win, text = window
    win.resize(420, 300)
    bar = win.statusBar()
    prep = PreparationBar()
    bar.addPermanentWidget(prep)
    text.provider_label.setText(PROVIDER)
    bar.showMessage(HINT, 10000)
    qtbot.waitUntil(lambda: text.message.width() < text.fontMetrics().horizontalAdvance(HINT))
    assert text.geometry().left() <= 6  # Qt's message rect: 6 px from the left, to this
    drawn = shown(text.message)
    assert drawn.endswith("…") and HINT.startswith(drawn.removesuffix("…"))
    assert HINT[len(drawn) - 1] in " ;,"
    assert text.message.toolTip() == HINT
    # A model's preparation takes the room from the message, then gives it back.
    prep.show_progress(1, Preparing(EngineConfig(), "download", 1_000_000, 4_574_861))
    assert text.shown is Priority.TASK and shown(text.message) == ""
    prep.finish(1)
    assert text.shown is Priority.MESSAGE


# Saying what ran


def test_best_says_the_models_that_ran_and_their_precisions() -> None:
    from bgremover.gui.result_page import made_text
    from bgremover.gui.worker import models_ran

    members = (
        SimpleNamespace(spec=SimpleNamespace(name="u2netp"), precision="fp32"),
        SimpleNamespace(spec=SimpleNamespace(name="isnet-imgly"), precision="int8"),
    )
    remover = SimpleNamespace(members=members)
    both = SimpleNamespace(
        model="best",
        models=("u2netp", "isnet-imgly"),
        precision="fp32",
        guard=None,
        providers=("CPUExecutionProvider",),
    )
    ran = models_ran(remover, both)  # type: ignore[arg-type]
    assert ran == ("u2netp fp32", "isnet-imgly int8")
    assert made_text(both, ran) == "This image: best (u2netp fp32 + isnet-imgly int8) on CPU"
    guarded = SimpleNamespace(**{**vars(both), "guard": SimpleNamespace(ran_fp32=True)})
    assert models_ran(remover, guarded)[1] == "isnet-imgly fp32 (int8 was unsure of it)"  # type: ignore[arg-type]
    first_only = SimpleNamespace(**{**vars(both), "models": ("u2netp",)})
    assert models_ran(remover, first_only) == ("u2netp fp32",)  # type: ignore[arg-type]
    single = SimpleNamespace(members=())
    assert models_ran(single, both) == ()  # type: ignore[arg-type]


def test_bests_preparation_names_the_model_it_makes(tmp_path) -> None:
    """Each of a combined model's models reports its preparation under its own name: the
    status bar says "isnet-imgly", not "best"."""
    from bgremover.engine.pipeline import Remover
    from bgremover.gui.worker import _preparing
    from bgremover.network.store import ModelStore

    reported: list[Preparing] = []
    ctx = SimpleNamespace(token=SimpleNamespace(cancelled=False), report=reported.append)
    best = EngineConfig(model="best")
    remover = Remover(best, store=ModelStore(tmp_path), progress=_preparing(ctx, best))  # type: ignore[arg-type]
    for member in remover.members:
        member._progress("quantize", 1, 10)
    assert [(p.model, p.config.model) for p in reported] == [
        ("u2netp", "best"),
        ("isnet-imgly", "best"),
    ]


def test_the_windows_status_bar_hosts_save_all_and_edit_modes_keys(qtbot, isolated_settings):
    """In the app's window: Save All's progress (its own module's widget) takes the
    provider's place, and edit mode's keys stay under any message while the mode lasts."""
    from conftest import make_window

    window = make_window(qtbot)
    window.resize(1024, 700)
    text, bar = window.status_line.text, window.statusBar()
    bar.clearMessage()
    window.provider_label.setText(PROVIDER)
    assert text.shown is Priority.PROVIDER and window.provider_label.isVisible()
    saving = window.save_many.bar
    saving.start(19, isolated_settings / "out")
    assert text.shown is Priority.TASK and not window.provider_label.isVisible()
    assert saving.label.text() == "Saving 1 of 19 to out…"
    saving.hide()
    assert text.shown is Priority.PROVIDER and window.provider_label.isVisible()
    window.touchup_menu.edit_mode.setChecked(True)
    assert text.shown is Priority.HINT and text.message.text().startswith("Edit mode: ")
    bar.showMessage("Took back the add click at (10, 20); Undo puts it back.", 6000)
    assert text.shown is Priority.MESSAGE
    bar.clearMessage()
    assert text.shown is Priority.HINT
    window.touchup_menu.edit_mode.setChecked(False)
    assert text.shown is Priority.PROVIDER
