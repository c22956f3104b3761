"""The export options on synthetic images with exact geometry, and the presets as data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover.errors import UsageError
from bgremover.export.compose import ComposeOptions, compose_array, layout, place
from bgremover.export.options import Length, Outline, Shadow, parse_canvas, parse_length
from bgremover.export.output import write_output
from bgremover.export.presets import (
    BUILTIN,
    check_export,
    get_preset,
    load_presets,
    options_from,
    remove_preset,
    save_preset,
    values_of,
)
from bgremover.mask.subject import subject_box

WHITE = (255, 255, 255, 255)


def _scene(width: int = 100, height: int = 80, box=(20, 10, 60, 40)):
    """A grey photo with a red rectangle (x0, y0, x1, y1) as the subject."""
    rgb = np.full((height, width, 3), 90, np.uint8)
    alpha = np.zeros((height, width), np.uint8)
    x0, y0, x1, y1 = box
    rgb[y0:y1, x0:x1] = (220, 30, 30)
    alpha[y0:y1, x0:x1] = 255
    return rgb, alpha


def _box(alpha: np.ndarray) -> tuple[int, int, int, int]:
    found = subject_box(alpha)
    assert found is not None
    return found


def test_crop_cuts_to_the_subject_exactly() -> None:
    rgb, alpha = _scene()
    out = compose_array(rgb, alpha, ComposeOptions(crop=True))
    assert out.shape == (30, 40, 4)
    assert (out[..., 3] == 255).all() and (out[..., :3] == (220, 30, 30)).all()


@pytest.mark.parametrize(("margin", "pixels"), [("5px", 5), ("10%", 4)])
def test_crop_margin_in_pixels_or_percent_of_the_long_side(margin: str, pixels: int) -> None:
    rgb, alpha = _scene()
    options = ComposeOptions(crop=True, margin=parse_length(margin))
    out = compose_array(rgb, alpha, options)
    assert out.shape[:2] == (30 + 2 * pixels, 40 + 2 * pixels)
    assert _box(out[..., 3]) == (pixels, pixels, 40 + pixels, 30 + pixels)


def test_a_margin_past_the_photo_is_transparent() -> None:
    rgb, alpha = _scene(box=(0, 0, 40, 30))
    out = compose_array(rgb, alpha, ComposeOptions(crop=True, margin=Length(6)))
    assert out.shape[:2] == (42, 52)
    assert (out[:6, :, 3] == 0).all() and (out[:, :6, 3] == 0).all()
    assert (out[6:36, 6:46, 3] == 255).all()


def test_canvas_scales_the_subject_to_fit_inside_the_margin_centred() -> None:
    rgb, alpha = _scene()  # subject 40 x 30
    options = ComposeOptions(crop=True, canvas=(200, 100), margin=Length(10))
    lay = layout(alpha, options)
    assert lay.size == (200, 100)
    assert lay.scale == pytest.approx(80 / 30)  # the height limits: 80 free rows
    out = compose_array(rgb, alpha, options)
    x0, y0, x1, y1 = _box(out[..., 3])
    assert (y0, y1) == (10, 90)  # touches the margin top and bottom
    assert abs((x0 + x1) / 2 - 100) <= 1  # centred across
    assert x1 - x0 == pytest.approx(40 * 80 / 30, abs=1.5)  # whole pixels it touches


def test_bottom_position_stands_the_subject_on_the_bottom_margin() -> None:
    rgb, alpha = _scene()
    options = ComposeOptions(crop=True, canvas=(100, 200), margin=Length(10), position="bottom")
    x0, _, x1, y1 = _box(compose_array(rgb, alpha, options)[..., 3])
    assert y1 == 190 and (x0, x1) == (10, 90)


def test_aspect_ratio_canvas_is_the_smallest_that_holds_the_subject() -> None:
    rgb, alpha = _scene()  # subject 40 x 30
    size, ratio = parse_canvas("1:1")
    assert size is None and ratio == (1, 1)
    out = compose_array(rgb, alpha, ComposeOptions(crop=True, aspect=ratio))
    assert out.shape[:2] == (40, 40)
    assert _box(out[..., 3]) == (0, 5, 40, 35)
    wide = compose_array(rgb, alpha, ComposeOptions(crop=True, aspect=(16, 9), margin=Length(5)))
    height, width = wide.shape[:2]
    assert height == 40 and abs(width / height - 16 / 9) < 0.03  # 30 rows + 2 x 5 margin


def test_percent_margin_on_a_canvas_is_of_its_short_side() -> None:
    rgb, alpha = _scene()
    options = ComposeOptions(crop=True, canvas=(400, 200), margin=Length(5, percent=True))
    _, y0, _, y1 = _box(compose_array(rgb, alpha, options)[..., 3])
    assert (y0, y1) == (10, 190)  # 5 % of 200


def test_max_size_scales_the_whole_output_down_never_up() -> None:
    rgb, alpha = _scene()
    out = compose_array(rgb, alpha, ComposeOptions(max_size=50))
    assert out.shape[:2] == (40, 50)
    assert compose_array(rgb, alpha, ComposeOptions(max_size=500)).shape[:2] == (80, 100)
    canvas = ComposeOptions(crop=True, canvas=(400, 400), max_size=100)
    assert compose_array(rgb, alpha, canvas).shape[:2] == (100, 100)


def test_no_subject_keeps_the_whole_photo_when_cropping() -> None:
    rgb = np.full((20, 30, 3), 50, np.uint8)
    out = compose_array(rgb, np.zeros((20, 30), np.uint8), ComposeOptions(crop=True))
    assert out.shape[:2] == (20, 30)


def test_shadow_lies_under_the_subject_offset_down_and_right() -> None:
    rgb, alpha = _scene(200, 200, (60, 40, 140, 140))  # 100 rows tall
    shadow = Shadow(dx=0.1, dy=0.2, blur=0.02, opacity=0.5)
    out = compose_array(rgb, alpha, ComposeOptions(background=WHITE, shadow=shadow))
    assert out.shape == (200, 200, 3)
    dark = 255 - out[..., 0].astype(int)  # the red subject keeps its red: shade shows in R
    dark[alpha > 0] = 0
    ys, xs = np.nonzero(dark > 20)
    # The shadow's visible part is to the right of and below the subject.
    assert xs.min() >= 60 + 10 - 4 and ys.min() >= 40 + 20 - 4
    assert np.median(ys) > 120
    # Where it is fully under the shifted silhouette, it has the shadow's opacity.
    assert out[150, 145, 0] == pytest.approx(255 * 0.5, abs=3)
    # The subject stays on top.
    assert (out[60, 80] == (220, 30, 30)).all()


def test_shadow_on_transparent_is_semi_transparent_black() -> None:
    rgb, alpha = _scene(200, 200, (60, 40, 140, 140))
    shadow = Shadow(dx=0.1, dy=0.2, blur=0.0, opacity=0.4)
    out = compose_array(rgb, alpha, ComposeOptions(shadow=shadow))
    assert out.shape[2] == 4
    assert tuple(out[150, 145]) == (0, 0, 0, 102)
    assert out[10, 10, 3] == 0


def test_outline_is_a_ring_of_its_width_under_the_subject() -> None:
    rgb, alpha = _scene(100, 100, (30, 30, 70, 70))
    out = compose_array(rgb, alpha, ComposeOptions(outline=Outline(5, (0, 0, 255, 255))))
    assert tuple(out[50, 50]) == (220, 30, 30, 255)  # the subject on top
    assert tuple(out[50, 72]) == (0, 0, 255, 255)  # 3 px out: outline
    assert tuple(out[50, 74]) == (0, 0, 255, 255)  # the fifth pixel out
    assert out[50, 75, 3] == 0  # the sixth: nothing
    assert tuple(out[27, 27]) == (0, 0, 255, 255)  # the corner is round: 4.2 px out
    assert out[25, 25, 3] == 0  # 7.1 px from the corner


def test_blurred_background_keeps_the_subject_out_of_the_blur() -> None:
    rng = np.random.default_rng(3)
    rgb = rng.integers(0, 60, (240, 320, 3), dtype=np.uint8)
    rgb[..., 2] += 150  # a noisy blue background
    alpha = np.zeros((240, 320), np.uint8)
    rgb[60:180, 100:220] = (250, 20, 20)  # a red subject
    alpha[60:180, 100:220] = 255
    out = compose_array(rgb, alpha, ComposeOptions(blur=1.0))
    assert out.shape == (240, 320, 3)
    ring = np.zeros_like(alpha, bool)
    ring[50:190, 90:230] = True
    ring[60:180, 100:220] = False
    # Right next to the subject the blur is the background's colour, no red in it.
    assert out[ring][:, 0].max() < 70 and out[ring][:, 2].min() > 140
    # And it is smooth: the noise is gone.
    assert out[:40, :80, 2].std() < 3 < rgb[:40, :80, 2].std()


def test_background_image_fill_fit_and_stretch(tmp_path: Path) -> None:
    rgb, alpha = _scene()  # 100 x 80; the subject 40 x 30
    alpha[:] = 0  # nothing in front: the output is the background
    tall = np.zeros((100, 50, 3), np.uint8)
    tall[:, :, 1] = np.linspace(0, 255, 100, dtype=np.uint8)[:, None]
    path = tmp_path / "tall.png"
    Image.fromarray(tall).save(path)
    filled = compose_array(rgb, alpha, ComposeOptions(background_image=str(path)))
    assert filled.shape == (80, 100, 3)  # cover: opaque everywhere
    fit = ComposeOptions(background_image=str(path), background_fit="fit")
    out = compose_array(rgb, alpha, fit)
    assert out.shape == (80, 100, 4)
    assert (out[:, :25, 3] == 0).all() and (out[:, 30:70, 3] == 255).all()  # bars
    on_white = compose_array(
        rgb,
        alpha,
        ComposeOptions(background=WHITE, background_image=str(path), background_fit="fit"),
    )
    assert on_white.shape == (80, 100, 3) and (on_white[:, :25] == 255).all()
    stretched = compose_array(
        rgb, alpha, ComposeOptions(background_image=str(path), background_fit="stretch")
    )
    assert stretched.shape == (80, 100, 3)
    assert stretched[0, 50, 1] < 10 and stretched[79, 50, 1] > 245  # the whole height


def test_background_image_is_turned_upright_by_its_exif(tmp_path: Path) -> None:
    rgb, alpha = _scene()
    alpha[:] = 0
    sideways = np.zeros((60, 40, 3), np.uint8)  # stored 40 wide, 60 tall
    sideways[:30] = (255, 0, 0)  # red on top as stored
    exif = Image.Exif()
    exif[0x0112] = 6  # shown turned 90° clockwise: red on the right
    path = tmp_path / "bg.jpg"
    Image.fromarray(sideways).save(path, exif=exif.tobytes(), quality=95)
    out = compose_array(
        rgb, alpha, ComposeOptions(background_image=str(path), background_fit="stretch")
    )
    assert out[40, 90, 0] > 200 and out[40, 10, 0] < 60


@pytest.mark.parametrize(
    "options",
    [
        ComposeOptions(
            crop=True, canvas=(300, 300), margin=Length(5, True), background=WHITE, shadow=Shadow()
        ),
        ComposeOptions(crop=True, margin=Length(12), outline=Outline(8, WHITE)),
        ComposeOptions(blur=2.0, crop=True, margin=Length(10, True)),
        ComposeOptions(max_size=64, shadow=Shadow()),
        ComposeOptions(crop=True, mask_only=True, aspect=(4, 5)),
    ],
    ids=["product", "sticker", "blur-crop", "shadow-small", "mask-4:5"],
)
def test_streamed_png_equals_the_whole_composite(tmp_path: Path, options: ComposeOptions) -> None:
    rng = np.random.default_rng(9)
    rgb = rng.integers(0, 256, (301, 203, 3), dtype=np.uint8)
    alpha = np.zeros((301, 203), np.uint8)
    alpha[40:250, 30:170] = rng.choice(np.array([0, 90, 255, 255], np.uint8), (210, 140))
    whole = compose_array(rgb, alpha, options)
    out = tmp_path / "o.png"
    write_output(rgb, alpha, options, out, "png")
    np.testing.assert_array_equal(np.asarray(Image.open(out)), whole)


def test_place_copies_exactly_at_scale_one() -> None:
    rgb, alpha = _scene()
    lay = layout(alpha, ComposeOptions(crop=True, margin=Length(3)))
    np.testing.assert_array_equal(place(rgb, lay)[3:-3, 3:-3], rgb[10:40, 20:60])


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (dict(crop=True, canvas=(100, 100), margin=Length(50)), "too small for a margin"),
        (dict(margin=Length(10)), "needs a crop or a canvas"),
        (dict(blur=1.0, background_image=__file__), "not both"),
        (dict(position="left"), "Unknown position"),
        (dict(background_fit="tile"), "Unknown background fit"),
        (dict(quality=0), "Quality 0"),
        (dict(canvas=(100, 100), aspect=(1, 1)), "size or an aspect ratio"),
        (dict(background_image="/no/such/bg.jpg"), "does not exist"),
    ],
)
def test_options_that_cannot_make_an_image_are_refused(options: dict, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        ComposeOptions(**options)


# -- Presets ---------------------------------------------------------------------------


def test_every_builtin_preset_reads_into_options() -> None:
    product, fmt = options_from(get_preset("product-white-square").values)
    assert fmt == "jpeg" and product.quality == 92
    assert product.canvas == (2000, 2000) and product.margin == Length(5, True)
    assert product.crop and product.shadow == Shadow() and product.background == WHITE
    sticker, fmt = options_from(get_preset("sticker").values)
    assert fmt == "png" and sticker.outline == Outline(8, WHITE) and sticker.channels == 4
    blur, fmt = options_from(get_preset("portrait-blur").values)
    assert fmt == "jpeg" and blur.blur == 1.0 and blur.channels == 3
    web, fmt = options_from(get_preset("web").values)
    assert fmt == "webp" and web.max_size == 1600
    for name in BUILTIN:
        options, fmt = options_from(get_preset(name).values)
        assert fmt is not None
        check_export(options, fmt)  # every preset can be written in its own format


def test_values_of_reads_back_into_the_same_options(tmp_path: Path) -> None:
    image = tmp_path / "wall.png"
    Image.new("RGB", (8, 8), "teal").save(image)
    options = ComposeOptions(
        background=(10, 20, 30, 255),
        background_image=str(image),
        background_fit="fit",
        crop=True,
        margin=Length(7),
        aspect=(4, 5),
        position="bottom",
        max_size=900,
        shadow=Shadow(opacity=0.7, blur=0.05),
        outline=Outline(3, (1, 2, 3, 255)),
        quality=80,
        lossless=True,
        strip_metadata=True,
        decontaminate=True,
    )
    assert options_from(values_of(options, "webp")) == (options, "webp")


def test_user_presets_are_saved_as_toml_listed_and_override_builtins(tmp_path: Path) -> None:
    path = save_preset(
        "shop", {"background": "#fafafa", "canvas": "4:5", "format": "jpeg"}, "my shop", tmp_path
    )
    assert path == tmp_path / "shop.toml" and 'canvas = "4:5"' in path.read_text()
    (tmp_path / "web.json").write_text('{"format": "png", "max_size": 800}')
    presets = load_presets(tmp_path)
    assert presets["shop"].description == "my shop" and presets["shop"].path == path
    assert (
        presets["web"].values == {"format": "png", "max_size": 800} and not presets["web"].builtin
    )
    assert options_from(presets["shop"].values)[0].aspect == (4, 5)
    assert presets["web"].shadows_builtin and not presets["shop"].shadows_builtin


def test_saving_over_a_preset_must_say_so_and_a_builtin_comes_back(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="already a built-in preset"):
        save_preset("portrait-blur", {"background": "black"}, folder=tmp_path)
    assert not any(tmp_path.iterdir())  # nothing written
    save_preset("portrait-blur", {"background": "black"}, folder=tmp_path, replace=True)
    assert load_presets(tmp_path)["portrait-blur"].values == {"background": "black"}
    assert BUILTIN["portrait-blur"]["background"] == "blur"  # the built-in itself unchanged
    save_preset("shop", {"crop": True}, folder=tmp_path)
    with pytest.raises(UsageError, match="already one of your presets"):
        save_preset("shop", {"crop": False}, folder=tmp_path)
    assert load_presets(tmp_path)["shop"].values == {"crop": True}

    assert remove_preset("portrait-blur", tmp_path) == [tmp_path / "portrait-blur.toml"]
    back = load_presets(tmp_path)["portrait-blur"]
    assert back.builtin and back.values["background"] == "blur"
    with pytest.raises(UsageError, match="built-in preset: it cannot be removed"):
        remove_preset("portrait-blur", tmp_path)
    with pytest.raises(UsageError, match="no preset called 'nope'"):
        remove_preset("nope", tmp_path)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('format = "bmp"\n', "Unknown format"),
        ('colour = "red"\n', "Unknown export option 'colour'"),
        ('canvas = "big"\n', "Not a canvas size"),
        ("crop = \n", "cannot be read"),
    ],
)
def test_a_bad_preset_file_is_named_with_what_is_wrong(
    tmp_path: Path, text: str, words: str
) -> None:
    (tmp_path / "bad.toml").write_text(text)
    with pytest.raises(UsageError, match=words) as info:
        load_presets(tmp_path)
    assert "bad.toml" in str(info.value)


def test_a_preset_name_must_be_a_plain_file_name(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot be a preset's name"):
        save_preset("../evil", {"crop": True}, folder=tmp_path)
    assert not list(tmp_path.iterdir())


def test_jpeg_needs_a_background() -> None:
    with pytest.raises(UsageError, match="JPEG cannot keep transparency"):
        check_export(ComposeOptions(crop=True), "jpeg")
    with pytest.raises(UsageError, match="JPEG cannot keep transparency"):
        check_export(ComposeOptions(background=(255, 255, 255, 128)), "jpeg")
    check_export(ComposeOptions(background=WHITE), "jpeg")
    check_export(ComposeOptions(mask_only=True), "jpeg")
    check_export(ComposeOptions(blur=1.0), "jpeg")


def test_backgrounds_as_spelled_on_the_command_line(tmp_path: Path) -> None:
    image = tmp_path / "wall.jpg"
    Image.new("RGB", (8, 8), "teal").save(image)
    assert options_from({"background": "blur:2.5"})[0].blur == 2.5
    assert options_from({"background": "transparent"})[0] == ComposeOptions()
    both = options_from({"background": ["white", str(image)], "background_fit": "fit"})[0]
    assert both.background == WHITE and both.background_image == str(image.resolve())
    assert both.channels == 3
    with pytest.raises(UsageError, match="Two backgrounds"):
        options_from({"background": ["white", "black"]})
    with pytest.raises(UsageError, match="does not exist"):
        options_from({"background": str(tmp_path / "missing.jpg")})
    with pytest.raises(UsageError, match="Not a shadow"):
        options_from({"shadow": "soft-ish"})
    assert options_from({"shadow": "opacity=0.8,dy=0.05"})[0].shadow == Shadow(dy=0.05, opacity=0.8)


def test_composing_never_changes_the_callers_arrays() -> None:
    rgb, alpha = _scene()
    alpha[0, 0] = 5  # faint haze outside the subject's box, which crop clears
    before = rgb.copy(), alpha.copy()
    for options in (
        ComposeOptions(crop=True),
        ComposeOptions(crop=True, margin=Length(3), background=WHITE, shadow=Shadow()),
        ComposeOptions(crop=True, decontaminate=True, blur=1.0),
    ):
        compose_array(rgb, alpha, options)
        np.testing.assert_array_equal(rgb, before[0])
        np.testing.assert_array_equal(alpha, before[1])
