"""The engine and the CLI never import Qt; --version never imports ONNX Runtime."""

from __future__ import annotations

import subprocess
import sys

from conftest import SAMPLE


def run_python(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_engine_imports_without_qt() -> None:
    out = run_python(
        "import sys, bgremover, bgremover.engine.pipeline, bgremover.engine.batch, bgremover.cli, "
        "bgremover.network.models, bgremover.mask.metrics\n"
        "print(sorted(m for m in sys.modules if m.startswith(('PySide6', 'shiboken'))))"
    )
    assert out.strip() == "[]"


def test_cli_run_never_imports_qt(tmp_path, tiny_model) -> None:
    out = run_python(
        "import sys\nfrom bgremover.cli import main\n"
        f"rc = main(['remove', {str(SAMPLE)!r}, '-o', {str(tmp_path)!r}, '--model', "
        f"{str(tiny_model)!r}, '-q'])\n"
        "print(rc, any(m.startswith('PySide6') for m in sys.modules))"
    )
    assert out.split() == ["0", "False"]


def test_version_skips_heavy_imports() -> None:
    out = run_python(
        "import sys\nfrom bgremover.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print([m for m in ('onnxruntime', 'numpy', 'PIL') if m in sys.modules])"
    )
    assert out.strip().splitlines()[-1] == "[]"
