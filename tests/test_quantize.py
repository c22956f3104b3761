"""int8: calibration data, the quantization itself, the cache, and the commands that show it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover import Remover
from bgremover.errors import ModelError
from bgremover.mask.metrics import edge_band, fidelity, iou, raw_stats
from bgremover.network.models import REGISTRY, local_spec
from bgremover.network.quantize import (
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
from bgremover.network.store import ModelStore

from conftest import SAMPLE, cli, real_photos


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


@pytest.mark.parametrize("reduced", [False, True])
def test_weights_are_7_bit_where_the_cpu_lacks_vnni(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch, reduced: bool
) -> None:
    """ORT's int8 convolutions saturate on full-range weights without VNNI: there the int8
    model's weights are 7-bit, and its cache key says so."""
    import onnx
    from onnx import numpy_helper

    from bgremover.network import quantize

    monkeypatch.setattr(quantize, "reduced_range", lambda: reduced)
    store, spec = ModelStore(tmp_path), local_spec(tiny_model)
    path = ensure_int8(spec, store, "naive")
    weights = [
        numpy_helper.to_array(t)
        for t in onnx.load(str(path)).graph.initializer
        if t.data_type == onnx.TensorProto.INT8
    ]
    largest = max(int(np.abs(w.astype(np.int16)).max()) for w in weights)
    assert largest == (64 if reduced else 127)
    monkeypatch.setattr(quantize, "reduced_range", lambda: not reduced)
    assert int8_path(store, spec, tiny_model, "naive") != path


def test_reduced_range_follows_the_cpus_vnni(monkeypatch: pytest.MonkeyPatch) -> None:
    import platform

    from bgremover.network import quantize

    assert isinstance(quantize._cpu_features(), dict)  # NumPy's own table, on this machine
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    # The kernel's flags are read too (AVX-VNNI, which NumPy does not list): a host without it
    monkeypatch.setattr(quantize, "cpu_info", lambda: {"flags": "sse4_2 avx2 fma"})
    monkeypatch.setattr(quantize, "_cpu_features", lambda: {"AVX2": True, "AVX512VNNI": False})
    assert quantize.reduced_range()
    # and one with it (an AVX-VNNI CPU such as Alder Lake, without AVX-512)
    monkeypatch.setattr(quantize, "cpu_info", lambda: {"flags": "avx2 avx_vnni fma"})
    assert not quantize.reduced_range()
    monkeypatch.setattr(quantize, "cpu_info", lambda: {"flags": "sse4_2 avx2 fma"})
    monkeypatch.setattr(quantize, "_cpu_features", lambda: {"AVX2": True, "AVX512VNNI": True})
    assert not quantize.reduced_range()
    monkeypatch.setattr(quantize, "_cpu_features", lambda: None)
    assert not quantize.reduced_range()
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    monkeypatch.setattr(quantize, "_cpu_features", lambda: {"ASIMDDP": True})
    assert not quantize.reduced_range()


