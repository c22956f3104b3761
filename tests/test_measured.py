"""``bgremover bench --save`` and ``--providers auto``: auto runs what was measured here.

The bench's parity and its saved file on a real (tiny) model through the real command; the
rule that picks from a saved measurement; a measurement of another machine or ONNX Runtime
ignored; the app's provider choice showing the figures. tests/test_openvino.py runs the
same on a second provider where onnxruntime-openvino is installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bgremover import Remover
from bgremover.network import measured
from bgremover.network.measured import MIN_IOU, Measurement
from bgremover.network.session import AUTO_ORDER, CPU, available_providers
from bgremover.network.store import ModelStore

from conftest import cli

FAST = "FastExecutionProvider"
WRONG = "WrongExecutionProvider"


def rows(*extra: Measurement) -> list[Measurement]:
    return [
        Measurement(CPU, "fp32", 120.0, 0.0, 1.0, 1.0, 291.0),
        Measurement(CPU, "int8", 80.0, 0.0, 1.0, 0.97),  # saved before memory was kept
        *extra,
    ]


def test_bench_save_measures_parity_and_auto_then_reads_it(tmp_path: Path, tiny_model: Path):
    home = tmp_path / "home"
    proc = cli("bench", "-m", str(tiny_model), "--runs", "2", "--save", "--json", "-q",
               home=home, check=True)  # fmt: skip
    report = json.loads(proc.stdout)
    table = {(r["provider"], r["precision"]): r for r in report["inference"]}
    assert set(table) >= {(CPU, "fp32"), (CPU, "int8")}
    assert report["parity_photos"] == 7  # the calibration photos shipped
    cpu = table[(CPU, "fp32")]
    assert cpu["max_abs_vs_cpu"] == 0.0 and cpu["min_iou_vs_cpu"] == 1.0
    assert report["auto"] == {"fp32": CPU, "int8": CPU}
    saved = Path(report["saved"])
    assert saved == home / "bench" / "tiny.json"
    loaded = measured.load(home, "tiny", 0)
    assert loaded is not None and {(m.provider, m.precision) for m in loaded} == set(table)
    remover = Remover(str(tiny_model), store=ModelStore(home))
    assert remover.providers == (CPU,)
    assert remover.load().active == (CPU,)
    # Measured at another thread count, it does not apply.
    assert measured.load(home, "tiny", 1) is None


def test_a_measurement_of_another_machine_or_runtime_is_ignored(tmp_path: Path):
    path = measured.save(tmp_path, "u2netp", 0, rows())
    assert measured.load(tmp_path, "u2netp", 0) == rows()
    record = json.loads(path.read_text())
    record["machine"]["onnxruntime"] = "0.1.0"
    path.write_text(json.dumps(record))
    assert measured.load(tmp_path, "u2netp", 0) is None
    path.write_text("{ not json")
    assert measured.load(tmp_path, "u2netp", 0) is None
    # Nothing measured: auto is the fixed order, as before.
    remover = Remover("u2netp", store=ModelStore(tmp_path))
    offered = set(available_providers())
    assert remover.providers == (*(p for p in AUTO_ORDER if p in offered), CPU)


def test_auto_runs_the_fastest_provider_whose_masks_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WRONG is fastest but moves the masks; FAST agrees: auto runs FAST, then CPU. A
    provider no longer offered is passed over. (The build's list of providers is widened
    for the rule; tests/test_openvino.py runs a real second provider.)"""
    fast = Measurement(FAST, "fp32", 90.0, 0.002, 0.999, 0.999)
    wrong = Measurement(WRONG, "fp32", 40.0, 0.4, MIN_IOU - 0.1, MIN_IOU - 0.1)
    offered = [FAST, WRONG, CPU]
    monkeypatch.setattr(measured, "provider_choices", lambda: offered)
    monkeypatch.setattr(measured, "machine", lambda: {"here": True})
    measured.save(tmp_path, "u2netp", 0, rows(fast, wrong))
    store = ModelStore(tmp_path)
    assert Remover("u2netp", store=store).providers == (FAST, CPU)
    # int8: only the CPU was measured; an explicit choice is kept as asked.
    assert Remover("u2netp", store=store, precision="int8").providers == (CPU,)
    assert Remover("u2netp", store=store, providers="cpu").providers == (CPU,)
    offered.remove(FAST)
    assert Remover("u2netp", store=store).providers == (CPU,)


def test_the_settings_show_the_measured_figures(qtbot, tmp_path: Path, isolated_settings):
    from PySide6.QtCore import Qt

    from bgremover.gui.settings import Settings
    from bgremover.gui.settings_panel import SettingsPanel

    measured.save(tmp_path, "u2netp", 0, rows())
    panel = SettingsPanel(Settings(), ModelStore(tmp_path))
    qtbot.addWidget(panel)
    box = panel.provider_box
    texts = [box.itemText(i) for i in range(box.count())]
    assert texts[0] == "Auto: CPU"
    assert "CPU — 120 ms" in texts
    cpu = texts.index("CPU — 120 ms")
    assert box.itemData(cpu, Qt.ItemDataRole.ToolTipRole).startswith(
        "120 ms per inference, 291 MB, measured on this machine"
    )
    panel.precision_box.setCurrentIndex(panel.precision_box.findData("int8"))
    assert "CPU — 80 ms" in [box.itemText(i) for i in range(box.count())]
    assert box.itemData(cpu, Qt.ItemDataRole.ToolTipRole).startswith("80 ms per inference, ")
    panel.threads_box.setValue(3)  # measured at automatic threads only
    assert [box.itemText(i) for i in range(box.count())][:2] == ["Auto", "CPU"]


def test_the_faithful_recipe_builds_a_model_without_conv_relu(tmp_path: Path, tiny_model):
    """The tiny model has no Conv -> ReLU for the rewrite to measure: the int8 build went on
    with ORT's answer to an empty output list (every output) and failed."""
    remover = Remover(str(tiny_model), precision="int8", store=ModelStore(tmp_path))
    assert remover.load().active == (CPU,)
