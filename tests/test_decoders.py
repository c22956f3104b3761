"""Only the formats of bgremover's allow-list are decoded, each by the decoder its
signature names; PostScript/EPS and PDF are refused before Pillow sees them, so no
Ghostscript ever starts (a looping EPS would otherwise hang the reader for ever).

A fake ``gs`` first on PATH writes a marker file when anything starts it: the control
test shows that plain Pillow does start it for the looping EPS, and every refusal test
that the marker stays absent."""

from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover.errors import ImageReadError
from bgremover.files.imaging import (
    DECODERS,
    HEIF_EXTENSIONS,
    IMAGE_EXTENSIONS,
    READABLE,
    identify,
    probe,
    read_image,
)

from conftest import DATA, SAMPLE, drop_files, run_cli

LOOPING_EPS = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 64 64\n{ } loop\n"
POSTSCRIPT = b"%!PS\n/Helvetica findfont 12 scalefont setfont\n{ } loop\nshowpage\n"
PDF = (
    b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
    b"2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n"
    b"trailer << /Root 1 0 R >>\n%%EOF\n"
)
#: name, content, the words the refusal must have.
REFUSED = [
    ("loop.eps", LOOPING_EPS, "PostScript/EPS is not opened: decoding it would run Ghostscript"),
    ("page.ps", POSTSCRIPT, "PostScript/EPS is not opened: decoding it would run Ghostscript"),
    ("doc.pdf", PDF, "PDF is not opened"),
    # The signature decides, whatever the name says.
    ("disguised.png", LOOPING_EPS, "PostScript/EPS is not opened"),
]
FIX = "as PNG or TIFF first"
QUICK_S = 2.0  # in-process refusals read 256 bytes: far under this


@pytest.fixture()
def fake_gs(tmp_path: Path) -> tuple[Path, Path]:
    """A folder holding a ``gs`` that records each start in a marker file (and answers
    ``--version`` as Ghostscript does, then fails any rendering at once), and the marker."""
    if sys.platform == "win32":
        pytest.skip("the fake Ghostscript is a shell script")
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    marker = tmp_path / "gs-was-started"
    script = folder / "gs"
    script.write_text(
        f'#!/bin/sh\necho "$@" >> "{marker}"\n[ "$1" = "--version" ] && exit 0\nexit 1\n'
    )
    script.chmod(0o755)
    return folder, marker


def with_fake_gs(folder: Path) -> dict[str, str]:
    return {"PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_the_control_plain_pillow_starts_ghostscript(
    tmp_path: Path, fake_gs: tuple[Path, Path]
) -> None:
    """What the allow-list prevents: Pillow left to sniff opens the EPS and runs gs."""
    folder, marker = fake_gs
    eps = tmp_path / "loop.eps"
    eps.write_bytes(LOOPING_EPS)
    code = "import sys; from PIL import Image; Image.open(sys.argv[1]).load()"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(eps)],
        capture_output=True,
        text=True,
        env={**os.environ, **with_fake_gs(folder)},
        timeout=120,
    )
    assert proc.returncode != 0  # the fake gs fails the rendering
    assert marker.exists(), proc.stderr


@pytest.mark.parametrize(("name", "content", "words"), REFUSED)
def test_read_image_refuses_quickly_without_ghostscript(
    tmp_path: Path,
    fake_gs: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    content: bytes,
    words: str,
) -> None:
    folder, marker = fake_gs
    monkeypatch.setenv("PATH", with_fake_gs(folder)["PATH"])
    path = tmp_path / name
    path.write_bytes(content)
    start = time.monotonic()
    with pytest.raises(ImageReadError) as caught:
        read_image(path)
    assert time.monotonic() - start < QUICK_S
    exc = caught.value
    assert str(path) in exc.message and words in exc.message
    assert FIX in exc.fix and FIX in exc.app_message
    assert "Pillow" not in exc.app_message and "--" not in exc.app_message
    with pytest.raises(ImageReadError, match="is not opened"):
        probe(path)
    assert not marker.exists()


@pytest.mark.parametrize(("name", "content", "words"), REFUSED[:3])
def test_the_cli_refuses_without_ghostscript(
    tmp_path: Path,
    fake_gs: tuple[Path, Path],
    tiny_model: Path,
    name: str,
    content: bytes,
    words: str,
) -> None:
    folder, marker = fake_gs
    path = tmp_path / name
    path.write_bytes(content)
    out = tmp_path / "out.png"
    start = time.monotonic()
    proc = run_cli(
        "remove", str(path), "-o", str(out), "--model", str(tiny_model), env=with_fake_gs(folder)
    )
    assert time.monotonic() - start < 120
    assert proc.returncode != 0, proc.stderr
    assert words in proc.stderr and FIX in proc.stderr, proc.stderr
    assert name in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()
    assert not marker.exists()


