"""The output formats as files: each one written by write_output reopens in Pillow as
what was asked for, records its photo for reruns, and carries the photo's colour
profile and EXIF over (orientation upright) unless told to leave EXIF out."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageCms

from bgremover.errors import ImageWriteError
from bgremover.export.compose import ComposeOptions
from bgremover.export.output import (
    DONE,
    FORMATS,
    SourceRecord,
    existing_output,
    format_for_path,
    is_complete_output,
    write_output,
)
from bgremover.files.imaging import Metadata, read_image

W, H = 64, 48
WHITE = (255, 255, 255, 255)
_ORIENTATION = 0x0112
_MAKE = 0x010F


@pytest.fixture
def photo() -> tuple[np.ndarray, np.ndarray]:
    """A 64x48 colour gradient and an alpha with a transparent border and a soft edge."""
    y, x = np.mgrid[0:H, 0:W]
    rgb = np.dstack([x * 4, y * 5, (x + y) * 2]).astype(np.uint8)
    alpha = np.zeros((H, W), np.uint8)
    alpha[8:40, 10:54] = 255
    alpha[8:40, 10] = 128
    return rgb, alpha


def _srgb_profile() -> bytes:
    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


def _exif(orientation: int) -> bytes:
    exif = Image.Exif()
    exif[_ORIENTATION] = orientation
    exif[_MAKE] = "bgremover test camera"
    return exif.tobytes()


def _record(tmp_path: Path) -> SourceRecord:
    source = tmp_path / "photo.jpg"
    source.write_bytes(b"not really a photo, but bytes to record" * 10)
    return SourceRecord.of(source)


def test_jpeg_and_tiff_are_recognised_by_both_endings() -> None:
    assert format_for_path(Path("a.jpg")) is FORMATS["jpeg"]
    assert format_for_path(Path("a.JPEG")) is FORMATS["jpeg"]
    assert format_for_path(Path("a.tif")) is FORMATS["tiff"]
    assert format_for_path(Path("a.tiff")) is FORMATS["tiff"]
    assert not FORMATS["jpeg"].alpha and FORMATS["tiff"].alpha


@pytest.mark.parametrize(
    ("fmt", "options", "mode"),
    [
        ("png", ComposeOptions(), "RGBA"),
        ("webp", ComposeOptions(), "RGBA"),  # lossy colour, alpha kept
        ("webp", ComposeOptions(lossless=True), "RGBA"),
        ("jpeg", ComposeOptions(background=WHITE), "RGB"),
        ("tiff", ComposeOptions(), "RGBA"),
        ("tiff", ComposeOptions(background=WHITE), "RGB"),
        ("jpeg", ComposeOptions(mask_only=True), "L"),
        ("tiff", ComposeOptions(mask_only=True), "L"),
    ],
)
def test_each_format_reopens_as_written(
    tmp_path: Path, photo, fmt: str, options: ComposeOptions, mode: str
) -> None:
    rgb, alpha = photo
    out = tmp_path / f"cut{FORMATS[fmt].extension}"
    written = write_output(rgb, alpha, options, out, fmt)
    assert written == out.stat().st_size > 0
    assert is_complete_output(out)
    with Image.open(out) as img:
        assert img.format == {"jpeg": "JPEG", "tiff": "TIFF"}.get(fmt, fmt.upper())
        assert (img.mode, img.size) == (mode, (W, H))
        pixels = np.asarray(img.convert("RGBA"))
    if mode == "RGBA":
        np.testing.assert_array_equal(pixels[..., 3] > 0, alpha > 0)  # transparency kept
    if fmt != "jpeg" and not (fmt == "webp" and not options.lossless):
        expected = alpha if options.mask_only else rgb
        got = pixels[..., 0] if options.mask_only else pixels[..., :3]
        inside = (slice(8, 40), slice(11, 54))  # opaque: the colour is the photo's
        np.testing.assert_array_equal(got[inside], expected[inside])


def test_webp_lossless_is_exact_and_lossy_follows_quality(tmp_path: Path, photo) -> None:
    rgb, alpha = photo
    exact = tmp_path / "exact.webp"
    write_output(rgb, alpha, ComposeOptions(background=WHITE, lossless=True), exact, "webp")
    with Image.open(exact) as img:
        np.testing.assert_array_equal(np.asarray(img.convert("RGB"))[8:40, 11:54], rgb[8:40, 11:54])
    sizes = {}
    for quality in (10, 95):
        out = tmp_path / f"q{quality}.webp"
        sizes[quality] = write_output(
            rgb, alpha, ComposeOptions(background=WHITE, quality=quality), out, "webp"
        )
    assert sizes[10] < sizes[95]


def test_a_transparent_cutout_is_no_jpeg(tmp_path: Path, photo) -> None:
    rgb, alpha = photo
    out = tmp_path / "cut.jpg"
    with pytest.raises(ImageWriteError) as caught:
        write_output(rgb, alpha, ComposeOptions(), out, "jpeg")
    text = str(caught.value)
    assert "JPEG cannot keep transparency" in text
    assert "background" in text and "PNG" in text and "WebP" in text
    assert not out.exists()


def test_quality_changes_the_jpeg(tmp_path: Path, photo) -> None:
    rgb, alpha = photo
    noisy = np.random.default_rng(0).integers(0, 256, rgb.shape, dtype=np.uint8)
    sizes = {}
    for quality in (None, 20, 100):
        out = tmp_path / f"q{quality}.jpg"
        options = ComposeOptions(background=WHITE, quality=quality)
        sizes[quality] = write_output(noisy, alpha, options, out, "jpeg")
    assert sizes[20] < sizes[None] < sizes[100]


@pytest.mark.parametrize("fmt", ["jpeg", "tiff"])
def test_the_record_reads_back_and_a_truncated_file_is_not_done(
    tmp_path: Path, photo, fmt: str
) -> None:
    rgb, alpha = photo
    mine = _record(tmp_path)
    out = tmp_path / f"cut{FORMATS[fmt].extension}"
    write_output(rgb, alpha, ComposeOptions(background=WHITE), out, fmt, mine)
    assert FORMATS[fmt].record(out) == mine
    seen = existing_output(out, mine)
    assert seen.state == DONE and seen.record == mine
    data = out.read_bytes()
    out.write_bytes(data[: len(data) // 2])
    assert not is_complete_output(out)
    assert existing_output(out, mine).state != DONE


def test_a_jpeg_record_is_found_after_exif_and_profile(tmp_path: Path, photo) -> None:
    """The record's XMP segment is found among the other APP segments."""
    rgb, alpha = photo
    mine = _record(tmp_path)
    out = tmp_path / "cut.jpg"
    metadata = Metadata(_srgb_profile(), _exif(6))
    write_output(rgb, alpha, ComposeOptions(background=WHITE), out, "jpeg", mine, None, metadata)
    assert existing_output(out, mine).state == DONE


