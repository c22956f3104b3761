"""The touch-up tools' table (bgremover.touchup.tools.TOOLS): every part of bgremover that knows
a tool reads it, so the engine, an edits file and the app list the same tools, and a
tool not in the table is refused in words wherever it turns up."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover.errors import EditsError
from bgremover.files.imaging import read_image
from bgremover.touchup.edit import Apply, Editor, Edits, Operation, apply_edits, load_edits
from bgremover.touchup.tools import TOOLS, Kind, keep_largest, tool_named

from conftest import DATA, cli

PHOTO = DATA / "skimage_chelsea.png"


def edits_file(tmp_path: Path, *operations: dict) -> Path:
    path = tmp_path / "edits.json"
    data = {"format": "bgremover-edits", "version": 1, "size": [451, 300]}
    path.write_text(json.dumps({**data, "operations": list(operations)}), encoding="utf-8")
    return path


def assert_refuses_lasso(exc: EditsError) -> None:
    """What is wrong (the tool's name), why (this bgremover has no such tool) and what to
    do (the tools there are; a newer bgremover, or the name corrected)."""
    assert "Unknown edit tool 'lasso'" in exc.message
    assert "no tool of that name" in exc.message
    assert all(name in exc.fix for name in TOOLS)
    assert "newer bgremover" in exc.fix and "correct the tool's name" in exc.fix


def test_an_unknown_tool_is_refused_in_words_never_taken_for_another() -> None:
    with pytest.raises(EditsError) as made:
        Operation("lasso", ((1.0, 1.0),))
    assert_refuses_lasso(made.value)
    with pytest.raises(EditsError) as looked_up:
        tool_named("lasso")
    assert_refuses_lasso(looked_up.value)
    text = json.dumps(
        {
            "format": "bgremover-edits",
            "version": 1,
            "size": [4, 4],
            "operations": [{"tool": "add", "points": [[1, 1]]}, {"tool": "lasso"}],
        }
    )
    with pytest.raises(EditsError) as read:
        Edits.from_json(text)
    assert_refuses_lasso(read.value)


def test_the_command_line_refuses_edits_with_an_unknown_tool_before_it_runs(
    tmp_path: Path,
) -> None:
    path = edits_file(tmp_path, {"tool": "lasso", "points": [[10, 10]]})
    with pytest.raises(EditsError):
        load_edits(path)
    out = tmp_path / "cut.png"
    proc = cli("remove", str(PHOTO), "-o", str(out), "--edits", str(path))
    assert proc.returncode == 2
    assert "Unknown edit tool 'lasso'" in proc.stderr and "correct the tool's name" in proc.stderr
    assert not out.exists()


def test_every_tool_has_a_complete_record_and_the_edits_file_keeps_it() -> None:
    keys = [t.key.lower() for t in TOOLS.values()]
    assert len(set(keys)) == len(keys)  # no key picks two tools
    for name, t in TOOLS.items():
        assert t.name == name and t.key and t.label and len(t.tip) > 15 and callable(t.apply)
        assert (t.preview is not None) == t.kind.drawn  # what the mouse draws is previewed
    # Each tool's operation, as a file says it, reads back as the same operation.
    given = {
        Kind.BRUSH: {"points": [[3, 4], [9, 9]], "radius": 2.5, "hardness": 0.5},
        Kind.CLICK: {"points": [[3, 4]]},
        Kind.BOX: {"points": [[1, 1], [8, 9]]},
        Kind.WHOLE: {},
        Kind.MASK: {"mask_png": Operation.load(np.zeros((2, 2), np.uint8)).to_json()["mask_png"]},
    }
    for name, t in TOOLS.items():
        op = Operation.from_json({"tool": name, **given[t.kind]})
        assert op.spec is t
        assert Operation.from_json(json.loads(json.dumps(op.to_json()))) == op


@pytest.mark.model
def test_the_app_lists_the_engines_tools_from_their_records(window) -> None:
    from bgremover.gui.editing import edit_mode_hint

    touchup = window.touchup_menu
    made = {**touchup.tool_actions, **touchup.mask_actions, **touchup.file_actions}
    assert sorted(made) == sorted(TOOLS)  # one action per tool, none of its own
    menu = touchup.menu.actions()
    bar = touchup.edit_bar.actions()
    for name, action in made.items():
        t = TOOLS[name]
        assert action.text() == t.label and action.shortcut().toString() == t.key
        assert t.tip in action.toolTip() and action.statusTip() == t.tip
        assert action in menu and action in bar
        assert action.isCheckable() == t.kind.drawn  # a tool to pick, or one applied at once
    hint = edit_mode_hint()
    for t in TOOLS.values():
        if t.kind is not Kind.MASK:
            assert f"{t.key} {t.word.lower()}" in hint
    # The mouse takes only the tools it draws; the menu applies only whole-mask ones.
    with pytest.raises(ValueError, match="not an edit tool used with the mouse"):
        window.editing.tools.set_tool("lasso")
    with pytest.raises(ValueError, match="not an edit tool used with the mouse"):
        window.editing.tools.set_tool("reset")
    with pytest.raises(ValueError, match="whole mask"):
        window.editing.apply_tool("restore")


def test_the_app_waits_for_the_model_for_the_tools_that_run_it() -> None:
    pytest.importorskip("PySide6")
    from bgremover.gui.worker import needs_model

    for name, t in TOOLS.items():
        points = {Kind.CLICK: ((1.0, 1.0),), Kind.BOX: ((0.0, 0.0), (4.0, 4.0))}
        op = Operation(
            name,
            points.get(t.kind, ((1.0, 1.0),)),
            radius=2.0,
            mask_png=b"png" if t.kind is Kind.MASK else b"",
        )
        assert needs_model(op) == t.needs_model
    assert [n for n, t in TOOLS.items() if t.needs_model] == ["box"]
    assert not needs_model(None)


# -- Keep Largest Region: a tool added as one record and its apply function ------------


def soft_disk(shape: tuple[int, int], cx: float, cy: float, r: float) -> np.ndarray:
    """A disk of radius ``r`` whose edge fades over 4 pixels (a model's soft edge)."""
    yy, xx = np.mgrid[0 : shape[0], 0 : shape[1]]
    d = np.hypot(xx + 0.5 - cx, yy + 0.5 - cy)
    return np.clip(np.rint(255 * (r + 2 - d) / 4), 0, 255).astype(np.uint8)


def test_keep_largest_keeps_the_subject_and_drops_the_islands() -> None:
    shape = (240, 320)
    subject = soft_disk(shape, 100, 120, 60)
    joined = soft_disk(shape, 215, 120, 10)  # joined to the subject by a faint bridge
    island = soft_disk(shape, 280, 40, 15)
    alpha = np.maximum.reduce([subject, joined, island])
    alpha[118:122, 160:206] = np.maximum(alpha[118:122, 160:206], 60)
    alpha[220:223, 20:23] = 200  # a speck
    alpha[180:240, 250:320] = np.maximum(alpha[180:240, 250:320], 5)  # faint haze
    new = keep_largest(alpha)
    assert (new <= alpha).all()  # it only takes away
    keep = soft_disk(shape, 100, 120, 64) > 0  # the subject with all its soft edge
    keep |= soft_disk(shape, 215, 120, 14) > 0
    keep[118:122, 160:206] = True
    assert np.array_equal(new[keep], alpha[keep])
    assert (new[~keep] == 0).all()  # the island, its faint fringe, the speck, the haze
    assert alpha[40, 280] == 255 and alpha[221, 21] == 200 and alpha[200, 300] == 5
    # Nothing opaque: nothing to choose between, nothing changes.
    faint = np.full(shape, 40, np.uint8)
    assert keep_largest(faint) is faint and keep_largest(np.zeros(shape, np.uint8)).max() == 0


def test_keep_largest_is_an_edit_like_the_others() -> None:
    shape = (120, 160)
    rgb = np.full((*shape, 3), 128, np.uint8)
    base = np.maximum(soft_disk(shape, 50, 60, 30), soft_disk(shape, 140, 20, 8))
    editor = Editor(rgb, base)
    editor.apply(Operation.stroke("restore", [(150, 110)], 6))  # another island
    before = editor.alpha.copy()
    box = editor.apply(Operation("largest"))
    assert np.array_equal(editor.alpha, keep_largest(before))
    assert editor.alpha[20, 140] == 0 and editor.alpha[110, 150] == 0
    ys, xs = np.nonzero(editor.alpha != before)
    assert box == (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)  # only that is redrawn
    assert box[0] > 50 + 30 + 2  # the islands' box: the subject is not in it
    editor.undo()
    assert np.array_equal(editor.alpha, before)
    editor.redo()
    saved = json.loads(editor.edits.to_json())
    assert saved["operations"][-1] == {"tool": "largest"}
    again = Edits.from_json(json.dumps(saved))
    assert np.array_equal(apply_edits(again, rgb, base), editor.alpha)


@pytest.mark.model
def test_keep_largest_replays_in_the_command_line(u2netp_remover, tmp_path: Path) -> None:
    loaded = read_image(PHOTO)
    alpha = u2netp_remover.remove(loaded).alpha
    w = alpha.shape[1]
    editor = Editor(loaded.rgb, alpha)
    editor.apply(Operation.stroke("restore", [(w - 12, 12)], 8))  # an island in a corner
    assert editor.alpha[12, w - 12] == 255 and alpha[12, w - 12] == 0
    editor.apply(Operation("largest"))
    expected = editor.alpha
    assert expected[12, w - 12] == 0
    path = tmp_path / "edits.json"
    path.write_text(editor.edits.to_json(), encoding="utf-8")
    out = tmp_path / "cut.png"
    proc = cli("remove", str(PHOTO), "-o", str(out), "--edits", str(path), "-q")
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(np.asarray(Image.open(out).getchannel("A")), expected)


@pytest.mark.model
def test_keep_largest_is_in_the_app_from_its_record(qtbot, window) -> None:
    from test_gui_first_hour import WAIT_MS, process

    touchup = window.touchup_menu
    largest = touchup.mask_actions["largest"]
    assert largest.shortcut().toString() == "K" and largest.iconText() == "Keep Largest"
    assert largest in touchup.menu.actions() and largest in touchup.edit_bar.actions()
    process(qtbot, window, PHOTO)
    window.select(window.queue.entries()[0])
    window.editing.set_edit_mode(True)
    assert largest.isEnabled() and "K keep largest" in window.statusBar().currentMessage()
    entry = window.current_entry()

    def applied() -> np.ndarray:
        qtbot.waitUntil(lambda: not window.jobs.edits_busy(entry), timeout=WAIT_MS)
        return entry.processed.result.alpha

    w = applied().shape[1]
    window.editing.edit(Apply(Operation.stroke("restore", [(w - 12, 12)], 8)))
    before = applied().copy()
    assert before[12, w - 12] == 255
    largest.trigger()
    assert np.array_equal(applied(), keep_largest(before))
    assert [op.tool for op in entry.edits.operations] == ["restore", "largest"]
    touchup.undo.trigger()
    assert np.array_equal(applied(), before)
