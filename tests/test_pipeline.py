"""Each engine stage on synthetic arrays, and the whole chain with a tiny ONNX model."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover import ComposeOptions, Remover
from bgremover.engine.pipeline import EngineConfig, combine_alpha, model_mask
from bgremover.network.models import REGISTRY
from bgremover.network.transforms import normalise_output, preprocess, score_map

SPEC = REGISTRY["u2netp"].family
assert SPEC is not None


def test_preprocess_shape_and_normalisation(rgb_gradient: np.ndarray) -> None:
    x = preprocess(rgb_gradient, SPEC)
    assert x.shape == (1, 3, 320, 320) and x.dtype == np.float32
    # Divided by the image's own maximum, then ImageNet mean/std per channel.
    for c in range(3):
        top = (1.0 - SPEC.mean[c]) / SPEC.std[c]
        bottom = (0.0 - SPEC.mean[c]) / SPEC.std[c]
        assert x[0, c].max() == pytest.approx(top, abs=1e-5)
        assert x[0, c].min() == pytest.approx(bottom, abs=0.02)


def test_preprocess_dark_image_uses_its_own_maximum() -> None:
    dark = np.full((10, 10, 3), 50, np.uint8)
    x = preprocess(dark, SPEC, size=8)
    assert x.shape == (1, 3, 8, 8)
    assert x[0, 0, 0, 0] == pytest.approx((1.0 - SPEC.mean[0]) / SPEC.std[0], abs=1e-5)


def test_normalise_and_postprocess() -> None:
    raw = np.linspace(-3, 5, 16, dtype=np.float32).reshape(1, 1, 4, 4)
    unit = normalise_output(raw)
    assert unit.min() == 0.0 and unit.max() == 1.0
    mask = model_mask(score_map(raw, SPEC), width=7, height=5, family=SPEC, refine=False)
    assert mask.shape == (5, 7) and mask.dtype == np.uint8
    assert mask[0, 0] < 30 and mask[-1, -1] > 225
    flat = model_mask(score_map(np.ones((1, 1, 4, 4), np.float32), SPEC), 3, 3, SPEC, False)
    assert (flat == 0).all()  # no NaNs from a flat prediction


def test_combine_alpha() -> None:
    mask = np.array([[255, 128, 0]], np.uint8)
    assert combine_alpha(mask, None) is mask
    assert combine_alpha(mask, np.array([[128, 255, 255]], np.uint8)).tolist() == [[128, 128, 0]]


def test_remover_end_to_end_with_tiny_model(tiny_model: Path, rgb_gradient: np.ndarray) -> None:
    remover = Remover(str(tiny_model), providers="cpu", threads=1)
    assert remover.input_size == 32  # read from the file, not the U²-Net default
    result = remover.remove(rgb_gradient)
    assert result.mask.shape == (48, 64)
    # The tiny model calls brighter pixels foreground: the mask rises left to right.
    assert result.mask[:, :5].mean() < 40 and result.mask[:, -5:].mean() > 215
    assert set(result.timings) == {"read", "preprocess", "infer", "postprocess", "refine"}
    assert result.providers == ("CPUExecutionProvider",) and result.fallbacks == ()
    cut = np.asarray(result.cutout())
    assert cut.shape == (48, 64, 4)
    np.testing.assert_array_equal(cut[..., 3], result.alpha)
    assert np.asarray(result.compose(ComposeOptions(mask_only=True))).shape == (48, 64)


def test_a_remover_is_made_from_one_config(tiny_model: Path, rgb_gradient: np.ndarray) -> None:
    """EngineConfig is the one list of the engine's settings: a Remover is made from one,
    or from a model and keyword settings that are its fields; another name is refused."""
    config = EngineConfig(str(tiny_model), providers="cpu", threads=1, refine=False)
    assert Remover(config).config == Remover.from_config(config).config == config
    assert Remover(str(tiny_model), providers="cpu", threads=1, refine=False).config == config
    assert Remover(config, refine=True).config == replace(config, refine=True)
    assert Remover(config, classes=[]).config.classes == ()  # kept hashable
    with pytest.raises(TypeError, match=r"'refien' \(did you mean 'refine'\?\)"):
        Remover(config, refien=True)
    remover = Remover(config)
    unrefined = remover.remove(rgb_gradient)
    np.testing.assert_array_equal(unrefined.alpha, unrefined.mask)  # refine=False was used
    assert remover.resolve_input_size() == 32 and remover.load().active == ("CPUExecutionProvider",)


def test_remover_reuses_one_session(tiny_model: Path, rgb_gradient: np.ndarray) -> None:
    remover = Remover(str(tiny_model), providers="cpu")
    remover.remove(rgb_gradient)
    first = remover._session()[0]
    remover.remove(Image.fromarray(rgb_gradient))
    assert remover._session()[0] is first and len(remover.pool) == 1


def test_input_alpha_limits_output(tiny_model: Path, rgb_gradient: np.ndarray) -> None:
    alpha = np.full(rgb_gradient.shape[:2], 255, np.uint8)
    alpha[:, -10:] = 0  # the brightest columns were transparent in the input
    result = Remover(str(tiny_model)).remove(np.dstack([rgb_gradient, alpha]))
    assert (result.alpha[:, -10:] == 0).all()
    assert result.mask[:, -10:].mean() > 200  # the model's own mask is unchanged


def test_dynamic_input_model_uses_spec_size(tmp_path: Path, rgb_gradient: np.ndarray) -> None:
    from conftest import build_tiny_model

    path = build_tiny_model(tmp_path / "dyn.onnx", dynamic=True)
    remover = Remover(str(path))
    assert remover.input_size == 320
    assert remover.remove(rgb_gradient).mask.shape == (48, 64)