def test_int8_remover_on_tiny_model(tmp_path: Path, tiny_model: Path, rgb_gradient) -> None:
    store = ModelStore(tmp_path)
    fp32 = Remover(str(tiny_model), store=store).remove(rgb_gradient)
    # The tiny model's output is a soft ramp (sigmoid of 4 x brightness), undecided over a
    # broad band, so the int8 guard would run fp32: off, to test int8 itself.
    int8 = Remover(
        str(tiny_model), precision="int8", recipe="naive", store=store, int8_guard=False
    ).remove(rgb_gradient)
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
    proc = cli("compare", str(SAMPLE), "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    sheet = Image.open(tmp_path / "sample.png")
    assert sheet.width > 4 * 300  # input, fp32, int8, heatmap side by side
    data = json.loads((tmp_path / "sample.json").read_text())
    for key in ("mean_abs", "band_abs", "iou", "max_abs", "infer_fp32_s", "infer_int8_s",
                "raw_reference", "raw_other", "providers_int8"):  # fmt: skip
        assert key in data
    assert "1 compared" in proc.stdout


@pytest.mark.slow
@pytest.mark.model
def test_bench_and_models_list_show_int8(u2netp_int8_path: Path) -> None:
    proc = cli("bench", "--runs", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    rows = {(r["provider"], r["precision"]) for r in data["inference"] if "median_ms" in r}
    assert {("CPUExecutionProvider", "fp32"), ("CPUExecutionProvider", "int8")} <= rows
    # Parity on the calibration photos: int8 against the CPU's int8 (itself) and its fp32.
    int8_row = next(r for r in data["inference"] if r.get("precision") == "int8")
    assert int8_row["min_iou_vs_cpu"] == 1.0 and int8_row["max_abs_vs_cpu"] == 0.0
    assert 0.8 < int8_row["min_iou_vs_cpu_fp32"] <= 1.0
    # Each session's memory, loaded and run once: int8's weights and activations are the
    # smaller (measured: u2netp 291 MB fp32, 108 MB int8).
    fp32_row = next(r for r in data["inference"] if r.get("precision") == "fp32")
    assert 0 < int8_row["memory_mb"] < fp32_row["memory_mb"]
    assert "saved" not in data  # without --save, auto's choice is left as it was
    stages = {"decode", "preprocess", "inference", "postprocess", "refine", "encode"}
    assert set(data["stages"]["fp32"]) == stages
    listing = json.loads(cli("models", "list", "--json", check=True).stdout)
    int8 = [m for m in listing["models"] if m["precision"] == "int8"]
    assert int8 and int8[0]["name"] == "u2netp" and Path(int8[0]["path"]).is_file()
    assert cached_int8(ModelStore(), REGISTRY["u2netp"])


@pytest.mark.slow
def test_faithful_rewrite_keeps_fp32_output(tmp_path: Path, u2netp_path: Path) -> None:
    """The graph rewrite alone (before quantization) leaves u2netp's output unchanged."""
    import onnx
    import onnxruntime as ort
    from onnx import version_converter

    from bgremover.network.quantize import calibration_samples
    from bgremover.network.transforms import preprocess
    from bgremover.network.u2net_graph import prepare_graph

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
    from bgremover.network.store import DownloadCancelled

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


def test_a_build_reports_before_any_work_and_makes_every_step_it_promised(
    tmp_path: Path, tiny_model: Path
) -> None:
    """The first report came once the imports, the reads and the graph's preparation were
    done (seconds for u2netp, with nothing shown and no cancel seen): it comes before any
    of them, with the number of steps to come."""
    from bgremover.network.families import FAMILIES
    from bgremover.network.quantize import SETUP_STEPS, VIEWS_PER_PHOTO, quantize_model
    from bgremover.network.store import DownloadCancelled

    photos = calibration_files()
    family = FAMILIES["u2net"]
    seen: list[tuple[int, int]] = []

    def stop_at_once(done: int, total: int) -> None:
        seen.append((done, total))
        raise DownloadCancelled()

    # The fp32 file is not even there: the first report (and its cancel) comes before
    # anything is read, and nothing is written.
    out = tmp_path / "out" / "m.int8.onnx"
    with pytest.raises(DownloadCancelled):
        quantize_model(tmp_path / "absent.onnx", out, "naive", photos, family, stop_at_once)
    assert seen == [(0, SETUP_STEPS + VIEWS_PER_PHOTO * len(photos))]
    assert not out.parent.exists()

    # Whole builds: one report per step, from 0 to the total promised at first (the
    # generic recipe's analysis counts its 24 views, and one for ORT's calibration).
    net = _build_net(tmp_path / "net.onnx", fp16=True)
    for recipe, model, fam, total in (
        ("naive", tiny_model, family, SETUP_STEPS + VIEWS_PER_PHOTO * len(photos)),
        ("generic", net, FAMILIES["birefnet"], SETUP_STEPS + 24 + 1),
    ):
        seen.clear()
        out.unlink(missing_ok=True)
        quantize_model(model, out, recipe, photos, fam, lambda d, t: seen.append((d, t)))
        assert seen == [(done, total) for done in range(total + 1)], recipe
        assert out.is_file() and [p.name for p in out.parent.iterdir()] == [out.name]


# --- int8 for any family: fp16 graphs, the generic recipe, the sensitivity analysis ---


def _conv(name: str, x: str, cout: int, cin: int, k: int, rng, dtype, stride: int = 1,
          scale: float = 1.0, bias_shift: dict[int, float] | None = None):  # fmt: skip
    """A Conv node with random weights of ``dtype`` (He-scaled) and its two weights."""
    from onnx import helper, numpy_helper

    w = rng.normal(0, np.sqrt(2 / (cin * k * k)), (cout, cin, k, k)) * scale
    b = rng.normal(0, 0.1, cout)
    for channel, shift in (bias_shift or {}).items():
        b[channel] += shift
    weights = [
        numpy_helper.from_array(w.astype(dtype), f"{name}_w"),
        numpy_helper.from_array(b.astype(dtype), f"{name}_b"),
    ]
    node = helper.make_node(
        "Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_out"], name=name,
        kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride, stride],
    )  # fmt: skip
    return node, weights


