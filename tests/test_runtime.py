"""ONNX Runtime and the app: loaded before Qt, the wheel that offers each provider, and
what a user is told when the runtime or its GPU libraries are missing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from bgremover.network import session

from conftest import DATA, ROOT

# Records the order in which the app's process first imports each top-level package.
ORDER_HOOK = textwrap.dedent(
    """
    import sys
    order = []

    class Recorder:
        def find_spec(self, name, path=None, target=None):
            top = name.partition(".")[0]
            if top in ("onnxruntime", "PySide6") and top not in order:
                order.append(top)
            return None

    sys.meta_path.insert(0, Recorder())
    import atexit
    atexit.register(lambda: print("IMPORT-ORDER", ",".join(order)))
    """
)


def run_entry(code: str, tmp_path: Path, env: dict[str, str] | None = None):
    full = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-c", ORDER_HOOK + code],
        capture_output=True,
        text=True,
        env=full,
        cwd=tmp_path,
        timeout=600,
    )


def test_the_app_loads_onnxruntime_before_qt(tmp_path: Path, u2netp_path: Path) -> None:
    """On Windows, Qt's older msvcp140.dll loaded first makes ONNX Runtime >= 1.21 fail
    to initialise: the app's entry point (the console script's target) loads ORT first."""
    shot = tmp_path / "shot.png"
    args = ["--screenshot", str(shot), str(DATA / "skimage_chelsea.png")]
    proc = run_entry(f"from bgremover.gui import main; raise SystemExit(main({args!r}))", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "IMPORT-ORDER onnxruntime,PySide6" in proc.stdout
    assert shot.exists()


def test_the_bundles_entry_point_goes_through_the_same_start(tmp_path: Path) -> None:
    entry = (ROOT / "packaging" / "entry_gui.py").read_text(encoding="utf-8")
    assert "from bgremover.gui import main" in entry  # the function tested above


def test_a_runtime_that_cannot_load_is_said_plainly(tmp_path: Path) -> None:
    """A broken ONNX Runtime (as on Windows without the newer MSVC runtime) stops the app
    with what happened and what to do, instead of a traceback on the first image."""
    fake = tmp_path / "shadow" / "onnxruntime"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "raise ImportError('DLL load failed while importing onnxruntime_pybind11_state: "
        "A dynamic link library (DLL) initialization routine failed.')\n",
        encoding="utf-8",
    )
    shot = tmp_path / "shot.png"
    proc = run_entry(
        f"from bgremover.gui import main; raise SystemExit(main(['--screenshot', {str(shot)!r}]))",
        tmp_path,
        env={"PYTHONPATH": os.pathsep.join([str(tmp_path / "shadow"), str(ROOT)])},
    )
    assert proc.returncode == 2, proc.stderr
    assert "ONNX Runtime, which runs the models, could not be loaded" in proc.stderr
    assert "(DLL) initialization routine failed" in proc.stderr
    assert "pip install --force-reinstall onnxruntime" in proc.stderr  # the fix, off Windows
    assert "IMPORT-ORDER onnxruntime,PySide6" in proc.stdout
    assert not shot.exists()


def test_two_runtime_wheels_installed_together_are_named_with_the_fix() -> None:
    assert session.runtime_conflict(["onnxruntime"]) is None
    text = session.runtime_conflict(["onnxruntime", "onnxruntime-gpu"])
    assert text is not None
    assert "onnxruntime and onnxruntime-gpu are installed together" in text
    assert "pip uninstall -y onnxruntime onnxruntime-gpu && pip install onnxruntime-gpu" in text
    # This environment has the CPU wheel only: nothing to report.
    assert session.installed_runtimes() == ["onnxruntime"]
    assert session.runtime_conflict() is None


def test_a_provider_this_build_lacks_says_which_wheel_offers_it(tiny_model: Path) -> None:
    _, info = session.create_session(
        tiny_model, ("CUDAExecutionProvider", "DmlExecutionProvider", session.CPU)
    )
    assert info.active == (session.CPU,)
    cuda, dml = info.fallbacks
    assert "install bgremover[gpu]: onnxruntime-gpu in place of onnxruntime" in cuda
    assert "bgremover[directml]" in dml and "onnxruntime-directml" in dml


def test_the_cpu_build_has_no_cuda_library_to_check() -> None:
    assert session.cuda_problem() is None
    assert session.load_runtime().__name__ == "onnxruntime"
