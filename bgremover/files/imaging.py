"""Reading images (orientation, modes, bit depths) and finding them in folders.

Only the formats in :data:`DECODERS` are ever decoded, each by the one Pillow plugin its
file signature names (see :func:`open_image`). What an output file holds and how it is
encoded is output.py's; atomic.py creates it."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import cv2
import numpy as np
from PIL import Image, ImageCms, ImageOps, UnidentifiedImageError

from ..errors import ImageReadError

#: A file signature: byte strings that must all be found at their offsets.
Magic = tuple[tuple[int, bytes], ...]


def _starts(*prefixes: bytes) -> tuple[Magic, ...]:
    """Signatures that are each one prefix of the file."""
    return tuple(((0, prefix),) for prefix in prefixes)


@dataclass(frozen=True)
class Decoder:
    """One image format bgremover reads, and how a file is recognised as it.

    Every format here is decoded in-process by Pillow (or the pillow-heif plugin) in a
    time bounded by its pixel count, which bgremover limits before decoding: none of
    them is a program (PostScript), a document drawn at any size (PDF, SVG, WMF) or a
    format whose plugin starts another program.
    """

    #: Pillow's name for the format, as ``Image.open(formats=[...])`` takes it.
    format: str
    #: The name users read in messages and in the app's Open dialog.
    label: str
    #: File name endings walked in folders (lower case).
    extensions: tuple[str, ...]
    #: Any one of these at the start of a file names this format. Empty: the format has
    #: no reliable signature, so its file name ending decides (and Pillow's check of it).
    signatures: tuple[Magic, ...] = ()
    #: ISO base media (HEIF/AVIF) files: the ``ftyp`` brands that name this format.
    brands: tuple[bytes, ...] = ()
    #: What must be installed: "" (Pillow itself), "avif" (Pillow built with libavif)
    #: or "heif" (the pillow-heif plugin).
    needs: str = ""


#: HEIF's generic brands ("an image in a HEIF container"), which AVIF files use too.
_GENERIC_BRANDS = (b"mif1", b"msf1")

#: The formats bgremover reads: the one definition that folder walks, the Open dialogs,
#: messages and decoding all follow. Order matters only where signatures could overlap
#: (none do): the first match wins.
DECODERS: tuple[Decoder, ...] = (
    Decoder("JPEG", "JPEG", (".jpg", ".jpeg", ".jpe", ".jfif"), _starts(b"\xff\xd8\xff")),
    Decoder("PNG", "PNG", (".png", ".apng"), _starts(b"\x89PNG\r\n\x1a\n")),
    Decoder("WEBP", "WebP", (".webp",), (((0, b"RIFF"), (8, b"WEBP")),)),
    Decoder(
        "TIFF",
        "TIFF",
        (".tif", ".tiff"),
        # Classic and BigTIFF in both byte orders, and the two swapped headers that
        # Pillow's TIFF reader also accepts (written by some old scanners).
        _starts(b"II*\0", b"MM\0*", b"II+\0", b"MM\0+", b"MM*\0", b"II\0*"),
    ),
    Decoder("BMP", "BMP", (".bmp", ".dib"), _starts(b"BM")),
    # A .dib file without the "BM" file header (as Pillow writes one): its first field is
    # the info header's size, a number too common to be a signature, so the ending
    # decides and Pillow's DIB reader checks the header.
    Decoder("DIB", "BMP", (".dib",)),
    Decoder("GIF", "GIF", (".gif",), _starts(b"GIF87a", b"GIF89a")),
    Decoder(
        "PPM",
        "PPM/PGM/PBM",
        (".ppm", ".pgm", ".pbm", ".pnm"),
        _starts(b"P1", b"P2", b"P3", b"P4", b"P5", b"P6", b"Pf"),
    ),
    # TGA has no signature (its header starts with a length and two small type codes,
    # and its optional footer is at the end of the file), so the ending decides, and
    # Pillow's TGA reader then refuses headers with impossible fields.
    Decoder("TGA", "TGA", (".tga",)),
    Decoder("ICO", "ICO", (".ico",), _starts(b"\0\0\1\0")),
    Decoder(
        "JPEG2000",
        "JPEG 2000",
        (".jp2", ".j2k", ".jpx"),
        _starts(b"\xff\x4f\xff\x51", b"\0\0\0\x0cjP  \r\n\x87\n"),
    ),
    Decoder("PSD", "PSD", (".psd",), _starts(b"8BPS")),
    # Version bytes 0, 2, 3 and 5 are the ones Pillow's PCX reader accepts.
    Decoder("PCX", "PCX", (".pcx",), _starts(b"\x0a\x00", b"\x0a\x02", b"\x0a\x03", b"\x0a\x05")),
    Decoder("SGI", "SGI", (".sgi",), _starts(b"\x01\xda")),
    Decoder("QOI", "QOI", (".qoi",), _starts(b"qoif")),
    Decoder("AVIF", "AVIF", (".avif",), brands=(b"avif", b"avis"), needs="avif"),
    Decoder(
        "HEIF",
        "HEIC/HEIF",
        (".heic", ".heif"),
        brands=(
            b"heic",
            b"heix",
            b"hevc",
            b"hevx",
            b"heim",
            b"heis",
            b"hevm",
            b"hevs",
            *_GENERIC_BRANDS,
        ),
        needs="heif",
    ),
)


@dataclass(frozen=True)
class Refused:
    """A format that is recognised only to be refused, with why and what to do instead."""

    label: str
    signatures: tuple[Magic, ...]
    #: Why it is not opened, after "<label> is not opened: ".
    why: str
    fix: str


#: Formats whose decoding would run another program. Pillow's EPS plugin (the only
#: plugin of Pillow's that decodes by starting a program: its JPEG plugin's djpeg and
#: its GIF plugin's netpbm are used only when asked for, the latter only for saving)
#: renders PostScript with Ghostscript, with no time limit: PostScript is a programming
#: language, and ``{ } loop`` never ends. PDF is a document that takes Ghostscript or
#: another renderer to draw. Both are named so that the refusal can say what to do.
REFUSED: tuple[Refused, ...] = (
    Refused(
        "PostScript/EPS",
        # "%!" starts every PostScript file (EPS: "%!PS-Adobe-3.0 EPSF-3.0"), sometimes
        # after a Ctrl-D; C5 D0 D3 C6 starts a DOS EPS with a binary preview.
        _starts(b"%!", b"\x04%!", b"\xc5\xd0\xd3\xc6"),
        "decoding it would run Ghostscript, another program, and a PostScript file is "
        "itself a program, which may never finish",
        "Export it as PNG or TIFF first (from the program that made it), then open that.",
    ),
    Refused(
        "PDF",
        _starts(b"%PDF-"),
        "a PDF is a document, and drawing its pages would run another program "
        "(Ghostscript or another PDF renderer)",
        "Export the page as PNG or TIFF first (from the program that made it), then open that.",
    ),
)

#: How many bytes of a file are read to recognise it (an ftyp box's brand list included).
_HEAD_BYTES = 256


def _pillow_reads_avif() -> bool:
    """Pillow 11.2 and later read AVIF in-process when built with libavif."""
    try:
        from PIL import AvifImagePlugin
    except ImportError:
        return False
    return bool(getattr(AvifImagePlugin, "SUPPORTED", False))


try:  # HEIC/HEIF (iPhone photos) when the optional pillow-heif plugin is installed
    import pillow_heif

    pillow_heif.register_heif_opener()
    _HEIF = True
except ImportError:
    _HEIF = False
_INSTALLED = {"": True, "avif": _pillow_reads_avif(), "heif": _HEIF}
#: The formats this installation reads, in the table's order.
READABLE: tuple[Decoder, ...] = tuple(d for d in DECODERS if _INSTALLED[d.needs])

HEIF_EXTENSIONS = frozenset(e for d in READABLE if d.needs == "heif" for e in d.extensions)
#: File name endings walked when a folder is given: those of the formats read here.
IMAGE_EXTENSIONS = frozenset(e for d in READABLE for e in d.extensions)
#: What to do about a HEIC/HEIF photo without the plugin (the README's words).
HEIF_ADVICE = "To open HEIC/HEIF photos, install bgremover with: pip install 'bgremover[heic]'"


def readable_names() -> str:
    """The formats read here, for messages: "JPEG, PNG, ..., QOI and AVIF"."""
    labels = list(dict.fromkeys(d.label for d in READABLE))
    return ", ".join(labels[:-1]) + " and " + labels[-1]


def _matches(head: bytes, magic: Magic) -> bool:
    return all(head[at : at + len(part)] == part for at, part in magic)


def _brands(head: bytes) -> list[bytes]:
    """An ISO base media file's ftyp brands, the major brand first; [] for other files."""
    if head[4:8] != b"ftyp":
        return []
    end = min(int.from_bytes(head[0:4], "big"), len(head))
    compatible = [head[at : at + 4] for at in range(16, end - 3, 4)]
    return [head[8:12], *compatible]