def _build_net(path: Path, size: int = 64, fp16: bool = False, ill: bool = False) -> Path:
    """A small BiRefNet/IS-Net-shaped conv net: (1,3,S,S) -> logits (1,1,S,S) first, a side
    output second. ``fp16``: weights and compute in fp16 behind casts, Resize in fp32 between
    casts, as IMG.LY ships IS-Net. ``ill``: the middle conv gets one channel of huge range."""
    import onnx
    from onnx import TensorProto, helper

    rng = np.random.default_rng(7)
    half = size // 2
    dt = np.float16 if fp16 else np.float32
    ft = TensorProto.FLOAT16 if fp16 else TensorProto.FLOAT
    nodes = []
    x = "input"
    if fp16:
        nodes.append(helper.make_node("Cast", ["input"], ["x16"], to=ft, name="in_cast"))
        x = "x16"
    c1, w1 = _conv("c1", x, 8, 3, 3, rng, dt)
    c2, w2 = _conv("c2", "r1", 8, 8, 3, rng, dt, stride=2)
    shifts = {3: 40.0} if ill else None
    c3, w3 = _conv("c3", "r2", 8, 8, 3, rng, dt, scale=1.0, bias_shift=shifts)
    if ill:  # channel 3 of c3: a range a hundred times its siblings'
        arr = onnx.numpy_helper.to_array(w3[0]).copy()
        arr[3] *= 100
        w3[0].CopyFrom(onnx.numpy_helper.from_array(arr.astype(dt), "c3_w"))
    c4, w4 = _conv("c4", "cat", 1, 16, 3, rng, dt)
    side, ws = _conv("side", "r3", 1, 8, 1, rng, dt)
    scales = helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2])
    nodes += [c1, helper.make_node("Relu", ["c1_out"], ["r1"]), c2,
              helper.make_node("Relu", ["c2_out"], ["r2"]), c3,
              helper.make_node("Relu", ["c3_out"], ["r3"]), side]  # fmt: skip
    up_in, up_out = "r3", "up"
    if fp16:
        nodes.append(helper.make_node("Cast", ["r3"], ["r3_32"], to=TensorProto.FLOAT))
        up_in, up_out = "r3_32", "up32"
    nodes.append(helper.make_node("Resize", [up_in, "", "scales"], [up_out], mode="linear"))
    if fp16:
        nodes.append(helper.make_node("Cast", ["up32"], ["up"], to=ft))
    nodes += [helper.make_node("Concat", ["r1", "up"], ["cat"], axis=1), c4]
    outputs = ["c4_out", "side_out"]
    if fp16:
        nodes += [
            helper.make_node("Cast", ["c4_out"], ["logits"], to=TensorProto.FLOAT),
            helper.make_node("Cast", ["side_out"], ["side"], to=TensorProto.FLOAT),
        ]
        outputs = ["logits", "side"]
    graph = helper.make_graph(
        nodes, "tiny_net",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info(outputs[0], TensorProto.FLOAT, [1, 1, size, size]),
         helper.make_tensor_value_info(outputs[1], TensorProto.FLOAT, [1, 1, half, half])],
        initializer=[*w1, *w2, *w3, *w4, *ws, scales],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _views(family, side: int, count: int = 6) -> list[np.ndarray]:
    from bgremover.network.transforms import preprocess

    views = list(calibration_samples(calibration_files()))[:: 70 // count][:count]
    return [preprocess(v, family, side) for v in views]


def test_fp16_graph_is_upcast_exactly(tmp_path: Path) -> None:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, numpy_helper

    from bgremover.network.families import FAMILIES
    from bgremover.network.graph_tools import is_fp16, upcast_fp16

    path = _build_net(tmp_path / "fp16.onnx", fp16=True)
    model = onnx.load(str(path))
    assert is_fp16(model)
    before = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert upcast_fp16(model) == 5  # every cast between fp16 and fp32
    assert not is_fp16(model)
    assert not [n for n in model.graph.node if n.op_type == "Cast"]
    for t in model.graph.initializer:  # weights exactly the fp16 values
        assert t.data_type == TensorProto.FLOAT
        np.testing.assert_array_equal(numpy_helper.to_array(t), before[t.name].astype(np.float32))
    assert [o.name for o in model.graph.output] == ["logits", "side"]
    onnx.checker.check_model(model, full_check=True)
    up = tmp_path / "fp32.onnx"
    onnx.save(model, str(up))
    a = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(str(up), providers=["CPUExecutionProvider"])
    for x in _views(FAMILIES["dis"], 64, 3):
        for ra, rb in zip(a.run(None, {"input": x}), b.run(None, {"input": x}), strict=True):
            # fp16 compute rounds each activation to 11 significant bits
            np.testing.assert_allclose(ra, rb, rtol=2e-2, atol=2e-2 * np.abs(rb).max())


def _quantized_outputs(fp32: Path, int8: Path, family, side: int = 64):
    import onnxruntime as ort

    a = ort.InferenceSession(str(fp32), providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(str(int8), providers=["CPUExecutionProvider"])
    assert len(b.get_outputs()) == 1  # the main output only
    pairs = []
    for x in _views(family, side, 8)[1:]:
        pairs.append((a.run(None, {"input": x})[family.output], b.run(None, {"input": x})[0]))
    return pairs


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
def test_generic_recipe_on_birefnet_shaped_model(tmp_path: Path, fp16: bool) -> None:
    import onnx

    from bgremover.network.families import FAMILIES
    from bgremover.network.quantize import quantize_model

    family = FAMILIES["birefnet"]  # logits through a sigmoid
    src = _build_net(tmp_path / "net.onnx", fp16=fp16)
    dst = tmp_path / "net.int8.onnx"
    seen: list[tuple[int, int]] = []
    quantize_model(src, dst, "generic", calibration_files(), family,
                   lambda d, t: seen.append((d, t)))  # fmt: skip
    assert seen and seen[-1][0] == seen[-1][1]
    ops = [n.op_type for n in onnx.load(str(dst)).graph.node]
    assert ops.count("QuantizeLinear") >= 3 and "Cast" not in ops
    for ref, out in _quantized_outputs(src, dst, family):
        a, b = 1 / (1 + np.exp(-ref)), 1 / (1 + np.exp(-out))
        assert np.abs(a - b).mean() < 0.01 and iou(a, b) > 0.97


def test_sensitivity_analysis_picks_the_ill_conditioned_conv(tmp_path: Path) -> None:
    import onnx
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from bgremover.network.families import FAMILIES
    from bgremover.network.graph_tools import analyse, nodes_touching

    path = _build_net(tmp_path / "ill.onnx", ill=True)
    folded = tmp_path / "folded.onnx"
    quant_pre_process(str(path), str(folded))
    found = analyse(folded, _views(FAMILIES["birefnet"], 64, 4), mean_range=True)
    assert set(found.stats) >= {"input", "c1_out", "r1", "c3_out", "r3", "cat", "c4_out"}
    recipe = get_recipe("generic")  # its own floor finds the conv
    weakest = found.weakest(2, below_db=recipe.snr_floor_db)
    assert weakest and set(weakest) <= {"c3_out", "r3", "up", "cat"}, found.snr
    lo, hi = found.stats["c3_out"].lo, found.stats["c3_out"].hi
    assert (hi - lo)[3] > 20 * np.median(hi - lo)  # channel 3 is the huge one
    assert "c3" in nodes_touching(onnx.load(str(folded)), weakest)
    # the healthy first conv's output is far above the floor
    assert found.snr["c1_out"] > 30


def test_generic_recipe_keeps_the_mask_output_index(tmp_path: Path) -> None:
    """A family whose mask is a later output: the int8 model still has it at that index."""
    from dataclasses import replace

    import onnxruntime as ort

    from bgremover.network.families import FAMILIES
    from bgremover.network.quantize import quantize_model

    family = replace(FAMILIES["birefnet"], output=1)
    src = _build_net(tmp_path / "net.onnx", fp16=True)
    dst = tmp_path / "net.int8.onnx"
    quantize_model(src, dst, "generic", calibration_files(), family)
    a = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"])
    assert [o.name for o in b.get_outputs()] == ["logits", "side"]
    x = _views(family, 64, 2)[1]
    ref, out = a.run(None, {"input": x})[1], b.run(None, {"input": x})[1]
    assert np.abs(ref - out).mean() < 0.05 * np.abs(ref).mean()


def test_grouped_analysis_matches_one_pass(tmp_path: Path) -> None:
    """Tensors measured in groups under a small activation budget (each group its own
    session over the views) give exactly the statistics of one pass with all of them."""
    import onnx
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from bgremover.network.families import FAMILIES
    from bgremover.network.graph_tools import (
        activation_bytes,
        activation_tensors,
        analyse,
        tensor_groups,
    )

    path = _build_net(tmp_path / "ill.onnx", ill=True)
    folded = tmp_path / "folded.onnx"
    quant_pre_process(str(path), str(folded))
    views = _views(FAMILIES["birefnet"], 64, 3)
    model = onnx.load(str(folded))
    tensors = activation_tensors(model)
    sizes = activation_bytes(model, tensors, views[0].shape)
    assert sizes[tensors.index("c1_out")] == 4 * 8 * 64 * 64  # from the graph's shapes
    budget = 150_000  # about one full-resolution tensor
    assert len(tensor_groups(tensors, sizes, budget)) >= 4
    steps: list[int] = []
    one = analyse(folded, views, mean_range=True, budget=2**40)
    grouped = analyse(folded, views, lambda: steps.append(1), mean_range=True, budget=budget)
    assert len(steps) == len(views)  # progress as in one pass
    assert list(grouped.stats) == list(one.stats) and grouped.snr == one.snr
    for name, stats in one.stats.items():
        other = grouped.stats[name]
        for a, b in zip(vars(stats).values(), vars(other).values(), strict=True):
            np.testing.assert_array_equal(a, b, err_msg=name)
