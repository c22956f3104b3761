"""Export options and presets on the command line, run as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import DATA, SAMPLE, cli, offline_env

PHOTOS = sorted(p for p in DATA.iterdir() if p.suffix in (".jpg", ".png"))


def _photos(folder: Path) -> Path:
    folder.mkdir()
    for photo in PHOTOS:
        (folder / photo.name).write_bytes(photo.read_bytes())
    return folder


@pytest.mark.model
def test_product_preset_writes_square_jpegs_with_the_subject_inside_the_margin(
    tmp_path: Path, u2netp_remover
) -> None:
    """The preset's batch, and the same photos' layout checked before flattening."""
    from bgremover.export.compose import placed_alpha
    from bgremover.export.presets import get_preset, options_from
    from bgremover.mask.subject import subject_box

    photos = _photos(tmp_path / "in")
    out = tmp_path / "out"
    proc = cli("remove", str(photos), "-o", str(out), "--preset", "product-white-square")
    assert proc.returncode == 0, proc.stderr
    written = sorted(out.iterdir())
    assert [p.name for p in written] == [p.stem + ".jpg" for p in PHOTOS]
    for path in written:
        with Image.open(path) as img:
            assert (img.format, img.mode, img.size) == ("JPEG", "RGB", (2000, 2000))
    options, fmt = options_from(get_preset("product-white-square").values)
    assert fmt == "jpeg"
    for photo in PHOTOS:
        placed = placed_alpha(u2netp_remover.remove(photo).alpha, options)
        assert placed.shape == (2000, 2000)
        box = subject_box(placed)
        assert box is not None
        x0, y0, x1, y1 = box
        margins = (x0, y0, 2000 - x1, 2000 - y1)
        assert min(margins) >= 100, (photo.name, margins)  # 5 % of 2000
        # Centred, to the pixel at each edge.
        assert abs(margins[0] - margins[2]) <= 2 and abs(margins[1] - margins[3]) <= 2
        assert min(margins) <= 102  # scaled to fit: it reaches the margin, to the pixel


@pytest.mark.model
def test_blur_crop_shadow_and_an_options_override_of_a_preset(
    tmp_path: Path, u2netp_path: Path
) -> None:
    photo = DATA / "skimage_coffee.png"
    blurred = tmp_path / "blur.jpg"
    cli(
        "remove", str(photo), "-o", str(blurred),
        "--background", "blur", "--crop", "5%", "--shadow", check=True,
    )  # fmt: skip
    with Image.open(blurred) as img, Image.open(photo) as src:
        assert img.mode == "RGB" and img.width < src.width  # cropped to the cup
    # A preset with one option changed: the web preset, as PNG and smaller.
    small = tmp_path / "small"
    cli(
        "remove", str(photo), "-o", str(small), "--preset", "web", "--max-size", "200",
        "--format", "png", check=True,
    )  # fmt: skip
    with Image.open(small / "skimage_coffee.png") as img:
        assert img.format == "PNG" and max(img.size) == 200 and img.mode == "RGBA"


@pytest.mark.model
def test_sticker_preset_is_a_cropped_png_with_its_outline(tmp_path: Path, u2netp_remover) -> None:
    from bgremover.mask.subject import subject_box

    out = tmp_path / "sticker.png"
    cli("remove", str(SAMPLE), "-o", str(out), "--preset", "sticker", check=True)
    rgba = np.asarray(Image.open(out))
    assert rgba.shape[2] == 4
    solid = rgba[..., 3] == 255
    # The outline: opaque white pixels outside the subject, at the border of what shows.
    white = solid & (rgba[..., :3] == 255).all(axis=2)
    assert white.sum() > 100
    # Where the photo's rows land: its subject box starts 12 px (the margin) below the
    # top; the outline is 8 px around the opaque part (alpha >= 128), so it reaches up to
    # 8 px above the first opaque row, and above that there is nothing (no faint haze).
    alpha = u2netp_remover.remove(SAMPLE).alpha
    box = subject_box(alpha)
    assert box is not None
    first_opaque = int(np.flatnonzero((alpha >= 128).any(axis=1))[0])
    reach = first_opaque - box[1] + 12 - 8
    assert reach > 0
    assert (rgba[:reach, :, 3] == 0).all() and rgba[reach : reach + 8, :, 3].max() > 0


def test_presets_lists_builtins_and_the_users_own(tmp_path: Path) -> None:
    folder = tmp_path / "presets"
    folder.mkdir()
    (folder / "shop.toml").write_text(
        'description = "my shop"\nbackground = "#f4f4f4"\ncanvas = "4:5"\nformat = "jpeg"\n'
    )
    env = {"BGREMOVER_PRESETS": str(folder)}
    proc = cli("presets", env=env, check=True)
    for name in ("product-white-square", "sticker", "portrait-blur", "web", "shop"):
        assert name in proc.stdout
    assert "canvas=4:5" in proc.stdout and str(folder) in proc.stdout
    rows = json.loads(cli("presets", "--json", env=env, check=True).stdout)
    shop = next(r for r in rows if r["name"] == "shop")
    assert shop["builtin"] is False and shop["options"]["canvas"] == "4:5"


def test_a_preset_with_a_builtins_name_is_marked_and_removed_to_get_the_builtin_back(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "presets"
    folder.mkdir()
    (folder / "portrait-blur.toml").write_text('background = "black"\n')
    env = {"BGREMOVER_PRESETS": str(folder)}
    listed = cli("presets", env=env, check=True).stdout
    assert "used instead of the built-in preset" in listed
    assert "bgremover presets --remove portrait-blur" in listed
    proc = cli("presets", "--remove", "portrait-blur", env=env, check=True)
    assert "the built-in preset is used again" in proc.stdout
    assert not (folder / "portrait-blur.toml").exists()
    rows = json.loads(cli("presets", "--json", env=env, check=True).stdout)
    blur = next(r for r in rows if r["name"] == "portrait-blur")
    assert blur["builtin"] is True and blur["options"]["background"] == "blur"
    refused = cli("presets", "--remove", "portrait-blur", env=env)
    assert refused.returncode == 2 and "cannot be removed" in refused.stderr


@pytest.mark.model
def test_a_user_preset_is_used_by_name(tmp_path: Path, u2netp_path: Path) -> None:
    folder = tmp_path / "presets"
    folder.mkdir()
    (folder / "grey.toml").write_text('background = "#808080"\nformat = "jpeg"\nmax_size = 100\n')
    out = tmp_path / "out"
    cli(
        "remove", str(SAMPLE), "-o", str(out), "--preset", "grey",
        env={"BGREMOVER_PRESETS": str(folder)}, check=True,
    )  # fmt: skip
    with Image.open(out / "sample.jpg") as img:
        assert img.format == "JPEG" and max(img.size) == 100
        corner = np.asarray(img)[0, 0].astype(int)
    assert np.abs(corner - 128).max() <= 3  # the background shows at the corner


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--canvas", "100x100", "--margin", "60"], "too small for a margin"),
        (["--canvas", "big"], "Not a canvas size"),
        (["--background", "mauve-ish"], "Not a colour, an image file or blur"),
        (["--background", "nowhere/wall.jpg"], "does not exist"),
        (["--margin", "5%"], "needs a crop or a canvas"),
        (["--preset", "nope"], "No preset called 'nope'"),
        (["--format", "jpeg"], "JPEG cannot keep transparency"),
        (["--preset", "sticker", "--format", "jpeg"], "JPEG cannot keep transparency"),
        (["--position", "left", "--canvas", "1:1"], "Unknown position"),
        (["--quality", "101"], "Quality 101"),
        (["--outline", "thick"], "Not an outline"),
        (["--shadow", "big"], "Not a shadow"),
    ],
)
def test_export_options_are_checked_before_the_model_loads(
    tmp_path: Path, args: list[str], words: str
) -> None:
    out = tmp_path / "out"
    proc = cli("remove", str(SAMPLE), "-o", str(out), *args, env=offline_env(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr
    assert "Could not obtain model" not in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_a_broken_user_preset_file_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "presets"
    folder.mkdir()
    (folder / "broken.toml").write_text("canvas = \n")
    proc = cli("presets", env={"BGREMOVER_PRESETS": str(folder)})
    assert proc.returncode == 2 and "broken.toml" in proc.stderr
    assert "Traceback" not in proc.stderr
