"""The touch-up tools' table (bgremover.tools.TOOLS): every part of bgremover that knows
a tool reads it, so the engine, an edits file and the app list the same tools, and a
tool not in the table is refused in words wherever it turns up."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bgremover.edit import Edits, Operation, load_edits
from bgremover.errors import EditsError
from bgremover.tools import TOOLS, Kind, tool_named

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