def identify(head: bytes, suffix: str = "") -> Decoder | Refused | None:
    """What a file is, from its first bytes (``_HEAD_BYTES`` of them suffice) and, for
    formats without a signature, its name's ending ``suffix`` (".tga"): a
    :class:`Decoder` of :data:`DECODERS` (installed or not), a :class:`Refused` format,
    or None for anything else.

    The signature wins over the name: a PNG called photo.jpg or photo.eps is a PNG.
    """
    for refused in REFUSED:
        if any(_matches(head, magic) for magic in refused.signatures):
            return refused
    for decoder in DECODERS:
        if any(_matches(head, magic) for magic in decoder.signatures):
            return decoder
    brands = _brands(head)
    # The major brand, then the compatible ones, then HEIF's generic brands: an AVIF
    # may well have "mif1" as its major brand and "avif" only among the compatible.
    specific = [brand for brand in brands if brand not in _GENERIC_BRANDS]
    for brand in specific + brands:
        for decoder in DECODERS:
            if brand in decoder.brands:
                return decoder
    for decoder in DECODERS:
        if not (decoder.signatures or decoder.brands) and suffix.lower() in decoder.extensions:
            return decoder
    return None


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


def is_image_name(path: Path) -> bool:
    """Whether a folder walk picks ``path`` up: a known image ending, not a hidden file."""
    return path.suffix.lower() in IMAGE_EXTENSIONS and not path.name.startswith(".")


