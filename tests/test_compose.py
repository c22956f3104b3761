"""Cutout, mask and solid-background composition."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from bgremover.errors import UsageError
from bgremover.export.compose import (
    ComposeOptions,
    compose,
    compose_array,
    cutout,
    over_background,
)
from bgremover.export.options import parse_color


def test_cutout_straight_colour_and_zeroed_transparent() -> None:
    rgb = np.full((2, 3, 3), 200, np.uint8)
    alpha = np.array([[0, 128, 255], [0, 1, 255]], np.uint8)
    out = cutout(rgb, alpha)
    assert out.shape == (2, 3, 4)
    assert (out[alpha == 0] == 0).all()
    # Semi-transparent pixels keep their real colour (not darkened by alpha).
    assert (out[0, 1, :3] == 200).all() and out[0, 1, 3] == 128


def test_background_opaque_blends() -> None:
    rgb = np.full((1, 3, 3), 255, np.uint8)
    alpha = np.array([[0, 128, 255]], np.uint8)
    out = over_background(rgb, alpha, (0, 0, 0, 255))
    assert out.shape == (1, 3, 3)
    assert out[0, :, 0].tolist() == [0, 128, 255]


def test_background_translucent_is_rgba() -> None:
    rgb = np.full((1, 2, 3), 255, np.uint8)
    alpha = np.array([[0, 255]], np.uint8)
    out = over_background(rgb, alpha, (0, 0, 255, 128))
    assert out.shape == (1, 2, 4)
    assert out[0, 0].tolist() == [0, 0, 255, 128]
    assert out[0, 1].tolist() == [255, 255, 255, 255]


def test_compose_modes() -> None:
    rgb = np.zeros((4, 4, 3), np.uint8)
    alpha = np.full((4, 4), 9, np.uint8)
    assert compose(rgb, alpha, ComposeOptions(mask_only=True)).mode == "L"
    assert compose(rgb, alpha, ComposeOptions()).mode == "RGBA"
    assert compose(rgb, alpha, ComposeOptions(background=(1, 2, 3, 255))).mode == "RGB"


@pytest.mark.parametrize(
    ("text", "rgba"),
    [
        ("white", (255, 255, 255, 255)),
        ("#ff8800", (255, 136, 0, 255)),
        ("#ff880080", (255, 136, 0, 128)),
        ("10, 20, 30", (10, 20, 30, 255)),
        ("10,20,30,40", (10, 20, 30, 40)),
    ],
)
def test_parse_color(text: str, rgba: tuple[int, int, int, int]) -> None:
    assert parse_color(text) == rgba


@pytest.mark.parametrize("text", ["notacolour", "#12", "300,0,0", "1,2"])
def test_parse_color_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="Not a colour"):
        parse_color(text)


@pytest.mark.parametrize(
    "options",
    [
        ComposeOptions(),
        ComposeOptions(mask_only=True),
        ComposeOptions(background=(10, 200, 30, 255)),
        ComposeOptions(background=(10, 200, 30, 100)),
        ComposeOptions(decontaminate=True),
    ],
    ids=["cutout", "mask", "opaque-bg", "translucent-bg", "decontaminated"],
)
def test_streamed_png_equals_the_whole_composite(tmp_path, options: ComposeOptions) -> None:
    from bgremover.export.output import write_output

    rng = np.random.default_rng(5)
    rgb = rng.integers(0, 256, (301, 123, 3), dtype=np.uint8)
    alpha = rng.choice(np.array([0, 0, 17, 128, 255, 255], np.uint8), (301, 123))
    whole = compose_array(rgb, alpha, options)
    out = tmp_path / "o.png"
    size = write_output(rgb, alpha, options, out, "png")
    assert size == out.stat().st_size
    np.testing.assert_array_equal(np.asarray(Image.open(out)), whole)


def test_a_failed_image_comparison_leaves_the_images(tmp_path) -> None:
    from conftest import assert_masks_close

    empty = np.zeros((8, 8), np.uint8)
    square = empty.copy()
    square[2:6, 2:6] = 255
    assert_masks_close(square, square.copy(), tmp_path, "same")  # equal: nothing written
    assert not list(tmp_path.iterdir())
    with pytest.raises(AssertionError, match=r"IoU 0\.0000 < 1\.0000.*square-diff\.png"):
        assert_masks_close(empty, square, tmp_path, "square", max_mean_abs=1.0)
    written = {p.name: np.asarray(Image.open(p)) for p in tmp_path.iterdir()}
    assert set(written) == {"square-actual.png", "square-expected.png", "square-diff.png"}
    assert (written["square-expected.png"] == square).all()
    assert written["square-diff.png"].shape == (8, 8, 3)