def _photo_with_profile(tmp_path: Path, rgb: np.ndarray, profile: bytes) -> Path:
    path = tmp_path / "profiled.jpg"
    Image.fromarray(rgb).save(path, "JPEG", quality=95, icc_profile=profile, exif=_exif(1))
    return path


@pytest.mark.parametrize("fmt", ["png", "webp", "jpeg", "tiff"])
def test_the_colour_profile_is_carried_over(tmp_path: Path, photo, fmt: str) -> None:
    rgb, alpha = photo
    profile = _srgb_profile()
    loaded = read_image(_photo_with_profile(tmp_path, rgb, profile))
    assert loaded.icc_profile == profile and loaded.metadata.icc_profile == profile
    options = ComposeOptions(background=WHITE) if fmt == "jpeg" else ComposeOptions()
    out = tmp_path / f"cut{FORMATS[fmt].extension}"
    write_output(loaded.rgb, alpha, options, out, fmt, metadata=loaded.metadata)
    with Image.open(out) as img:
        assert img.info["icc_profile"] == profile


def test_a_pillow_image_carries_its_profile_too(photo) -> None:
    from bgremover.files.imaging import from_pil

    rgb, _ = photo
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "PNG", icc_profile=_srgb_profile())
    buf.seek(0)
    with Image.open(buf) as img:
        assert from_pil(img).metadata.icc_profile == _srgb_profile()


def test_a_profile_not_for_rgb_is_not_carried(tmp_path: Path, photo) -> None:
    rgb, _ = photo
    grey = ImageCms.ImageCmsProfile(ImageCms.createProfile("LAB")).tobytes()
    assert grey[16:20] != b"RGB "
    path = tmp_path / "lab.png"
    Image.fromarray(rgb).save(path, "PNG", icc_profile=grey)
    assert read_image(path).icc_profile is None


@pytest.mark.parametrize("fmt", ["png", "webp", "jpeg", "tiff"])
def test_exif_is_written_upright_or_left_out(tmp_path: Path, photo, fmt: str) -> None:
    rgb, alpha = photo
    metadata = Metadata(None, _exif(6))  # the photo was stored on its side
    ext = FORMATS[fmt].extension
    kept, stripped = tmp_path / f"kept{ext}", tmp_path / f"stripped{ext}"
    options = ComposeOptions(background=WHITE)
    write_output(rgb, alpha, options, kept, fmt, metadata=metadata)
    with Image.open(kept) as img:
        exif = img.getexif()
        assert exif.get(_ORIENTATION) == 1
        assert exif.get(_MAKE) == "bgremover test camera"
        assert img.size == (W, H)
    strip = ComposeOptions(background=WHITE, strip_metadata=True)
    write_output(rgb, alpha, strip, stripped, fmt, metadata=metadata)
    with Image.open(stripped) as img:
        assert img.getexif().get(_MAKE) is None
        assert "exif" not in img.info


def test_exif_of_a_rotated_photo_is_upright_in_the_output(tmp_path: Path, photo) -> None:
    rgb, _ = photo
    path = tmp_path / "sideways.jpg"
    Image.fromarray(rgb).save(path, "JPEG", exif=_exif(6))
    loaded = read_image(path)
    assert loaded.rgb.shape[:2] == (W, H)  # turned upright when read
    out = tmp_path / "cut.png"
    alpha = np.full(loaded.rgb.shape[:2], 255, np.uint8)
    write_output(loaded.rgb, alpha, ComposeOptions(), out, "png", metadata=loaded.metadata)
    with Image.open(out) as img:
        assert img.getexif().get(_ORIENTATION) == 1
        assert img.getexif().get(_MAKE) == "bgremover test camera"


@pytest.mark.parametrize("fmt", ["png", "webp", "jpeg", "tiff"])
def test_a_greyscale_mask_gets_no_colour_profile(tmp_path: Path, photo, fmt: str) -> None:
    rgb, alpha = photo
    out = tmp_path / f"mask{FORMATS[fmt].extension}"
    metadata = Metadata(_srgb_profile(), None)
    write_output(rgb, alpha, ComposeOptions(mask_only=True), out, fmt, metadata=metadata)
    with Image.open(out) as img:
        assert img.mode == ("RGB" if fmt == "webp" else "L")  # WebP has no greyscale
        assert "icc_profile" not in img.info or not img.info["icc_profile"]