def test_probe_takes_bytes_and_names_them(fake_gs: tuple[Path, Path]) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (7, 5), "red").save(buffer, "PNG")
    assert probe(buffer.getvalue()) == ("PNG", 7, 5)
    assert tuple(probe(SAMPLE.read_bytes())) == ("JPEG", 512, 600)
    with pytest.raises(ImageReadError) as caught:
        probe(LOOPING_EPS)
    assert caught.value.message.startswith("the image: PostScript/EPS is not opened")
    with pytest.raises(ImageReadError) as caught:
        probe(PDF, name="the uploaded image")
    assert caught.value.message.startswith("the uploaded image: PDF is not opened")
    with pytest.raises(ImageReadError, match="not an image format bgremover can read"):
        probe(b"GIF89a but nothing after it")
    with pytest.raises(ImageReadError, match="empty"):
        probe(b"")
    assert not fake_gs[1].exists()


def test_the_signature_wins_over_the_name(tmp_path: Path) -> None:
    png = DATA / "skimage_chelsea.png"
    expected = read_image(png).rgb
    for name in ("cat.jpg", "cat.eps", "cat.pdf", "cat.tga"):
        renamed = tmp_path / name
        shutil.copy(png, renamed)
        assert probe(renamed).format == "PNG"
        np.testing.assert_array_equal(read_image(renamed).rgb, expected)


def test_anything_else_is_not_decoded_even_what_pillow_reads(tmp_path: Path) -> None:
    """XBM, MSP, DDS and BLP open in plain Pillow; bgremover refuses them, naming what
    it reads."""
    img = Image.new("1", (16, 16), 1)
    modes = {"XBM": "1", "MSP": "1", "DDS": "RGB", "BLP": "P"}
    for fmt, mode in modes.items():
        path = tmp_path / f"picture.{fmt.lower()}"
        img.convert(mode).save(path, fmt)
        with Image.open(path) as plain:
            assert plain.format == fmt  # Pillow alone would have decoded it
        with pytest.raises(ImageReadError) as caught:
            read_image(path)
        message = caught.value.message
        assert "not an image format bgremover can read" in message
        assert "JPEG, PNG, WebP, TIFF" in message and "QOI" in message


@pytest.mark.skipif(bool(HEIF_EXTENSIONS), reason="HEIC support is installed here")
def test_a_heic_by_its_signature_gets_the_install_advice(tmp_path: Path) -> None:
    photo = tmp_path / "holiday.jpg"  # the signature says HEIC, whatever the name
    photo.write_bytes(b"\0\0\0\x18ftypheic\0\0\0\0mif1heic" + b"\0" * 64)
    with pytest.raises(ImageReadError) as caught:
        read_image(photo)
    assert "pip install 'bgremover[heic]'" in caught.value.app_message


def test_heif_brands_tell_avif_from_heic() -> None:
    def ftyp(major: bytes, *compatible: bytes) -> bytes:
        body = major + b"\0\0\0\0" + b"".join(compatible)
        return struct.pack(">I", 8 + len(body)) + b"ftyp" + body

    def fmt(head: bytes) -> str | None:
        found = identify(head)
        return getattr(found, "format", None)

    assert fmt(ftyp(b"avif", b"mif1")) == "AVIF"
    assert fmt(ftyp(b"mif1", b"mif1", b"avif", b"miaf")) == "AVIF"
    assert fmt(ftyp(b"heic", b"mif1")) == "HEIF"
    assert fmt(ftyp(b"mif1", b"heic")) == "HEIF"
    assert fmt(ftyp(b"isom", b"mp41")) is None  # a video


# -- every allowed format, written by Pillow and read back ----------------------------


def quadrants(size: int = 16) -> Image.Image:
    """Red, green, blue and white quarters: four colours, exact in palette formats."""
    a = np.zeros((size, size, 3), np.uint8)
    half = size // 2
    a[:half, :half] = (255, 0, 0)
    a[:half, half:] = (0, 255, 0)
    a[half:, :half] = (0, 0, 255)
    a[half:, half:] = (255, 255, 255)
    return Image.fromarray(a)


def psd_bytes(img: Image.Image) -> bytes:
    """A flat 8-bit RGB Photoshop file (Pillow reads PSD but does not write it)."""
    rgb = np.asarray(img.convert("RGB"))
    height, width = rgb.shape[:2]
    header = b"8BPS" + struct.pack(">H6xHIIHH", 1, 3, height, width, 8, 3)
    no_sections = struct.pack(">III", 0, 0, 0)  # colour mode data, resources, layers
    raw_planes = struct.pack(">H", 0) + rgb.transpose(2, 0, 1).tobytes()
    return header + no_sections + raw_planes


