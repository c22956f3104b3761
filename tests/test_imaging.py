"""Reading every kind of image and writing outputs atomically."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageCms

from bgremover.errors import ImageReadError, ImageWriteError
from bgremover.export.output import is_complete_output, write_image
from bgremover.files import atomic
from bgremover.files.atomic import TEMP_SUFFIX
from bgremover.files.imaging import read_image


def save(img: Image.Image, path: Path, **kw) -> Path:
    img.save(path, **kw)
    return path


def test_rgb_roundtrip(tmp_path: Path, rgb_gradient: np.ndarray) -> None:
    loaded = read_image(save(Image.fromarray(rgb_gradient), tmp_path / "a.png"))
    assert loaded.rgb.shape == (48, 64, 3) and loaded.rgb.dtype == np.uint8
    assert loaded.alpha is None
    np.testing.assert_array_equal(loaded.rgb, rgb_gradient)


def test_rgba_keeps_alpha(tmp_path: Path, rgb_gradient: np.ndarray) -> None:
    alpha = np.full(rgb_gradient.shape[:2], 255, np.uint8)
    alpha[:, :10] = 0
    rgba = np.dstack([rgb_gradient, alpha])
    loaded = read_image(save(Image.fromarray(rgba), tmp_path / "a.png"))
    assert loaded.alpha is not None
    np.testing.assert_array_equal(loaded.alpha, alpha)


def test_opaque_alpha_is_dropped(tmp_path: Path, rgb_gradient: np.ndarray) -> None:
    rgba = np.dstack([rgb_gradient, np.full(rgb_gradient.shape[:2], 255, np.uint8)])
    assert read_image(save(Image.fromarray(rgba), tmp_path / "a.png")).alpha is None


def test_la_and_l(tmp_path: Path) -> None:
    grey = np.tile(np.arange(0, 250, 10, dtype=np.uint8), (5, 1))
    la = Image.merge("LA", [Image.fromarray(grey), Image.fromarray(np.full_like(grey, 100))])
    loaded = read_image(save(la, tmp_path / "la.png"))
    assert loaded.rgb.shape == (5, 25, 3)
    assert (loaded.rgb[..., 0] == grey).all() and (loaded.alpha == 100).all()
    assert read_image(save(Image.fromarray(grey), tmp_path / "l.png")).alpha is None


def test_palette_with_transparency(tmp_path: Path) -> None:
    img = Image.new("P", (8, 8), 1)
    img.putpalette([0, 0, 0, 255, 0, 0] + [0] * 762)
    img.paste(0, (0, 0, 4, 8))
    path = save(img, tmp_path / "p.png", transparency=0)
    loaded = read_image(path)
    assert loaded.alpha is not None
    assert (loaded.alpha[:, :4] == 0).all() and (loaded.alpha[:, 4:] == 255).all()
    assert (loaded.rgb[:, 4:, 0] == 255).all()


def test_cmyk_jpeg_and_icc(tmp_path: Path) -> None:
    cmyk = Image.new("CMYK", (16, 16), (0, 255, 255, 0))  # pure red in CMYK
    loaded = read_image(save(cmyk, tmp_path / "c.jpg", quality=95))
    r, g, b = loaded.rgb[8, 8]
    assert r > 200 and g < 60 and b < 60
    # A CMYK file carrying an ICC profile goes through colour management.
    profile = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    tagged = Image.new("CMYK", (16, 16), (0, 0, 0, 0))
    tagged.info["icc_profile"] = profile
    loaded = read_image(save(tagged, tmp_path / "c.tif", icc_profile=profile))
    assert loaded.rgb.shape == (16, 16, 3)


def test_sixteen_bit_png_is_scaled_not_clipped(tmp_path: Path) -> None:
    values = np.array([[0, 32768, 65535]], dtype=np.uint16)
    loaded = read_image(save(Image.fromarray(values), tmp_path / "g16.png"))
    assert loaded.rgb[0, :, 0].tolist() == [0, 128, 255]


def test_float_tiff(tmp_path: Path) -> None:
    values = np.array([[0.0, 0.5, 1.0]], dtype=np.float32)
    loaded = read_image(save(Image.fromarray(values, mode="F"), tmp_path / "f.tif"))
    assert loaded.rgb[0, :, 0].tolist() == [0, 128, 255]


def test_exif_orientation_applied(tmp_path: Path) -> None:
    img = Image.new("RGB", (40, 20), "white")
    img.paste((255, 0, 0), (0, 0, 10, 20))  # red stripe on the left
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to display"
    loaded = read_image(save(img, tmp_path / "r.jpg", exif=exif, quality=95))
    assert loaded.rgb.shape == (40, 20, 3)  # upright: portrait
    assert loaded.rgb[2, 10, 0] > 200 and loaded.rgb[2, 10, 1] < 80  # red now at the top


@pytest.mark.parametrize(
    ("content", "phrase"),
    [
        (b"", "empty"),
        (b"this is not an image\n", "not an image format"),
        (os.urandom(4096), "not an image format"),
    ],
)
def test_bad_files_are_clear_errors(tmp_path: Path, content: bytes, phrase: str) -> None:
    path = tmp_path / "bad.jpg"
    path.write_bytes(content)
    with pytest.raises(ImageReadError, match=phrase) as info:
        read_image(path)
    assert str(path) in str(info.value)


def test_truncated_jpeg(tmp_path: Path, rgb_gradient: np.ndarray) -> None:
    buf = io.BytesIO()
    Image.fromarray(rgb_gradient).save(buf, "JPEG")
    path = tmp_path / "cut.jpg"
    path.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    with pytest.raises(ImageReadError, match="damaged or truncated"):
        read_image(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ImageReadError, match="no such file"):
        read_image(tmp_path / "nope.png")


def test_atomic_write_leaves_no_temp(tmp_path: Path, rgb_gradient: np.ndarray) -> None:
    out = tmp_path / "sub" / "o.png"
    n = write_image(Image.fromarray(rgb_gradient), out, "png")
    assert n == out.stat().st_size > 0
    assert is_complete_output(out)
    assert not list(out.parent.glob(f"*{TEMP_SUFFIX}"))
    webp = tmp_path / "o.webp"
    write_image(Image.fromarray(np.dstack([rgb_gradient, rgb_gradient[..., 0]])), webp, "webp")
    assert Image.open(webp).mode == "RGBA"


def test_failed_write_keeps_old_file_and_leaves_nothing(
    tmp_path: Path, rgb_gradient: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "o.png"
    out.write_bytes(b"old")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    with pytest.raises(ImageWriteError, match="disk is full"):
        write_image(rgb_gradient, out, "png")
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.png"]


def test_output_folder_that_cannot_exist(tmp_path: Path, rgb_gradient: np.ndarray) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder should be")
    with pytest.raises(ImageWriteError, match="could not be written"):
        write_image(Image.fromarray(rgb_gradient), blocker / "o.png", "png")
    assert blocker.read_text().startswith("a file")


def test_incomplete_outputs_are_not_complete(tmp_path: Path, rgb_gradient: np.ndarray) -> None:
    (tmp_path / "zero.png").write_bytes(b"")
    (tmp_path / "junk.png").write_bytes(b"\x89PNG\r\n\x1a\nxx")
    assert not is_complete_output(tmp_path / "zero.png")
    assert not is_complete_output(tmp_path / "junk.png")
    assert not is_complete_output(tmp_path / "missing.png")
    for fmt in ("png", "webp"):
        whole = tmp_path / f"whole.{fmt}"
        write_image(rgb_gradient, whole, fmt)
        assert is_complete_output(whole)
        data = whole.read_bytes()
        for cut in (1, 12, len(data) // 2):
            (tmp_path / f"cut.{fmt}").write_bytes(data[:-cut])
            assert not is_complete_output(tmp_path / f"cut.{fmt}")


@pytest.mark.parametrize("channels", [0, 3, 4])
def test_png_from_arrays_is_exact(tmp_path: Path, channels: int) -> None:
    rng = np.random.default_rng(channels)
    shape = (37, 53) if channels == 0 else (37, 53, channels)
    pixels = rng.integers(0, 256, shape, dtype=np.uint8)
    out = tmp_path / "o.png"
    write_image(pixels, out, "png")
    with Image.open(out) as img:
        assert img.mode == {0: "L", 3: "RGB", 4: "RGBA"}[channels]
        np.testing.assert_array_equal(np.asarray(img), pixels)


def test_jpegs_decode_to_pillows_pixels(tmp_path: Path) -> None:
    """Upright colour JPEGs take OpenCV's decoder; the pixels must be Pillow's."""
    from conftest import DATA, SAMPLE

    jpegs = [SAMPLE, *sorted(DATA.glob("*.jpg"))]
    rng = np.random.default_rng(1)
    progressive = tmp_path / "progressive.jpg"
    Image.fromarray(rng.integers(0, 256, (77, 91, 3), dtype=np.uint8)).save(
        progressive, quality=80, progressive=True, subsampling=2
    )
    for path in [*jpegs, progressive]:
        with Image.open(path) as img:
            expected = np.asarray(img.convert("RGB"))
        np.testing.assert_array_equal(read_image(path).rgb, expected, err_msg=str(path))
    # Bytes after the end marker (some cameras append data): Pillow reads it.
    padded = tmp_path / "padded.jpg"
    padded.write_bytes(progressive.read_bytes() + b"trailing data")
    with Image.open(progressive) as img:
        np.testing.assert_array_equal(read_image(padded).rgb, np.asarray(img.convert("RGB")))