#: The endings read as clips (bgremover.video), beside a folder's photos.
CLIP_EXTENSIONS = (".mp4", ".mov", ".m4v", ".mkv", ".webm", ".avi")


def is_clip_name(path: Path) -> bool:
    """Whether ``path`` names a clip (hidden files, such as macOS's ``._`` copies, not)."""
    return path.suffix.lower() in CLIP_EXTENSIONS and not path.name.startswith(".")


def walk_images(
    folder: Path, exclude: Path | None = None, wanted: Callable[[Path], bool] | None = None
) -> list[Path]:
    """Image files (or the files ``wanted`` names: clips) under ``folder``, sorted,
    skipping hidden entries and ``exclude``.

    Symlinked folders are not followed (no loops); symlinked files are read.
    """
    found: list[Path] = []
    excluded = exclude.resolve() if exclude is not None else None
    for root, dirs, files in os.walk(folder):
        root_path = Path(root)
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and (root_path / d).resolve() != excluded
        )
        found.extend(root_path / f for f in sorted(files) if (wanted or is_image_name)(Path(f)))
    return found


def default_max_megapixels() -> float:
    """The size limit when none is given: the user's ``BGREMOVER_MAX_MEGAPIXELS``, or 250."""
    try:
        return float(os.environ.get(MAX_MEGAPIXELS_ENV, DEFAULT_MAX_MEGAPIXELS))
    except ValueError:
        return DEFAULT_MAX_MEGAPIXELS


class Probe(NamedTuple):
    """What an image's header says: its format (a :data:`DECODERS` format name) and size."""

    format: str
    width: int
    height: int


def open_image(source: str | os.PathLike[str] | bytes, name: str | None = None) -> Image.Image:
    """Open an image file or the bytes of one with the decoder its signature names.

    The format is decided from the first bytes (for TGA and headerless DIB, which have
    no signature, from the name's ending) before Pillow sees the file, and Pillow is
    then allowed that one plugin: whatever the file says, no other plugin is tried, so
    a PostScript file cannot reach Ghostscript. Only the header is read; the pixels are
    decoded on ``load()``, whose own errors are the caller's. ``name`` stands for the
    source in messages (for bytes: default "the image"). Raises :class:`ImageReadError`
    for a refused format (PostScript/EPS, PDF), a format not in :data:`READABLE`, an
    empty, missing or unreadable file, or a header the format's decoder rejects.
    """
    label, suffix = _label(source, name)
    with _read_errors(label, suffix):
        return _open(source, label, suffix)[1]


