"""Model families: each family's pre- and postprocessing checked numerically on synthetic
ONNX models with that family's exact input/output signature, the signature guess, the
registry's invariants, and the real IS-Net obtained through the store."""

from __future__ import annotations

import gc
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover import Remover
from bgremover.engine.pipeline import read_signature
from bgremover.errors import BgRemoverError, ModelError
from bgremover.files.imaging import from_array
from bgremover.network.families import DEFAULT_FAMILY, FAMILIES, Family, Signature, guess_family
from bgremover.network.models import REGISTRY, local_spec, resolve_spec
from bgremover.network.transforms import (
    content_box,
    input_shape,
    mask_from_score,
    preprocess,
    score_map,
)

from conftest import cli, kept_models

TEST_PHOTOS = Path(__file__).resolve().parent / "data"


def build_model(
    path: Path,
    *,
    side: int | None,
    outputs: int = 1,
    channels: int = 1,
    sigmoid: bool = False,
    gain: float = 4.0,
) -> Path:
    """A conv net with a family's signature: (1, 3, S, S) -> ``outputs`` maps of
    ``channels`` channels, computed as :func:`stand_in` (logits; through a sigmoid when
    ``sigmoid``)."""
    import onnx
    from onnx import TensorProto, helper

    dim: int | str = side if side is not None else "H"
    wdim: int | str = side if side is not None else "W"
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, dim, wdim])
    names = ["output", *(f"side{i}" for i in range(1, outputs))]
    outs = [
        helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, channels, dim, wdim]) for n in names
    ]
    slopes, bias = stand_in_weights(channels, gain)
    weight = np.repeat(slopes[:, None, None, None] / 3, 3, axis=1).astype(np.float32)
    inits = [
        helper.make_tensor("w", TensorProto.FLOAT, weight.shape, weight.ravel()),
        helper.make_tensor("b", TensorProto.FLOAT, bias.shape, bias),
    ]
    nodes = [helper.make_node("Conv", ["input", "w", "b"], ["logits"], kernel_shape=[1, 1])]
    nodes.append(helper.make_node("Sigmoid" if sigmoid else "Identity", ["logits"], ["output"]))
    nodes += [helper.make_node("Identity", ["output"], [n]) for n in names[1:]]
    graph = helper.make_graph(nodes, "family_stand_in", [inp], outs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def stand_in_weights(channels: int, gain: float) -> tuple[np.ndarray, np.ndarray]:
    """Slope and bias per output channel, of the input's channel mean m. One channel:
    ``gain * m``, so brighter pixels score higher. Class maps: class k's logit is
    ``k * gain * m - b_k``, with b_k set so that the most likely class steps up by one at
    m = -1, 0 and 1: dark pixels are class 0, the brightest class 3."""
    if channels == 1:
        return np.array([gain], np.float32), np.zeros(1, np.float32)
    steps = np.linspace(-1.0, 1.0, channels - 1)
    bias = np.concatenate([[0.0], -gain * np.cumsum(steps)])
    return gain * np.arange(channels, dtype=np.float32), bias.astype(np.float32)


def stand_in(batch: np.ndarray, channels: int, gain: float) -> np.ndarray:
    """What :func:`build_model`'s net computes from a preprocessed batch."""
    slopes, bias = stand_in_weights(channels, gain)
    m = batch[0].mean(axis=0)
    return np.stack([s * m + b for s, b in zip(slopes, bias, strict=True)])[None]


def half_bright(width: int = 96, height: int = 64) -> np.ndarray:
    """Left half dark grey, right half light grey: the stand-ins call the right half the
    subject."""
    rgb = np.full((height, width, 3), 40, np.uint8)
    rgb[:, width // 2 :] = 220
    return rgb


def test_registry_entries_name_known_families_and_int8_recipes() -> None:
    from bgremover.network.quantize import RECIPES

    for name, spec in REGISTRY.items():
        assert spec.family is not None and FAMILIES[spec.family.name] == spec.family, name
        assert all(r in RECIPES for r in spec.family.int8), name
        assert spec.licence and spec.homepage, name
    for family in FAMILIES.values():
        assert family.input_size % 32 == 0 and family.output >= 0
        if family.classes is not None:
            assert all(0 < c < len(family.class_names) for c in family.classes)
    assert REGISTRY["bria-rmbg"].non_commercial
    assert not REGISTRY["u2netp"].non_commercial


def test_birefnet_logits_go_through_a_sigmoid(tmp_path: Path) -> None:
    """BiRefNet's output is logits: the mask is sigmoid(logits), min-max normalised
    (rembg's order), not the logits min-max normalised."""
    path = build_model(tmp_path / "birefnet_like.onnx", side=64, gain=2.0)
    rgb = np.tile(np.linspace(0, 255, 64, dtype=np.uint8)[None, :, None], (64, 1, 3))
    remover = Remover(str(path), family="birefnet", refine=False)
    assert remover.family.activation == "sigmoid"
    result = remover.remove(rgb)
    # Per channel (x - mean_c) / std_c, averaged by the stand-in's 1/3 weights.
    fam = FAMILIES["birefnet"]
    x = np.mean([(rgb[0, :, 0] / 255.0 - fam.mean[c]) / fam.std[c] for c in range(3)], axis=0)
    prob = 1 / (1 + np.exp(-2.0 * x))
    expected = (prob - prob.min()) / (prob.max() - prob.min())
    np.testing.assert_allclose(result.mask[0] / 255.0, expected, atol=1.5 / 255)
    # Without the sigmoid (the U²-Net reading) the mask would be the logits' ramp: a line.
    linear = (x - x.min()) / (x.max() - x.min())
    assert np.abs(result.mask[0] / 255.0 - linear).max() > 0.05


def test_letterbox_family_keeps_the_aspect_and_maps_back(tmp_path: Path) -> None:
    """A letterboxed family pads a wide photo top and bottom; the mask maps back to the
    photo's own pixels exactly (no band from the padding, no shift)."""
    letterbox = Family("letterbox-test", "test family", input_size=64, resize="letterbox")
    shape = input_shape(letterbox, 64, 96, 48)
    assert shape == (64, 64)
    assert content_box(letterbox, shape, 96, 48) == (0, 16, 64, 32)
    rgb = half_bright(96, 48)
    batch = preprocess(rgb, letterbox)
    assert batch.shape == (1, 3, 64, 64)
    assert np.all(batch[0, :, :16] == 0) and np.all(batch[0, :, -16:] == 0)  # padded: the mean
    path = build_model(tmp_path / "lb.onnx", side=64)
    spec = replace(local_spec(path), family=letterbox)
    result = Remover(spec, refine=False).remove(rgb)
    assert result.mask.shape == (48, 96)
    assert result.mask[:, :40].max() < 20 and result.mask[:, 56:].min() > 235
    # Every row alike: the padding rows did not leak into the top or bottom of the mask.
    assert np.abs(result.mask.astype(int) - result.mask[24].astype(int)).max() <= 2


def test_dynamic_family_keeps_the_aspect_at_a_multiple_of_32(tmp_path: Path) -> None:
    path = build_model(tmp_path / "dynamic.onnx", side=None, sigmoid=False)
    signature = read_signature(path)
    assert signature.input_shape == (1, 3, None, None)
    remover = Remover(str(path), refine=False)
    assert remover.family.name == "birefnet-dynamic"  # one output, free size: BiRefNet
    rgb = half_bright(640, 480)
    batch, _ = remover.prepare(from_array(rgb))
    assert batch.shape == (1, 3, 768, 1024)
    result = remover.remove(rgb)
    assert result.mask.shape == (480, 640)
    assert result.mask[:, :300].max() < 20 and result.mask[:, 340:].min() > 235
    tall = input_shape(FAMILIES["birefnet-dynamic"], 1024, 300, 1000)
    assert tall == (1024, 320) and all(d % 32 == 0 for d in tall)
    capped = input_shape(FAMILIES["birefnet-dynamic"], 4096, 3000, 2000)
    assert max(capped) == FAMILIES["birefnet-dynamic"].max_size


def test_resolution_for_free_size_models_only(tmp_path: Path) -> None:
    """A higher resolution on a free-size model: a larger input, the same mask size."""
    path = build_model(tmp_path / "dynamic.onnx", side=None)
    rgb = half_bright(640, 480)
    fine = Remover(str(path), resolution=1536, refine=False)
    batch, _ = fine.prepare(from_array(rgb))
    assert batch.shape == (1, 3, 1152, 1536)
    assert fine.remove(rgb).mask.shape == (480, 640)
    with pytest.raises(BgRemoverError, match="outside"):
        Remover(str(path), resolution=4096).load()
    fixed = build_model(tmp_path / "fixed.onnx", side=64)
    with pytest.raises(BgRemoverError, match="fixed 64 px input"):
        Remover(str(fixed), resolution=1536).load()


def test_cloth_class_map_gives_the_chosen_classes(tmp_path: Path) -> None:
    """A 4-class map: the mask is where the most likely class is among those chosen."""
    path = build_model(tmp_path / "cloth.onnx", side=32, channels=4, gain=6.0)
    # Bands of brightness: the stand-in's most likely class rises with brightness.
    rgb = np.zeros((32, 128, 3), np.uint8)
    for i, level in enumerate((0, 90, 170, 255)):
        rgb[:, 32 * i : 32 * (i + 1)] = level
    x = preprocess(rgb, FAMILIES["u2net-cloth"], 32)
    raw = np.stack([6.0 * x[0].mean(axis=0) - 6.0 * 0.5 * k for k in range(4)])[
        None
    ]  # what the stand-in computes
    classes = raw[0].argmax(axis=0)
    union = score_map(raw, FAMILIES["u2net-cloth"])
    np.testing.assert_array_equal(union, (classes > 0).astype(np.float32))
    everything = Remover(str(path), family="u2net-cloth", refine=False).remove(rgb).mask
    upper = Remover(str(path), family="u2net-cloth", classes=("upper",), refine=False)
    upper_mask = upper.remove(rgb).mask
    assert upper.family.classes == (1,)
    assert everything.shape == upper_mask.shape == (32, 128)
    assert (upper_mask >= 128).sum() < (everything >= 128).sum()
    assert (upper_mask[everything < 128] < 128).all()  # a subset of the union
    with pytest.raises(BgRemoverError, match=r"not a class of .*upper, lower, full"):
        Remover(str(path), family="u2net-cloth", classes=("shoes",))
    with pytest.raises(BgRemoverError, match="gives one mask"):
        Remover("u2netp", classes=("upper",))


def test_preprocess_scaling_and_channel_order() -> None:
    rgb = np.zeros((4, 4, 3), np.uint8)
    rgb[..., 0] = 100  # red only, dark: max-scaling and 255-scaling differ
    by_max = Family("t1", "", input_size=4, mean=(0, 0, 0), std=(1, 1, 1))
    by_255 = replace(by_max, scaling="255")
    bgr = replace(by_255, channels="bgr")
    assert preprocess(rgb, by_max)[0, 0].max() == pytest.approx(1.0)
    assert preprocess(rgb, by_255)[0, 0].max() == pytest.approx(100 / 255)
    assert preprocess(rgb, bgr)[0, 2].max() == pytest.approx(100 / 255)  # red is last
    assert preprocess(rgb, bgr)[0, 0].max() == 0


def test_postprocess_clip_normalisation_keeps_a_confident_map() -> None:
    """min-max would stretch a map of 0.4..0.6 to 0..1; clip keeps it as it is."""
    raw = np.linspace(0.4, 0.6, 16, dtype=np.float32).reshape(1, 1, 4, 4)
    clip = replace(FAMILIES["bria"], normalisation="clip")
    assert mask_from_score(score_map(raw, clip), 4, 4, clip).max() <= 154
    bria = FAMILIES["bria"]
    assert mask_from_score(score_map(raw, bria), 4, 4, bria).max() == 255


def test_signature_guesses_and_ambiguity() -> None:
    assert guess_family(Signature((1, 3, 320, 320), ((1, 1, 320, 320),) * 7)).name == "u2net"
    assert guess_family(Signature((1, 3, 1024, 1024), ((1, 1, 1024, 1024),))).name == "birefnet"
    assert guess_family(Signature((1, 3, 768, 768), ((1, 4, 768, 768),))).name == "u2net-cloth"
    dynamic = Signature((1, 3, None, None), ((1, 1, None, None),))
    assert guess_family(dynamic).name == "birefnet-dynamic"
    with pytest.raises(ModelError, match=r"(?s)several families.*dis, dis-anime.*--family"):
        guess_family(Signature((1, 3, 1024, 1024), ((1, 1, 1024, 1024),) * 12), "x.onnx")
    with pytest.raises(ModelError, match="bria, ben2"):
        guess_family(Signature((1, 3, 1024, 1024), ((1, 1, 1024, 1024),), "Sigmoid"))
    with pytest.raises(ModelError, match="does not look like"):
        guess_family(Signature((1, 1, 64, 64), ((1, 1, 64, 64),)))


def test_the_default_family_is_the_one_of_files_of_unknown_origin(tmp_path: Path) -> None:
    """DEFAULT_FAMILY is what a fixed non-1024 px file is taken for, and what a spec of
    unknown family reports until its signature is read."""
    assert DEFAULT_FAMILY is FAMILIES["u2net"]
    assert guess_family(Signature((1, 3, 512, 512), ((1, 1, 512, 512),))) is DEFAULT_FAMILY
    mine = tmp_path / "mine.onnx"
    mine.write_bytes(b"not read until it loads")
    spec = local_spec(mine)
    assert spec.family is None
    assert (spec.input_size, spec.int8_recipes) == (320, ("faithful", "naive"))


def test_real_1024_model_file_signature_decides_its_family(tmp_path: Path) -> None:
    """A 1024 px one-output file: logits -> BiRefNet; with its own sigmoid it could be
    BRIA or BEN2, which prepare photos differently, so the user is asked."""
    logits = build_model(tmp_path / "logits.onnx", side=1024)
    assert Remover(str(logits)).family.name == "birefnet"
    with_sigmoid = build_model(tmp_path / "prob.onnx", side=1024, sigmoid=True)
    with pytest.raises(ModelError, match="bria, ben2"):
        Remover(str(with_sigmoid)).resolve_family()
    assert Remover(str(with_sigmoid), family="bria").family.name == "bria"


def test_int8_not_offered_where_it_does_not_apply() -> None:
    with pytest.raises(BgRemoverError, match="its file is int8 already"):
        Remover("isnet-imgly-small", precision="int8")
    with pytest.raises(BgRemoverError, match="no int8 recipe"):
        Remover("u2net_cloth_seg", precision="int8")
    assert REGISTRY["isnet-imgly"].int8_recipes == ("generic",)


def test_family_flag_only_for_files() -> None:
    with pytest.raises(ModelError, match="applies only to model files"):
        resolve_spec("u2netp", "birefnet")
    assert resolve_spec("u2netp", "u2net") is REGISTRY["u2netp"]


def test_cli_family_and_classes(tmp_path: Path) -> None:
    path = build_model(tmp_path / "mine.onnx", side=64)
    photo = tmp_path / "photo.png"
    Image.fromarray(half_bright()).save(photo)
    out = tmp_path / "out.png"
    done = cli("remove", str(photo), "-o", str(out), "--model", str(path), "--family",
               "birefnet", "--no-refine", home=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    alpha = np.asarray(Image.open(out))[..., 3]
    assert alpha[:, :40].max() < 20 and alpha[:, 56:].min() > 235
    bad = cli("remove", str(photo), "-o", str(tmp_path / "o2.png"), "--model", str(path),
              "--classes", "upper", home=tmp_path)  # fmt: skip
    assert bad.returncode == 2 and "gives one mask" in bad.stderr
    assert not (tmp_path / "o2.png").exists()


def test_cli_quantize_refuses_models_without_int8_before_any_download(tmp_path: Path) -> None:
    done = cli("models", "quantize", "isnet-imgly-small", home=tmp_path)
    assert done.returncode == 2 and "its file is int8 already" in done.stderr
    done = cli("models", "quantize", "u2net_cloth_seg", home=tmp_path)
    assert done.returncode == 2 and "no int8 recipe" in done.stderr
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").iterdir())


def test_cli_models_list_shows_family_size_and_licence(tmp_path: Path) -> None:
    listed = cli("models", "list", "--json", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)["models"]}
    assert set(REGISTRY) <= set(rows)
    assert rows["bria-rmbg"]["non_commercial"] and rows["isnet-imgly"]["family"] == "dis"
    text = cli("models", "list", home=tmp_path).stdout
    line = next(x for x in text.splitlines() if x.strip().startswith("bria-rmbg"))
    assert "NON-COMMERCIAL" in line and "about 1.0 GB" in line and "bria" in line
    families = cli("models", "families", home=tmp_path).stdout
    assert all(f"{name}:" in families for name in FAMILIES)


@pytest.fixture(scope="session")
def isnet_path() -> Path:
    """The real IS-Net (IMG.LY's, 88 MB), obtained and verified through the store: from
    IMG.LY's CDN, or where that is unreachable, from its npm package."""
    from bgremover.network.store import ModelStore

    try:
        with kept_models("isnet-imgly"):
            return ModelStore().ensure("isnet-imgly")
    except BgRemoverError as exc:
        pytest.skip(f"isnet-imgly could not be obtained here: {exc}")


@pytest.mark.slow
def test_real_isnet_cuts_out_a_photo(isnet_path: Path) -> None:
    """The whole chain on real 1024 px weights: the rocket u2netp finds is kept, the sky
    is dropped, and (DIS being trained for fine structure) the lattice tower on the left
    is kept too, where u2netp drops it."""
    rgb = np.asarray(Image.open(TEST_PHOTOS / "skimage_rocket.jpg").convert("RGB"))
    remover = Remover("isnet-imgly", refine=False)
    assert remover.input_size == 1024 and remover.family.name == "dis"
    result = remover.remove(rgb)
    assert result.mask.shape == rgb.shape[:2]
    assert result.raw is not None and result.raw.shape == (1024, 1024)
    rocket = Remover("u2netp", refine=False).remove(rgb).mask >= 128
    ours = result.mask >= 128
    assert (ours & rocket).sum() / rocket.sum() > 0.9
    assert ours[:100, 360:520].mean() < 0.01  # the sky between the towers
    assert ours[:, :70].mean() > rocket[:, :70].mean() + 0.05  # the tower on the left


@pytest.mark.slow
def test_real_isnet_masks_agree_with_rembgs_isnet_session(
    isnet_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parity with rembg 2.0.86's IS-Net settings (its dis_custom session on the same file):
    within 1/255 and IoU 0.995 on each shipped photo (0 difference measured)."""
    from conftest import assert_masks_close, real_photos

    monkeypatch.setenv("U2NET_HOME", str(isnet_path.parent))  # rembg's models folder rule
    rembg = pytest.importorskip("rembg")

    def rembgs_mask(photo: Path) -> np.ndarray:
        # A session per photo, and one 1024 px session at a time: each holds about 1.3 GB
        # while it runs, and rembg's grows to 2.2 GB on a second photo of another size.
        session = rembg.new_session(
            "dis_custom", model_path=str(isnet_path), providers=["CPUExecutionProvider"]
        )
        return np.asarray(rembg.remove(Image.open(photo), session=session, only_mask=True))

    theirs = {photo: rembgs_mask(photo) for photo in real_photos()}
    gc.collect()
    ours = Remover("isnet-imgly", refine=False)
    for photo in real_photos():
        mask = ours.remove(photo).mask
        assert_masks_close(
            mask, theirs[photo], tmp_path, photo.stem, max_mean_abs=1 / 255, min_iou=0.995
        )
