"""Shared fixtures: a tiny synthetic ONNX model, the real u2netp, real photos."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
SAMPLE = ROOT / "assets" / "sample.jpg"


def real_photos() -> list[Path]:
    """Public-domain photos shipped with the tests (see tests/data/SOURCES.md)."""
    return [SAMPLE, *sorted(p for p in DATA.iterdir() if p.suffix in (".jpg", ".png"))]


def build_tiny_model(path: Path, size: int = 32, dynamic: bool = False) -> Path:
    """A U²-Net-shaped stand-in: (1,3,S,S) -> (1,1,S,S), brighter pixels -> foreground.

    Output = sigmoid(4 * mean over channels), the mean computed by a 1x1 convolution
    (so that quantization has a Conv to work on); two side outputs like U²-Net's.
    """
    import onnx
    from onnx import TensorProto, helper

    dim = "S" if dynamic else size
    inp = helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 3, dim, dim])
    outs = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 1, dim, dim])
        for name in ("d0", "d1", "d2")
    ]
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [], [4.0])
    weight = helper.make_tensor("w", TensorProto.FLOAT, [1, 3, 1, 1], [1 / 3] * 3)
    bias = helper.make_tensor("b", TensorProto.FLOAT, [1], [0.0])
    nodes = [
        helper.make_node("Conv", ["input.1", "w", "b"], ["m"], kernel_shape=[1, 1]),
        helper.make_node("Mul", ["m", "scale"], ["ms"]),
        helper.make_node("Sigmoid", ["ms"], ["d0"]),
        helper.make_node("Identity", ["d0"], ["d1"]),
        helper.make_node("Identity", ["d0"], ["d2"]),
    ]
    graph = helper.make_graph(nodes, "tiny_u2net", [inp], outs, initializer=[scale, weight, bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny.onnx")


@pytest.fixture(scope="session")
def u2netp_path() -> Path:
    """The real u2netp, obtained and hash-verified through the project's model store."""
    from bgremover.models import ModelStore

    return ModelStore().ensure("u2netp")


@pytest.fixture(scope="session")
def u2netp_remover(u2netp_path: Path):
    from bgremover import Remover

    remover = Remover("u2netp", providers="cpu")
    remover.load()
    return remover


@pytest.fixture()
def rgb_gradient() -> np.ndarray:
    """A 48 x 64 RGB image: dark left, bright right."""
    ramp = np.linspace(0, 255, 64, dtype=np.float64)
    img = np.repeat(ramp[None, :, None], 48, axis=0).repeat(3, axis=2)
    return img.astype(np.uint8)


def run_cli(*args: str, env: dict[str, str] | None = None, check: bool = False):
    """Run `python -m bgremover ARGS` in a subprocess; returns CompletedProcess."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "bgremover", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=600,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def run_gui(*args: str, timeout: int = 600):
    """Run `bgremover-gui ARGS` offscreen in a subprocess with isolated settings."""
    import tempfile

    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": tempfile.mkdtemp()}
    code = "import sys; from bgremover.gui import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