def apng_bytes(img: Image.Image) -> bytes:
    buffer = io.BytesIO()
    second = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    img.save(buffer, "PNG", save_all=True, append_images=[second], duration=100)
    return buffer.getvalue()


def saved(fmt: str, mode: str = "RGB", **options: object) -> Callable[[Image.Image], bytes]:
    def write(img: Image.Image) -> bytes:
        buffer = io.BytesIO()
        img.convert(mode).save(buffer, fmt, **options)
        return buffer.getvalue()

    return write


#: ending, how the file is made, the mode it holds, its decoder, the mean error allowed.
ROUND_TRIPS: list[tuple[str, Callable[[Image.Image], bytes], str, str, float]] = [
    ("jpg", saved("JPEG", quality=95, subsampling=0), "RGB", "JPEG", 8.0),
    ("png", saved("PNG"), "RGB", "PNG", 0.0),
    ("apng", apng_bytes, "RGB", "PNG", 0.0),
    ("webp", saved("WEBP", lossless=True), "RGB", "WEBP", 0.0),
    ("tif", saved("TIFF", compression="tiff_deflate"), "RGB", "TIFF", 0.0),
    ("bmp", saved("BMP"), "RGB", "BMP", 0.0),
    ("dib", saved("DIB"), "RGB", "DIB", 0.0),
    (
        "gif",
        saved("GIF", save_all=True, append_images=[Image.new("RGB", (16, 16))]),
        "RGB",
        "GIF",
        0.0,
    ),
    ("ppm", saved("PPM"), "RGB", "PPM", 0.0),
    ("pgm", saved("PPM", "L"), "L", "PPM", 0.0),
    ("pbm", saved("PPM", "1"), "1", "PPM", 0.0),
    ("tga", saved("TGA"), "RGB", "TGA", 0.0),
    ("ico", saved("ICO", sizes=[(16, 16)]), "RGB", "ICO", 0.0),
    ("jp2", saved("JPEG2000"), "RGB", "JPEG2000", 0.0),
    ("j2k", saved("JPEG2000"), "RGB", "JPEG2000", 0.0),
    ("psd", psd_bytes, "RGB", "PSD", 0.0),
    ("pcx", saved("PCX"), "RGB", "PCX", 0.0),
    ("sgi", saved("SGI"), "RGB", "SGI", 0.0),
    ("qoi", saved("QOI"), "RGB", "QOI", 0.0),
    ("avif", saved("AVIF", quality=95), "RGB", "AVIF", 12.0),
    ("heic", saved("HEIF", quality=95), "RGB", "HEIF", 12.0),
]


@pytest.mark.parametrize(
    ("ext", "write", "mode", "fmt", "tolerance"), ROUND_TRIPS, ids=[r[0] for r in ROUND_TRIPS]
)
def test_each_allowed_format_round_trips(
    tmp_path: Path,
    ext: str,
    write: Callable[[Image.Image], bytes],
    mode: str,
    fmt: str,
    tolerance: float,
) -> None:
    if fmt not in {d.format for d in READABLE}:
        pytest.skip(f"{fmt} is not readable in this installation")
    img = quadrants()
    path = tmp_path / f"picture.{ext}"
    path.write_bytes(write(img))
    assert f".{ext}" in IMAGE_EXTENSIONS  # a folder walk picks it up
    assert probe(path) == (fmt, 16, 16)
    loaded = read_image(path)
    expected = np.asarray(img.convert(mode).convert("RGB")).astype(np.int16)
    error = np.abs(loaded.rgb.astype(np.int16) - expected).mean()
    assert error <= tolerance, (ext, error)


def test_every_decoder_has_a_round_trip_and_its_endings_are_walked() -> None:
    tested = {fmt for _, _, _, fmt, _ in ROUND_TRIPS}
    assert {d.format for d in DECODERS} <= tested
    assert {e for d in READABLE for e in d.extensions} == IMAGE_EXTENSIONS
    assert not IMAGE_EXTENSIONS & {".eps", ".ps", ".pdf", ".ai", ".svg"}


# -- the app ---------------------------------------------------------------------------

APP_WAIT_MS = 300_000


def _eps_file(tmp_path: Path) -> Path:
    eps = tmp_path / "drawing.eps"
    eps.write_bytes(LOOPING_EPS)
    return eps


