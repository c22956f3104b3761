"""Reading images (orientation, modes, bit depths) and writing them atomically."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import cv2
import numpy as np
from PIL import Image, ImageCms, ImageOps, UnidentifiedImageError

from .errors import DiskFullError, ImageReadError, ImageWriteError
from .png import PngWriter

#: File name endings walked when a folder is given. Pillow reads all of them.
IMAGE_EXTENSIONS = frozenset(
    [
        ".jpg",
        ".jpeg",
        ".jpe",
        ".jfif",
        ".png",
        ".webp",
        ".bmp",
        ".dib",
        ".tif",
        ".tiff",
        ".gif",
        ".ppm",
        ".pgm",
        ".pbm",
        ".pnm",
        ".tga",
        ".ico",
        ".jp2",
        ".j2k",
        ".jpx",
        ".psd",
        ".pcx",
        ".sgi",
        ".qoi",
    ]
)

#: Output formats and the Pillow options they are written with (PNG of 8-bit grey, RGB
#: and RGBA goes through bgremover's streaming writer instead, see png.py).
OUTPUT_FORMATS = {
    "png": {"format": "PNG"},
    # Lossy colour at a high quality, lossless alpha: edges stay exact, files stay small.
    "webp": {"format": "WEBP", "quality": 90, "alpha_quality": 100, "method": 4},
}

#: Suffix of the temporary files that atomic writes rename into place. A file
#: with this suffix is always an unfinished write and is safe to delete.
TEMP_SUFFIX = ".bgremover-part"


@dataclass(frozen=True)
class LoadedImage:
    """An upright 8-bit RGB image and the alpha channel it came with, if any."""

    rgb: np.ndarray  # (H, W, 3) uint8
    alpha: np.ndarray | None  # (H, W) uint8, None when the input had no transparency
    source: str  # file path, or a short description for in-memory images
    mode: str  # the Pillow mode the image was stored in


#: Largest image read, in megapixels, unless BGREMOVER_MAX_MEGAPIXELS says otherwise: a
#: guard against decompression bombs (tiny files announcing huge images). 250 MP covers
#: the largest camera and panorama files while keeping memory bounded.
DEFAULT_MAX_MEGAPIXELS = 250.0
MAX_MEGAPIXELS_ENV = "BGREMOVER_MAX_MEGAPIXELS"

# bgremover checks the size itself (below), with a message that names its own limit;
# Pillow's built-in check would refuse at 179 MP with a warning before that.
Image.MAX_IMAGE_PIXELS = None

try:  # HEIC/HEIF (iPhone photos) when the optional pillow-heif plugin is installed
    import pillow_heif

    pillow_heif.register_heif_opener()
    HEIF_EXTENSIONS = frozenset({".heic", ".heif"})
except ImportError:
    HEIF_EXTENSIONS = frozenset()
IMAGE_EXTENSIONS = IMAGE_EXTENSIONS | HEIF_EXTENSIONS


def max_megapixels() -> float:
    try:
        return float(os.environ.get(MAX_MEGAPIXELS_ENV, DEFAULT_MAX_MEGAPIXELS))
    except ValueError:
        return DEFAULT_MAX_MEGAPIXELS


def read_image(path: str | os.PathLike[str]) -> LoadedImage:
    """Read an image file; any failure is an :class:`ImageReadError` naming the file.

    Animated images (GIF, WebP, APNG) give their first frame.
    """
    p = Path(path)
    try:
        if p.stat().st_size == 0:
            raise ImageReadError(f"{p}: the file is empty (0 bytes). Re-export or re-copy it.")
        with Image.open(p) as img:
            limit = max_megapixels()
            megapixels = img.width * img.height / 1e6
            if megapixels > limit:
                raise ImageReadError(
                    f"{p}: refused, {img.width}×{img.height} is {megapixels:.0f} megapixels, "
                    f"over the limit of {limit:g} megapixels that protects against "
                    f"decompression bombs. If the image is genuine, raise the limit with "
                    f"--max-megapixels or the {MAX_MEGAPIXELS_ENV} environment variable."
                )
            upright = img.getexif().get(_ORIENTATION, 1) == 1
            if img.format == "JPEG" and img.mode == "RGB" and upright:
                rgb = _decode_jpeg(p)
                if rgb is not None:
                    return LoadedImage(rgb, None, str(p), img.mode)
            img.load()  # decode now so that truncated files fail here, not later
            return from_pil(img, str(p), owned=True)
    except ImageReadError:
        raise
    except FileNotFoundError:
        raise ImageReadError(f"{p}: no such file.") from None
    except PermissionError:
        raise ImageReadError(f"{p}: permission denied; check the file's permissions.") from None
    except IsADirectoryError:
        raise ImageReadError(f"{p}: is a folder, not an image.") from None
    except Image.DecompressionBombError as exc:
        raise ImageReadError(f"{p}: refused as a possible decompression bomb ({exc}).") from None
    except UnidentifiedImageError:
        heic = "" if HEIF_EXTENSIONS else " HEIC/HEIF photos need `pip install pillow-heif`."
        raise ImageReadError(
            f"{p}: not an image format Pillow can read. Supported: JPEG, PNG, WebP, "
            f"TIFF, BMP, GIF and the other formats Pillow reads.{heic}"
        ) from None
    except MemoryError:
        raise ImageReadError(
            f"{p}: not enough memory to decode it; lower --max-megapixels or close other programs."
        ) from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise ImageReadError(f"{p}: the image data is damaged or truncated ({exc}).") from None


_ORIENTATION = 0x0112  # the EXIF tag


def _decode_jpeg(path: Path) -> np.ndarray | None:
    """An upright colour JPEG decoded by OpenCV, or None to let Pillow do it.

    Both use libjpeg-turbo with the same settings and give the same pixels (checked
    on the test photos), but OpenCV decodes straight into one array: at 12
    megapixels 40 % faster and without Pillow's 48 MB internal copy. Only files
    that end with the JPEG end marker come here, so a truncated file still fails
    in Pillow with its message instead of being decoded grey at the bottom.
    """
    data = np.fromfile(path, dtype=np.uint8)
    if data.size < 4 or data[-2] != 0xFF or data[-1] != 0xD9:
        return None
    bgr = cv2.imdecode(data, cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION)
    if bgr is None or bgr.ndim != 3:
        return None
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB, dst=bgr)


def from_pil(img: Image.Image, source: str = "<image>", *, owned: bool = False) -> LoadedImage:
    """Normalise any Pillow image to upright RGB plus optional alpha.

    ``owned``: ``img`` is ours to change (it was just read from a file), so it is
    turned upright in place rather than copied: at 12 megapixels each copy is 36 MB.
    """
    mode = img.mode
    if owned:
        ImageOps.exif_transpose(img, in_place=True)
    else:
        img = ImageOps.exif_transpose(img) or img
    if img.mode == "CMYK" and img.info.get("icc_profile"):
        img = _cmyk_to_srgb(img)
    if img.mode.startswith("I") or img.mode == "F":
        rgb = np.repeat(_to_uint8(np.asarray(img))[..., None], 3, axis=2)
        return LoadedImage(rgb, None, source, mode)
    has_alpha = img.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (
        img.mode in ("P", "L", "RGB") and "transparency" in img.info
    )
    if has_alpha:
        rgba = np.asarray(img.convert("RGBA"))
        alpha = rgba[..., 3]
        rgb = np.ascontiguousarray(rgba[..., :3])
        return LoadedImage(rgb, None if alpha.min() == 255 else alpha.copy(), source, mode)
    return LoadedImage(
        np.asarray(img if img.mode == "RGB" else img.convert("RGB")), None, source, mode
    )


def from_array(array: np.ndarray, source: str = "<array>") -> LoadedImage:
    """Accept (H, W), (H, W, 3) or (H, W, 4) uint8 arrays (RGB order)."""
    if array.ndim == 2:
        return from_pil(Image.fromarray(np.ascontiguousarray(array)), source)
    if array.ndim == 3 and array.shape[2] in (3, 4) and array.dtype == np.uint8:
        rgb = np.ascontiguousarray(array[..., :3])
        alpha = array[..., 3].copy() if array.shape[2] == 4 else None
        if alpha is not None and alpha.min() == 255:
            alpha = None
        return LoadedImage(rgb, alpha, source, "RGBA" if alpha is not None else "RGB")
    raise ImageReadError(
        f"{source}: expected a uint8 array of shape (H, W), (H, W, 3) or (H, W, 4), "
        f"got {array.dtype} {array.shape}."
    )


def _to_uint8(values: np.ndarray) -> np.ndarray:
    """Scale 16/32-bit integer or float greyscale to 8 bits without clipping to white."""
    v = values.astype(np.float64)
    if values.dtype.kind == "f":
        top = 1.0 if np.nanmax(v, initial=0.0) <= 1.0 else 255.0
        v = np.nan_to_num(v / top * 255.0)
    elif np.max(v, initial=0) > 255:
        v = v / 257.0  # 16-bit range 0..65535 onto 0..255
    return np.clip(np.rint(v), 0, 255).astype(np.uint8)


def _cmyk_to_srgb(img: Image.Image) -> Image.Image:
    try:
        src = ImageCms.ImageCmsProfile(io.BytesIO(img.info["icc_profile"]))
        return ImageCms.profileToProfile(img, src, ImageCms.createProfile("sRGB"), outputMode="RGB")
    except (ImageCms.PyCMSError, OSError):
        return img.convert("RGB")  # a broken profile: the naive conversion is still usable


def is_complete_image(path: Path) -> bool:
    """True when ``path`` is a whole image file (used to skip finished outputs on a rerun).

    PNG and WebP, the formats bgremover writes, are checked from their structure
    without decoding: a PNG must end with its IEND chunk, a WebP's RIFF header
    must announce the file's size. Both are read in a few bytes, so resuming a
    large batch does not decode every finished output. Other formats are verified
    by Pillow.
    """
    try:
        size = path.stat().st_size
        if size == 0:
            return False
        with open(path, "rb") as fh:
            head = fh.read(16)
            if head.startswith(_PNG_SIGNATURE):
                fh.seek(-len(_PNG_END), os.SEEK_END)
                return size > len(_PNG_SIGNATURE) + len(_PNG_END) and fh.read() == _PNG_END
            if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
                return int.from_bytes(head[4:8], "little") + 8 == size
        with Image.open(path) as img:
            img.verify()
        return True
    except Exception:
        return False


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: The IEND chunk every PNG ends with: length 0, type, CRC.
_PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"

#: Rows per strip when a whole array is written as PNG (see png.py).
PNG_STRIP_ROWS = 256


def _png_pixels(img: Image.Image | np.ndarray) -> np.ndarray | None:
    """``img`` as a uint8 array PngWriter takes, or None for Pillow to write it."""
    if isinstance(img, np.ndarray):
        if img.dtype == np.uint8 and (img.ndim == 2 or (img.ndim == 3 and img.shape[2] <= 4)):
            return img
        raise ImageWriteError(f"Cannot write a {img.dtype} array of shape {img.shape} as PNG.")
    if img.mode in ("L", "LA", "RGB", "RGBA"):
        return np.asarray(img)
    return None


def _check_format(fmt: str) -> None:
    if fmt not in OUTPUT_FORMATS:
        raise ImageWriteError(
            f"Unknown output format {fmt!r}; use one of {sorted(OUTPUT_FORMATS)}."
        )


def _encode_into(fh: BinaryIO, img: Image.Image | np.ndarray, fmt: str) -> None:
    _check_format(fmt)
    pixels = _png_pixels(img) if fmt == "png" else None
    if pixels is not None:
        height, width = pixels.shape[:2]
        channels = 1 if pixels.ndim == 2 else pixels.shape[2]
        strips = (pixels[y : y + PNG_STRIP_ROWS] for y in range(0, height, PNG_STRIP_ROWS))
        _png_into(fh, width, height, channels, strips)
        return
    if isinstance(img, np.ndarray):
        img = Image.fromarray(img)
    options = dict(OUTPUT_FORMATS[fmt])
    if fmt == "webp" and img.mode == "L":
        options.update(lossless=True)  # masks are data: keep them exact
    img.save(fh, **options)


def _png_into(
    fh: BinaryIO, width: int, height: int, channels: int, strips: Iterable[np.ndarray]
) -> None:
    writer = PngWriter(fh, width, height, channels)
    for rows in strips:
        writer.write_rows(rows)
    writer.close()


def write_image(img: Image.Image | np.ndarray, path: Path, fmt: str) -> int:
    """Write ``img`` to ``path`` atomically and return the bytes written."""
    _check_format(fmt)
    return write_atomically(path, lambda fh: _encode_into(fh, img, fmt))


def write_png_strips(
    path: Path, width: int, height: int, channels: int, strips: Iterable[np.ndarray]
) -> int:
    """Write a PNG from strips of rows (top to bottom) atomically; returns the bytes written.

    Only the strip being compressed and the compressed data are in memory, never
    the whole image.
    """
    return write_atomically(path, lambda fh: _png_into(fh, width, height, channels, strips))


def write_atomically(path: Path, fill: Callable[[BinaryIO], object]) -> int:
    """Create ``path`` with what ``fill`` writes, atomically; returns its size in bytes.

    The data goes to a temporary file in the same folder, is flushed to disk and
    then renamed over ``path``: readers (and a rerun after a crash) see either
    no file or the complete one. If ``fill`` raises, nothing is left behind.
    """
    tmp_name = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL with mode 0o666 (the umask applies): private like mkstemp's
        # temp names, but the finished file gets the user's normal permissions.
        tmp_name = str(path.parent / f".{path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
        fd = os.open(
            tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666
        )
        with os.fdopen(fd, "wb") as fh:
            fill(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, path)
        tmp_name = None
        return path.stat().st_size
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise DiskFullError(
                f"{path}: the disk is full; free some space and run again "
                "(finished files are kept, this one was not written)."
            ) from None
        raise ImageWriteError(_write_failure(path, exc)) from None
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def _write_failure(path: Path, exc: OSError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (
            f"{path}: cannot write there (permission denied or read-only); "
            "choose another output folder."
        )
    return f"{path}: could not be written ({exc.strerror or exc})."