def probe(source: str | os.PathLike[str] | bytes, name: str | None = None) -> Probe:
    """The format and size of an image file or the bytes of one, from its header only.

    For a caller that must check the size before anything is decoded (the HTTP server
    refuses images over its megapixel limit with a status of its own). It accepts and
    refuses exactly what :func:`read_image` does, with the same messages, naming the
    source as ``name`` when given. Raises :class:`ImageReadError`.
    """
    label, suffix = _label(source, name)
    with _read_errors(label, suffix):
        decoder, img = _open(source, label, suffix)
        with img:
            return Probe(decoder.format, img.width, img.height)


def read_image(path: str | os.PathLike[str], max_megapixels: float | None = None) -> LoadedImage:
    """Read an image file; any failure is an :class:`ImageReadError` naming the file.

    Only the formats of :data:`READABLE` are decoded (see :func:`open_image`). Images
    over ``max_megapixels`` (default: :func:`default_max_megapixels`) are refused
    before they are decoded. Animated images (GIF, WebP, APNG) give their first frame.
    """
    p = Path(path)
    with _read_errors(str(p), p.suffix.lower()):
        if p.stat().st_size == 0:
            raise _empty(str(p))
        with open_image(p) as img:
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


def _label(source: str | os.PathLike[str] | bytes, name: str | None) -> tuple[str, str]:
    """How messages name ``source``, and the name's ending (lower case)."""
    if name is not None:
        return name, Path(name).suffix.lower()
    if isinstance(source, bytes):
        return "the image", ""
    return str(Path(source)), Path(source).suffix.lower()


def _open(
    source: str | os.PathLike[str] | bytes, label: str, suffix: str
) -> tuple[Decoder, Image.Image]:
    """The decoder that ``source``'s signature names, and the image opened with it alone."""
    if isinstance(source, bytes):
        head = source[:_HEAD_BYTES]
    else:
        with open(source, "rb") as handle:
            head = handle.read(_HEAD_BYTES)
    if not head:
        raise _empty(label)
    found = identify(head, suffix)
    if isinstance(found, Refused):
        raise ImageReadError(f"{label}: {found.label} is not opened: {found.why}.", fix=found.fix)
    if found is None or not _INSTALLED[found.needs]:
        raise _unreadable(label, heif=_heif_hint(found, suffix))
    fp = io.BytesIO(source) if isinstance(source, bytes) else source
    return found, Image.open(fp, formats=[found.format])


def _heif_hint(found: Decoder | None, suffix: str) -> bool:
    """Whether a file that cannot be read is a HEIC/HEIF photo that the plugin would read."""
    heif = found is not None and found.needs == "heif"
    return not _HEIF and (heif or suffix in (".heic", ".heif"))


def _empty(label: str) -> ImageReadError:
    return ImageReadError(f"{label}: the file is empty (0 bytes). Re-export or re-copy it.")


def _unreadable(label: str, heif: bool) -> ImageReadError:
    """The refusal of anything that is not in :data:`READABLE`, naming what is."""
    return ImageReadError(
        f"{label}: not an image format bgremover can read. It reads {readable_names()}"
        + (", and HEIC/HEIF photos once HEIC support is installed." if heif else "."),
        fix=HEIF_ADVICE if heif else "",
    )


@contextmanager
def _read_errors(label: str, suffix: str) -> Iterator[None]:
    """Turn what opening and decoding raise into an :class:`ImageReadError` for ``label``."""
    try:
        yield
    except ImageReadError:
        raise
    except FileNotFoundError:
        raise ImageReadError(f"{label}: no such file.") from None
    except PermissionError:
        raise ImageReadError(f"{label}: permission denied; check the file's permissions.") from None
    except IsADirectoryError:
        raise ImageReadError(f"{label}: is a folder, not an image.") from None
    except Image.DecompressionBombError as exc:
        raise ImageReadError(
            f"{label}: refused as a possible decompression bomb.", technical=str(exc)
        ) from None
    except UnidentifiedImageError:
        # The signature named a format whose decoder then rejected the header.
        raise _unreadable(label, heif=_heif_hint(None, suffix)) from None
    except MemoryError:
        raise ImageReadError(
            f"{label}: not enough memory to decode it.",
            fix="Close other programs, or lower --max-megapixels to refuse such images.",
            app_fix="Close other programs, or open a smaller copy of the image.",
        ) from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ImageReadError(
            f"{label}: the image data is damaged or truncated.", technical=str(exc)
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
