"""Reading images (orientation, modes, bit depths) and finding them in folders.

What an output file holds and how it is encoded is output.py's; atomic.py creates it."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageCms, ImageOps, UnidentifiedImageError

from .errors import ImageReadError

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


@dataclass(frozen=True)
class Metadata:
    """What a photo says about itself that its outputs keep: colour profile and EXIF."""

    #: The ICC colour profile, only when it describes RGB pixels (the outputs' colours).
    icc_profile: bytes | None = None
    #: The EXIF block as Pillow reads it (camera, time, place; orientation is not kept).
    exif: bytes | None = None


@dataclass(frozen=True)
class LoadedImage:
    """An upright 8-bit RGB image and the alpha channel it came with, if any."""

    rgb: np.ndarray  # (H, W, 3) uint8
    alpha: np.ndarray | None  # (H, W) uint8, None when the input had no transparency
    source: str  # file path, or a short description for in-memory images
    mode: str  # the Pillow mode the image was stored in
    #: The photo's RGB colour profile (none when it had another colour space or none).
    icc_profile: bytes | None = field(default=None, repr=False, compare=False)
    #: The photo's EXIF block, if it had one.
    exif: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def metadata(self) -> Metadata:
        """What the outputs of this image carry over from it."""
        return Metadata(self.icc_profile, self.exif)


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
#: What to do about a HEIC/HEIF photo without the plugin (the README's words).
HEIF_ADVICE = "To open HEIC/HEIF photos, install bgremover with: pip install 'bgremover[heic]'"


def is_image_name(path: Path) -> bool:
    """Whether a folder walk picks ``path`` up: a known image ending, not a hidden file."""
    return path.suffix.lower() in IMAGE_EXTENSIONS and not path.name.startswith(".")


def walk_images(folder: Path, exclude: Path | None = None) -> list[Path]:
    """Image files under ``folder``, sorted, skipping hidden entries and ``exclude``.

    Symlinked folders are not followed (no loops); symlinked files are read.
    """
    found: list[Path] = []
    excluded = exclude.resolve() if exclude is not None else None
    for root, dirs, files in os.walk(folder):
        root_path = Path(root)
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and (root_path / d).resolve() != excluded
        )
        found.extend(root_path / f for f in sorted(files) if is_image_name(Path(f)))
    return found


def default_max_megapixels() -> float:
    """The size limit when none is given: the user's ``BGREMOVER_MAX_MEGAPIXELS``, or 250."""
    try:
        return float(os.environ.get(MAX_MEGAPIXELS_ENV, DEFAULT_MAX_MEGAPIXELS))
    except ValueError:
        return DEFAULT_MAX_MEGAPIXELS


def read_image(path: str | os.PathLike[str], max_megapixels: float | None = None) -> LoadedImage:
    """Read an image file; any failure is an :class:`ImageReadError` naming the file.

    Images over ``max_megapixels`` (default: :func:`default_max_megapixels`) are
    refused before they are decoded. Animated images (GIF, WebP, APNG) give their
    first frame.
    """
    p = Path(path)
    try:
        if p.stat().st_size == 0:
            raise ImageReadError(f"{p}: the file is empty (0 bytes). Re-export or re-copy it.")
        with Image.open(p) as img:
            limit = default_max_megapixels() if max_megapixels is None else max_megapixels
            megapixels = img.width * img.height / 1e6
            if megapixels > limit:
                raise ImageReadError(
                    f"{p}: refused, {img.width}×{img.height} is {megapixels:.3g} megapixels, "
                    f"over the limit of {limit:g} megapixels that protects against "
                    "decompression bombs.",
                    fix="If the image is genuine, raise the limit with --max-megapixels or "
                    f"the {MAX_MEGAPIXELS_ENV} environment variable.",
                    app_fix="If the image is genuine, start bgremover with the environment "
                    f"variable {MAX_MEGAPIXELS_ENV} set higher (in megapixels).",
                )
            upright = img.getexif().get(_ORIENTATION, 1) == 1
            if img.format == "JPEG" and img.mode == "RGB" and upright:
                rgb = _decode_jpeg(p)
                if rgb is not None:
                    return LoadedImage(rgb, None, str(p), img.mode, *_metadata_of(img))
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
        raise ImageReadError(
            f"{p}: refused as a possible decompression bomb.", technical=str(exc)
        ) from None
    except UnidentifiedImageError:
        heif = p.suffix.lower() in (".heic", ".heif") and not HEIF_EXTENSIONS
        raise ImageReadError(
            f"{p}: not an image format bgremover can read. It reads JPEG, PNG, WebP, "
            "TIFF, BMP, GIF and other common formats"
            + (", and HEIC/HEIF photos once HEIC support is installed." if heif else "."),
            fix=HEIF_ADVICE if heif else "",
        ) from None
    except MemoryError:
        raise ImageReadError(
            f"{p}: not enough memory to decode it.",
            fix="Close other programs, or lower --max-megapixels to refuse such images.",
            app_fix="Close other programs, or open a smaller copy of the image.",
        ) from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise ImageReadError(
            f"{p}: the image data is damaged or truncated.", technical=str(exc)
        ) from None


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
    icc, exif = _metadata_of(img)
    if img.mode == "CMYK":
        icc = None  # the pixels become RGB: the photo's CMYK profile no longer applies
        if img.info.get("icc_profile"):
            img = _cmyk_to_srgb(img)
    if img.mode.startswith("I") or img.mode == "F":
        rgb = np.repeat(_to_uint8(np.asarray(img))[..., None], 3, axis=2)
        return LoadedImage(rgb, None, source, mode, icc, exif)
    has_alpha = img.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (
        img.mode in ("P", "L", "RGB") and "transparency" in img.info
    )
    if has_alpha:
        rgba = np.asarray(img.convert("RGBA"))
        alpha = rgba[..., 3]
        rgb = np.ascontiguousarray(rgba[..., :3])
        alpha_or_none = None if alpha.min() == 255 else alpha.copy()
        return LoadedImage(rgb, alpha_or_none, source, mode, icc, exif)
    return LoadedImage(
        np.asarray(img if img.mode == "RGB" else img.convert("RGB")),
        None,
        source,
        mode,
        icc,
        exif,
    )


def _metadata_of(img: Image.Image) -> tuple[bytes | None, bytes | None]:
    """The ICC profile (only an RGB one: the outputs are RGB) and EXIF block of ``img``."""
    icc = img.info.get("icc_profile")
    if not isinstance(icc, bytes) or icc[16:20] != b"RGB ":
        icc = None
    exif = img.info.get("exif")
    return icc, exif if isinstance(exif, bytes) and exif else None


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
        converted = ImageCms.profileToProfile(
            img, src, ImageCms.createProfile("sRGB"), outputMode="RGB"
        )
        return converted if converted is not None else img.convert("RGB")
    except (ImageCms.PyCMSError, OSError):
        return img.convert("RGB")  # a broken profile: the naive conversion is still usable