@pytest.mark.model
def test_the_app_shows_the_refusal_of_a_dropped_eps(
    qtbot, window, tmp_path: Path, fake_gs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("PySide6")
    from PySide6.QtWidgets import QMessageBox

    from bgremover.gui.queue import Status

    folder, marker = fake_gs
    monkeypatch.setenv("PATH", with_fake_gs(folder)["PATH"])
    eps = _eps_file(tmp_path)
    with qtbot.waitSignal(window.settled, timeout=APP_WAIT_MS):
        drop_files(window, [eps])
    entry = window.current_entry()
    assert entry is not None and entry.status is Status.FAILED
    assert "PostScript/EPS is not opened" in entry.error and "Ghostscript" in entry.error
    shown = window.drop_zone.text.text()
    assert "PostScript/EPS is not opened" in shown and FIX in shown
    assert not window.findChildren(QMessageBox)  # a bad file never opens a dialog
    assert not marker.exists()


@pytest.mark.model
def test_the_open_dialog_lists_the_allowed_formats_and_refuses_an_eps(
    qtbot, window, tmp_path: Path, fake_gs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Qt's own Open dialog (the platform's cannot be driven offscreen) with the app's
    filters; the EPS is typed into its name box, as a user does."""
    pytest.importorskip("PySide6")
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QFileDialog, QLineEdit

    from bgremover.gui.queue import Status

    folder, marker = fake_gs
    monkeypatch.setenv("PATH", with_fake_gs(folder)["PATH"])
    eps = _eps_file(tmp_path)
    filters: list[str] = []

    def qt_open_dialog(parent, caption, start, filter_text, *args, **kwargs):
        filters.append(filter_text)
        dialog = QFileDialog(parent, caption, start, filter_text)
        dialog.setOption(QFileDialog.Option.DontUseNativeDialog)
        dialog.setFileMode(QFileDialog.FileMode.ExistingFiles)
        dialog.setDirectory(str(eps.parent))

        def type_name() -> None:
            dialog.findChild(QLineEdit, "fileNameEdit").setText(eps.name)
            dialog.accept()

        QTimer.singleShot(100, type_name)
        if dialog.exec():
            return dialog.selectedFiles(), dialog.selectedNameFilter()
        return [], ""

    monkeypatch.setattr(QFileDialog, "getOpenFileNames", qt_open_dialog)
    with qtbot.waitSignal(window.settled, timeout=APP_WAIT_MS):
        window.opening.open_files()
    images = filters[0].split(";;")[0]
    listed = set(images[images.index("(") + 1 : images.index(")")].split())
    assert listed == {f"*{e}" for e in IMAGE_EXTENSIONS}
    entry = window.current_entry()
    assert entry is not None and entry.name == eps.name and entry.status is Status.FAILED
    assert "PostScript/EPS is not opened" in entry.error
    assert not marker.exists()


@pytest.mark.model
def test_the_app_refuses_an_eps_given_as_a_mask(
    qtbot, window, tmp_path: Path, fake_gs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("PySide6")
    from PySide6.QtWidgets import QMessageBox

    folder, marker = fake_gs
    monkeypatch.setenv("PATH", with_fake_gs(folder)["PATH"])
    with qtbot.waitSignal(window.settled, timeout=APP_WAIT_MS):
        window.add_paths([SAMPLE])
    assert window.editing.load_mask_from(_eps_file(tmp_path)) is not None

    def refusal_shown() -> bool:
        return any(
            "PostScript/EPS is not opened" in box.text() for box in window.findChildren(QMessageBox)
        )

    qtbot.waitUntil(refusal_shown, timeout=APP_WAIT_MS)
    assert not window.current_entry().edits
    assert not marker.exists()


def test_an_edits_file_cannot_smuggle_another_format_in_as_its_mask(
    fake_gs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loaded mask travels inside an edits file as PNG bytes; only PNG is decoded."""
    from bgremover.errors import EditsError
    from bgremover.touchup.edit import Edits, Operation, apply_edits

    folder, marker = fake_gs
    monkeypatch.setenv("PATH", with_fake_gs(folder)["PATH"])
    rgb = np.zeros((16, 16, 3), np.uint8)
    base = np.zeros((16, 16), np.uint8)
    half = base.copy()
    half[:, :8] = 255
    genuine = Edits((16, 16), (Operation.load(half),))
    np.testing.assert_array_equal(apply_edits(genuine, rgb, base), half)
    smuggled = Edits((16, 16), (Operation("load", mask_png=LOOPING_EPS),))
    with pytest.raises(EditsError, match="could not be decoded"):
        apply_edits(smuggled, rgb, base)
    assert not marker.exists()
