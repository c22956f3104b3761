"""How the app's parts are wired: what a light module loads, and what a change emits."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.usefixtures("isolated_settings")

#: Engine modules that load NumPy, OpenCV or the model session: none of them may be
#: loaded by the status bar's module (it shows what jobs report, through gui/results.py).
HEAVY = (
    "cv2",
    "numpy",
    "onnxruntime",
    "bgremover.engine.pipeline",
    "bgremover.export.compose",
    "bgremover.mask.refine",
    "bgremover.touchup.edit",
    "bgremover.network.session",
    "bgremover.files.imaging",
    "bgremover.export.output",
    "bgremover.compare.comparison",
    "bgremover.engine.batch",
    "bgremover.gui.worker",
    "bgremover.gui.imageconv",
)


@pytest.mark.parametrize("module", ["bgremover.gui.status", "bgremover.gui.results"])
def test_status_and_results_load_none_of_the_engine(module: str) -> None:
    """In a fresh interpreter: importing the module loads no heavy engine module."""
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = set(proc.stdout.split())
    assert module in loaded
    assert sorted(loaded.intersection(HEAVY)) == []


def test_one_format_change_is_emitted_once(qtbot) -> None:
    """Choosing another format in the Export panel reaches the window as one change."""
    from bgremover.gui.settings import Settings
    from bgremover.gui.settings_panel import SettingsPanel
    from bgremover.network.store import ModelStore

    panel = SettingsPanel(Settings(), ModelStore())
    qtbot.addWidget(panel)
    emitted: list[dict] = []
    panel.changed.connect(emitted.append)
    box = panel.export.format_box
    target = next(box.itemData(i) for i in range(box.count()) if i != box.currentIndex())
    box.setCurrentIndex(box.findData(target))
    formats = [changes for changes in emitted if "output_format" in changes]
    assert formats == [{"output_format": target, "preset": ""}]
