"""int8: calibration data, the quantization itself, the cache, and the commands that show it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover import Remover
from bgremover.errors import ModelError
from bgremover.metrics import edge_band, fidelity, raw_stats
from bgremover.models import REGISTRY, ModelStore, local_spec
from bgremover.quantize import (
    CALIBRATION_DIR,
    DEFAULT_RECIPE,
    RECIPES,
    cached_int8,
    calibration_files,
    calibration_samples,
    ensure_int8,
    get_recipe,
    int8_path,
)

from conftest import SAMPLE, real_photos, run_cli


def test_shipped_calibration_set() -> None:
    files = calibration_files()
    assert len(files) >= 7 and all(f.parent == CALIBRATION_DIR for f in files)
    assert (CALIBRATION_DIR / "SOURCES.md").read_text().count(".jpg") >= len(files)
    samples = list(calibration_samples(files))
    assert len(samples) == 10 * len(files) >= 60  # several dozen views
    assert all(s.ndim == 3 and s.shape[2] == 3 and s.dtype == np.uint8 for s in samples)


def test_recipes_registry() -> None:
    assert DEFAULT_RECIPE in RECIPES and "naive" in RECIPES
    with pytest.raises(ModelError, match="Unknown int8 recipe"):
        get_recipe("nope")


def test_quantize_tiny_model_and_cache(tmp_path: Path, tiny_model: Path) -> None:
    store = ModelStore(tmp_path)
    spec = local_spec(tiny_model)
    seen: list[tuple[int, int]] = []
    path = ensure_int8(spec, store, "naive", progress=lambda d, t: seen.append((d, t)))
    assert path.is_file() and path.parent == store.models_dir / "local"
    assert seen and seen[-1][0] == seen[-1][1]
    import onnx

    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    again = ensure_int8(spec, store, "naive", progress=lambda d, t: seen.append((-1, -1)))
    assert again == path and (-1, -1) not in seen  # cached, not remade
    other = int8_path(store, spec, tiny_model, "naive", calibration=CALIBRATION_DIR)
    assert other != path  # the calibration set is part of the key


def test_int8_remover_on_tiny_model(tmp_path: Path, tiny_model: Path, rgb_gradient) -> None:
    store = ModelStore(tmp_path)
    fp32 = Remover(str(tiny_model), store=store).remove(rgb_gradient)
    int8 = Remover(str(tiny_model), precision="int8", recipe="naive", store=store).remove(
        rgb_gradient
    )
    assert int8.precision == "int8" and int8.raw is not None and int8.raw.shape == (32, 32)
    m = fidelity(fp32.mask, int8.mask, fp32.raw, int8.raw)
    assert m["iou"] > 0.9 and m["mean_abs"] < 0.05


def test_fidelity_metrics() -> None:
    ref = np.zeros((100, 100), np.uint8)
    ref[20:80, 20:80] = 255
    other = ref.copy()
    other[20:80, 75:80] = 0  # a 5-px strip lost at the edge
    m = fidelity(ref, other)
    assert m["iou"] == pytest.approx(55 / 60)
    assert m["max_abs"] == 1.0
    assert m["band_abs"] > m["mean_abs"] > 0
    band = edge_band(ref, radius=2)
    assert band[20, 50] and band[50, 79] and not band[50, 50] and not band[0, 0]
    stats = raw_stats(np.array([[0.0, 0.5], [1.0, 0.5]]))
    assert stats["min"] == 0.0 and stats["max"] == 1.0 and stats["distinct_values"] == 3


@pytest.mark.model
def test_compare_command(tmp_path: Path, u2netp_int8_path: Path) -> None:
    proc = run_cli("compare", str(SAMPLE), "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    sheet = Image.open(tmp_path / "sample.png")
    assert sheet.width > 4 * 300  # input, fp32, int8, heatmap side by side
    data = json.loads((tmp_path / "sample.json").read_text())
    for key in ("mean_abs", "band_abs", "iou", "max_abs", "infer_fp32_s", "infer_int8_s",
                "raw_reference", "raw_other", "providers_int8"):  # fmt: skip
        assert key in data
    assert "1 compared" in proc.stdout


@pytest.mark.model
def test_bench_and_models_list_show_int8(u2netp_int8_path: Path) -> None:
    proc = run_cli("bench", "--runs", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    rows = {(r["provider"], r["precision"]) for r in data["inference"] if "median_ms" in r}
    assert {("CPUExecutionProvider", "fp32"), ("CPUExecutionProvider", "int8")} <= rows
    stages = {"decode", "preprocess", "inference", "postprocess", "refine", "encode"}
    assert set(data["stages"]["fp32"]) == stages
    listing = json.loads(run_cli("models", "list", "--json", check=True).stdout)
    int8 = [m for m in listing["models"] if m["precision"] == "int8"]
    assert int8 and int8[0]["name"] == "u2netp" and Path(int8[0]["path"]).is_file()
    assert cached_int8(ModelStore(), REGISTRY["u2netp"])


def test_faithful_rewrite_keeps_fp32_output(tmp_path: Path, u2netp_path: Path) -> None:
    """The graph rewrite alone (before quantization) leaves u2netp's output unchanged."""
    import onnx
    import onnxruntime as ort
    from onnx import version_converter

    from bgremover.quantize import calibration_samples
    from bgremover.transforms import preprocess
    from bgremover.u2net_graph import prepare_graph

    spec = REGISTRY["u2netp"]
    model = version_converter.convert_version(onnx.load(str(u2netp_path)), 13)
    views = list(calibration_samples(calibration_files()[:2]))
    batches = [preprocess(v, spec.family) for v in views]
    rewritten, border_nodes = prepare_graph(model, batches, tmp_path, lambda: None)
    assert border_nodes, "u2netp's offset channels should need a border correction"
    assert len(rewritten.graph.output) == 1
    path = tmp_path / "rewritten.onnx"
    onnx.save(rewritten, str(path))
    x = preprocess(np.asarray(Image.open(SAMPLE).convert("RGB")), spec.family)
    before = ort.InferenceSession(str(u2netp_path), providers=["CPUExecutionProvider"])
    after = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    a = before.run(None, {"input.1": x})[0]
    b = after.run(None, {"input.1": x})[0]
    assert np.abs(a - b).max() < 1e-3


@pytest.mark.model
def test_faithful_int8_agrees_with_fp32_on_real_photos(u2netp_int8_path: Path) -> None:
    fp32 = Remover("u2netp", refine=False)
    int8 = Remover("u2netp", precision="int8", refine=False)
    ious = []
    for photo in real_photos():  # measured: IoU 0.966 to 0.999, edge band 0.010 to 0.060
        a = fp32.remove(photo)
        b = int8.remove(a.image)
        m = fidelity(a.mask, b.mask)
        assert m["iou"] > 0.95 and m["band_abs"] < 0.08, (photo.name, m)
        ious.append(m["iou"])
    assert np.mean(ious) > 0.98


def test_cancelled_quantization_leaves_nothing(tmp_path: Path, tiny_model: Path) -> None:
    from bgremover.models import DownloadCancelled

    store = ModelStore(tmp_path)
    spec = local_spec(tiny_model)

    def cancel_midway(done: int, total: int) -> None:
        if done >= 3:
            raise DownloadCancelled()

    with pytest.raises(DownloadCancelled, match="nothing was saved"):
        ensure_int8(spec, store, "naive", progress=cancel_midway)
    assert not int8_path(store, spec, tiny_model, "naive").exists()
    leftovers = list(store.models_dir.rglob("*")) if store.models_dir.exists() else []
    assert not [p for p in leftovers if p.is_file()]
