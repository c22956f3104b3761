"""The output formats, in one table, and writing a result in one of them.

One module because each format's writer, its record and its completeness check are one
row of one table: apart, a format could be written in a way its rerun check misreads.

Each :class:`OutputFormat` says what its files are called, whether they keep
transparency, how a result is written (composed and encoded straight into an
atomic file) and how a finished file is recognised on a rerun: whole, made from
the same photo and with the same settings, by the record of its source
(:class:`SourceRecord`, with its :class:`OutputSettings`) that bgremover writes into
each output (a PNG iTXt chunk; XMP in WebP, JPEG and TIFF). The command
line's ``--format`` choices, the app's format box and its save-dialog filters
all read :data:`FORMATS`.

The table is read when the command line builds its parser, which must not
import numpy or Pillow (``bgremover --version`` answers at once), so the
encoders import them when they run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from xml.sax.saxutils import escape, unescape

from ..errors import ImageWriteError
from ..files.atomic import Claim, write_atomically
from .options import DEFAULT_QUALITY

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

    from ..files.imaging import Metadata
    from .compose import ComposeOptions

#: Rows per strip when a PNG is written (see png.py): small enough that a strip of a
#: 12-megapixel cutout is 4 MB, large enough that the per-strip overhead vanishes.
PNG_STRIP_ROWS = 256

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: The IEND chunk every PNG ends with: length 0, type, CRC.
_PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"


#: The bytes of a photo that its record's hash covers (with its size): enough to tell
#: two photos apart, cheap enough to check on every rerun.
RECORD_HEAD_BYTES = 1 << 20
#: The PNG iTXt keyword that holds the record.
RECORD_KEYWORD = "bgremover:source"
_XMP_NS = "urn:bgremover:source:1"
_XMP_RE = re.compile(rb"<bgremover:source>(.*?)</bgremover:source>", re.S)


@dataclass(frozen=True)
class OutputSettings:
    """What an output was made with: a digest of every setting that changes its pixels or
    bytes (see :meth:`bgremover.engine.pipeline.Remover.output_settings`, the one place that
    decides what counts), and the same settings in words, for people."""

    #: SHA-256 (hex) of the settings, canonically written: equal settings, equal digest.
    digest: str
    #: The settings in a line ("u2netp fp32, refined, png; background=#ff0000").
    summary: str = ""
    #: Whether the user's edits (touch-up) were applied: a run without them never
    #: replaces such an output unasked (see :func:`existing_output`).
    edited: bool = False


@dataclass(frozen=True)
class SourceRecord:
    """What an output records about the photo it was made from, and how it was made.

    Two photos are the same when size and the SHA-256 of their first MiB agree: a
    renamed or copied photo is still itself, another photo under the same name is not.
    The name is kept to say which photo an output was made from. ``settings`` is None in
    the record of an output written by an earlier bgremover, before outputs recorded them.
    """

    name: str
    size: int
    head_sha256: str
    settings: OutputSettings | None = None

    @classmethod
    def of(cls, source: Path, settings: OutputSettings | None = None) -> SourceRecord:
        """The record of the photo at ``source`` (OSError if it cannot be read)."""
        with open(source, "rb") as fh:
            head = fh.read(RECORD_HEAD_BYTES)
            size = os.fstat(fh.fileno()).st_size
        return cls(source.name, size, hashlib.sha256(head).hexdigest(), settings)

    def same_photo(self, other: SourceRecord) -> bool:
        return self.size == other.size and self.head_sha256 == other.head_sha256

    def to_text(self) -> str:
        data: dict[str, object] = {
            "source": self.name, "size": self.size, "sha256_first_mib": self.head_sha256,
        }  # fmt: skip
        if self.settings is not None:
            data.update(settings=self.settings.digest, made_with=self.settings.summary,
                        edited=self.settings.edited)  # fmt: skip
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_text(cls, text: str) -> SourceRecord | None:
        try:
            data = json.loads(text)
            settings = None
            if "settings" in data:
                settings = OutputSettings(
                    str(data["settings"]), str(data.get("made_with", "")),
                    data.get("edited") is True,
                )  # fmt: skip
            return cls(
                str(data["source"]), int(data["size"]), str(data["sha256_first_mib"]), settings
            )
        except (ValueError, KeyError, TypeError):
            return None

    def to_xmp(self) -> bytes:
        return (
            '<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>'
            '<x:xmpmeta xmlns:x="adobe:ns:meta/">'
            '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
            f'<rdf:Description rdf:about="" xmlns:bgremover="{_XMP_NS}">'
            f"<bgremover:source>{escape(self.to_text())}</bgremover:source>"
            "</rdf:Description></rdf:RDF></x:xmpmeta>"
            '<?xpacket end="r"?>'
        ).encode()


def _png_record(path: Path) -> SourceRecord | None:
    from ..files.png import read_itxt

    with open(path, "rb") as fh:
        text = read_itxt(fh, RECORD_KEYWORD)
    return None if text is None else SourceRecord.from_text(text)


def _record_in_xmp(xmp: bytes) -> SourceRecord | None:
    match = _XMP_RE.search(xmp)
    if not match:
        return None
    return SourceRecord.from_text(unescape(match.group(1).decode("utf-8", "replace")))


def _webp_record(path: Path) -> SourceRecord | None:
    """The record in a WebP's XMP chunk, found by walking the RIFF chunk headers."""
    with open(path, "rb") as fh:
        head = fh.read(12)
        if head[:4] != b"RIFF" or head[8:12] != b"WEBP":
            return None
        while len(chunk := fh.read(8)) == 8:
            kind, length = chunk[:4], int.from_bytes(chunk[4:], "little")
            if kind == b"XMP ":
                return _record_in_xmp(fh.read(min(length, 1 << 20)))
            fh.seek(length + (length & 1), os.SEEK_CUR)
    return None


#: What starts the XMP packet in a JPEG's APP1 segment (an EXIF APP1 starts "Exif").
_JPEG_XMP_HEADER = b"http://ns.adobe.com/xap/1.0/\0"
#: JPEG markers that stand alone, without a length: TEM and the restart markers.
_JPEG_BARE_MARKERS = frozenset([0x01, *range(0xD0, 0xD8)])


def _jpeg_record(path: Path) -> SourceRecord | None:
    """The record in a JPEG's XMP, found by walking the marker segments before the
    compressed data (a few kilobytes are read, nothing is decoded)."""
    with open(path, "rb") as fh:
        if fh.read(2) != b"\xff\xd8":
            return None
        while True:
            byte = fh.read(1)
            if byte != b"\xff":
                return None  # not at a marker: not a JPEG bgremover can read a record in
            marker = fh.read(1)
            while marker == b"\xff":  # fill bytes before a marker
                marker = fh.read(1)
            if not marker or marker[0] in (0xD9, 0xDA):  # end of image, start of scan
                return None
            if marker[0] in _JPEG_BARE_MARKERS:
                continue
            size = fh.read(2)
            if len(size) < 2:
                return None
            length = int.from_bytes(size, "big") - 2
            if length < 0:
                return None
            if marker[0] == 0xE1:  # APP1: EXIF or XMP
                data = fh.read(length)
                if data.startswith(_JPEG_XMP_HEADER):
                    record = _record_in_xmp(data[len(_JPEG_XMP_HEADER) :])
                    if record is not None:
                        return record
            else:
                fh.seek(length, os.SEEK_CUR)


@contextmanager
def _quiet() -> Iterator[None]:
    """Pillow's warnings about a damaged TIFF directory left unsaid (the caller judges)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _tiff_record(path: Path) -> SourceRecord | None:
    """The record in a TIFF's XMP tag (700), read from its first directory."""
    from PIL import Image, UnidentifiedImageError

    try:
        # Only the TIFF decoder: the file at an output's path may be anything.
        with _quiet(), Image.open(path, formats=["TIFF"]) as img:  # damaged: no record
            tags = getattr(img, "tag_v2", None)
            xmp = tags.get(_TIFF_XMP) if tags is not None else None
    except (UnidentifiedImageError, SyntaxError, ValueError, EOFError):
        return None  # OSError (the file cannot be read) goes to the caller
    if isinstance(xmp, tuple) and len(xmp) == 1:
        xmp = xmp[0]
    if isinstance(xmp, str):
        xmp = xmp.encode("utf-8")
    return _record_in_xmp(xmp) if isinstance(xmp, bytes) else None


def _png_complete(path: Path) -> bool:
    """A whole PNG starts with the signature and ends with its IEND chunk."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        if fh.read(len(_PNG_SIGNATURE)) != _PNG_SIGNATURE:
            return False
        fh.seek(-len(_PNG_END), os.SEEK_END)
        return size > len(_PNG_SIGNATURE) + len(_PNG_END) and fh.read() == _PNG_END


def _webp_complete(path: Path) -> bool:
    """A whole WebP's RIFF header announces the file's exact size."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(12)
    return (
        head[:4] == b"RIFF"
        and head[8:12] == b"WEBP"
        and int.from_bytes(head[4:8], "little") + 8 == size
    )


def _jpeg_complete(path: Path) -> bool:
    """A whole JPEG starts with its start-of-image marker and ends with end-of-image."""
    if path.stat().st_size < 4:
        return False
    with open(path, "rb") as fh:
        if fh.read(2) != b"\xff\xd8":
            return False
        fh.seek(-2, os.SEEK_END)
        return fh.read(2) == b"\xff\xd9"


def _tiff_complete(path: Path) -> bool:
    """A whole TIFF opens (header and first directory) and holds every strip or tile
    its directory names: each one's offset plus byte count lies within the file."""
    from PIL import Image, UnidentifiedImageError

    size = path.stat().st_size
    try:
        with _quiet(), Image.open(path, formats=["TIFF"]) as img:  # damaged: not whole
            tags = getattr(img, "tag_v2", None)
            if img.format != "TIFF" or tags is None:
                return False
            offsets = tags.get(273, tags.get(324))  # StripOffsets, TileOffsets
            counts = tags.get(279, tags.get(325))  # StripByteCounts, TileByteCounts
    except (UnidentifiedImageError, SyntaxError, ValueError, EOFError):
        return False
    if isinstance(offsets, int):
        offsets = (offsets,)
    if isinstance(counts, int):
        counts = (counts,)
    if not offsets or not counts or len(offsets) != len(counts):
        return False
    return all(o > 0 and o + n <= size for o, n in zip(offsets, counts, strict=True))


# -- What a file carries over from its photo -------------------------------------------

_ORIENTATION = 0x0112  # the EXIF tag
_TIFF_XMP = 700  # the TIFF tag that holds an XMP packet
#: The EXIF tags a TIFF output keeps in its own directory (libtiff cannot write EXIF's
#: sub-directories, and the image-structure tags are the new file's own): descriptive
#: ones only.
_TIFF_EXIF_TAGS = (270, 271, 272, 305, 306, 315, 33432)  # description ... copyright
_TIFF_RESOLUTION_TAGS = (282, 283, 296)  # X and Y resolution, their unit
#: Most EXIF bytes one JPEG APP1 segment holds (65535 less its length and "Exif\0\0").
_JPEG_MAX_EXIF = 65533


def _upright_exif(exif: bytes | None) -> Image.Exif | None:
    """``exif`` parsed, with the orientation set to 1: bgremover writes upright pixels.
    None when there is none, or it cannot be read (better dropped than half-kept)."""
    if not exif:
        return None
    from PIL import Image

    try:
        parsed = Image.Exif()
        parsed.load(exif)
        if not len(parsed):
            return None
        parsed[_ORIENTATION] = 1
        parsed.tobytes()  # a block Pillow cannot write again fails here, not in the save
    except Exception:
        return None
    return parsed


def _carried(
    metadata: Metadata | None, options: ComposeOptions | None, colour: bool
) -> tuple[bytes | None, Image.Exif | None]:
    """The ICC profile (colour outputs only: a greyscale mask's values are not RGB) and
    upright EXIF (unless ``options.strip_metadata``) an output carries over."""
    if metadata is None:
        return None, None
    icc = metadata.icc_profile if colour else None
    strip = options is not None and options.strip_metadata
    return icc, None if strip else _upright_exif(metadata.exif)


def _colour_channels(img: Image.Image | np.ndarray) -> bool:
    """Whether ``img`` has RGB channels (and so can carry an RGB colour profile)."""
    import numpy as np

    if isinstance(img, np.ndarray):
        return img.ndim == 3 and img.shape[2] >= 3
    return img.mode in ("RGB", "RGBA", "RGBa", "RGBX", "P", "PA")


# -- Encoders ----------------------------------------------------------------------------


def _png_rows(
    fh: BinaryIO,
    width: int,
    height: int,
    channels: int,
    strips,
    record: SourceRecord | None = None,
    options: ComposeOptions | None = None,
    metadata: Metadata | None = None,
) -> None:
    from ..files.png import PngWriter

    text = {RECORD_KEYWORD: record.to_text()} if record else None
    icc, exif = _carried(metadata, options, channels >= 3)
    writer = PngWriter(
        fh,
        width,
        height,
        channels,
        text=text,
        icc_profile=icc,
        exif=exif.tobytes() if exif is not None else None,
    )
    for rows in strips:
        writer.write_rows(rows)
    writer.close()


def _png_pixels(img: Image.Image | np.ndarray) -> np.ndarray | None:
    """``img`` as a uint8 array the PNG writer takes, or None for Pillow to write it."""
    import numpy as np

    if isinstance(img, np.ndarray):
        if img.dtype == np.uint8 and (img.ndim == 2 or (img.ndim == 3 and img.shape[2] <= 4)):
            return img
        raise ImageWriteError(f"Cannot write a {img.dtype} array of shape {img.shape} as PNG.")
    if img.mode in ("L", "LA", "RGB", "RGBA"):
        return np.asarray(img)
    return None


def _encode_png(
    fh: BinaryIO,
    img: Image.Image | np.ndarray,
    fmt: OutputFormat,
    record: SourceRecord | None = None,
    options: ComposeOptions | None = None,
    metadata: Metadata | None = None,
) -> None:
    pixels = _png_pixels(img)
    if pixels is None:  # a mode the streaming writer does not take (e.g. palette)
        _encode_pillow(fh, img, fmt, record, options, metadata)
        return
    height, width = pixels.shape[:2]
    channels = 1 if pixels.ndim == 2 else pixels.shape[2]
    strips = (pixels[y : y + PNG_STRIP_ROWS] for y in range(0, height, PNG_STRIP_ROWS))
    _png_rows(fh, width, height, channels, strips, record, options, metadata)


def _pil(img: Image.Image | np.ndarray) -> Image.Image:
    from PIL import Image

    return img if isinstance(img, Image.Image) else Image.fromarray(img)


def _encode_pillow(
    fh: BinaryIO,
    img: Image.Image | np.ndarray,
    fmt: OutputFormat,
    record: SourceRecord | None = None,
    options: ComposeOptions | None = None,
    metadata: Metadata | None = None,
) -> None:
    """A PNG in a mode bgremover's writer does not take (palette, 16-bit), by Pillow."""
    from PIL import PngImagePlugin

    img = _pil(img)
    save = dict(fmt.pillow)
    if record is not None:
        info = PngImagePlugin.PngInfo()
        info.add_itxt(RECORD_KEYWORD, record.to_text())
        save.update(pnginfo=info)
    _save_metadata(save, metadata, options, _colour_channels(img))
    img.save(fh, **save)


def _save_metadata(
    save: dict, metadata: Metadata | None, options: ComposeOptions | None, colour: bool
) -> None:
    """Pillow's save options for the profile and EXIF an output carries."""
    icc, exif = _carried(metadata, options, colour)
    if icc:
        save.update(icc_profile=icc)
    if exif is not None:
        save.update(exif=exif)


def _encode_webp(
    fh: BinaryIO,
    img: Image.Image | np.ndarray,
    fmt: OutputFormat,
    record: SourceRecord | None = None,
    options: ComposeOptions | None = None,
    metadata: Metadata | None = None,
) -> None:
    img = _pil(img)
    save = dict(fmt.pillow)
    if img.mode == "L" or (options is not None and options.lossless):
        save.update(lossless=True)  # masks are data: keep them exact
    elif options is not None and options.quality is not None:
        save.update(quality=options.quality)
    if record is not None:
        save.update(xmp=record.to_xmp())
    _save_metadata(save, metadata, options, _colour_channels(img))
    img.save(fh, **save)


_TRANSPARENT_MODES = frozenset(["RGBA", "LA", "PA", "RGBa", "La"])


def _encode_jpeg(
    fh: BinaryIO,
    img: Image.Image | np.ndarray,
    fmt: OutputFormat,
    record: SourceRecord | None = None,
    options: ComposeOptions | None = None,
    metadata: Metadata | None = None,
) -> None:
    img = _pil(img)
    if img.mode in _TRANSPARENT_MODES or "transparency" in img.info:
        raise ImageWriteError(
            "JPEG cannot keep transparency, and this output has transparent pixels.",
            fix="Add a background (a colour, an image or a blur), or choose PNG or WebP.",
        )
    if img.mode not in ("L", "RGB"):
        img = img.convert("RGB")
    save = dict(fmt.pillow, progressive=options is not None and options.progressive)
    quality = options.quality if options is not None else None
    save.update(quality=quality or DEFAULT_QUALITY["jpeg"])
    if record is not None:
        save.update(xmp=record.to_xmp())
    icc, exif = _carried(metadata, options, img.mode == "RGB")
    if icc:
        save.update(icc_profile=icc)
    if exif is not None:
        data = exif.tobytes()
        if len(data) <= _JPEG_MAX_EXIF:  # a larger block fits no APP1 segment: left out
            save.update(exif=data)
    img.save(fh, **save)


def _encode_tiff(
    fh: BinaryIO,
    img: Image.Image | np.ndarray,
    fmt: OutputFormat,
    record: SourceRecord | None = None,
    options: ComposeOptions | None = None,
    metadata: Metadata | None = None,
) -> None:
    from PIL import Image

    img = _pil(img)
    save = dict(fmt.pillow)
    icc, exif = _carried(metadata, options, _colour_channels(img))
    tags = Image.Exif()
    if exif is not None:
        for tag in _TIFF_EXIF_TAGS:
            if tag in exif:
                tags[tag] = exif[tag]
        if all(tag in exif for tag in _TIFF_RESOLUTION_TAGS):
            for tag in _TIFF_RESOLUTION_TAGS:
                tags[tag] = exif[tag]
        tags[_ORIENTATION] = 1
    if record is not None:
        tags[_TIFF_XMP] = record.to_xmp()
    if len(tags):
        save.update(exif=tags)
    if icc:
        save.update(icc_profile=icc)
    img.save(fh, **save)


# -- Writing a result --------------------------------------------------------------------


def _write_png_result(
    rgb: np.ndarray,
    alpha: np.ndarray,
    options: ComposeOptions,
    path: Path,
    fmt: OutputFormat,
    record: SourceRecord | None = None,
    claim: Claim | None = None,
    metadata: Metadata | None = None,
) -> int:
    """Composed and compressed a strip of rows at a time: the image is never whole."""
    from .compose import compose_strips

    out = compose_strips(rgb, alpha, options, rows=PNG_STRIP_ROWS)

    def encode(fh: BinaryIO) -> None:
        _png_rows(fh, out.width, out.height, out.channels, out.strips, record, options, metadata)

    return write_atomically(path, encode, claim)


def _write_whole_result(
    rgb: np.ndarray,
    alpha: np.ndarray,
    options: ComposeOptions,
    path: Path,
    fmt: OutputFormat,
    record: SourceRecord | None = None,
    claim: Claim | None = None,
    metadata: Metadata | None = None,
) -> int:
    from .compose import compose_array

    pixels = compose_array(rgb, alpha, options)
    return write_atomically(
        path, lambda fh: fmt.encode(fh, pixels, fmt, record, options, metadata), claim
    )


@dataclass(frozen=True)
class OutputFormat:
    """One format bgremover writes."""

    #: The name used on the command line and in settings ("png").
    name: str
    #: What a user calls it ("PNG").
    label: str
    #: The file name ending, with its dot.
    extension: str
    #: Whether it keeps transparency (a cutout without a background needs it).
    alpha: bool
    #: Encodes a whole image (array or Pillow image) into an open file, with a record.
    encode: Callable[..., None] = field(repr=False)
    #: Writes a result (colour, alpha, compose options) to a path atomically; bytes written.
    write_result: Callable[..., int] = field(repr=False)
    #: Whether a file on disk is a whole file of this format (no decoding).
    complete: Callable[[Path], bool] = field(repr=False)
    #: The source record a file of this format holds, if any (a few bytes read).
    record: Callable[[Path], SourceRecord | None] = field(repr=False)
    #: Pillow's save options where Pillow encodes.
    pillow: Mapping[str, Any] = field(default_factory=dict)
    #: Other file name endings that mean this format (".jpeg" for JPEG), with the dot.
    other_extensions: tuple[str, ...] = ()

    @property
    def extensions(self) -> tuple[str, ...]:
        """Every ending of this format's files, the one bgremover writes first."""
        return (self.extension, *self.other_extensions)

    @property
    def dialog_filter(self) -> str:
        """The file-dialog filter, e.g. ``PNG image (*.png)``."""
        patterns = " ".join(f"*{e}" for e in self.extensions)
        return f"{self.label} image ({patterns})"


FORMATS: dict[str, OutputFormat] = {
    f.name: f
    for f in (
        OutputFormat(
            "png",
            "PNG",
            ".png",
            alpha=True,
            encode=_encode_png,
            write_result=_write_png_result,
            complete=_png_complete,
            record=_png_record,
            pillow={"format": "PNG"},
        ),
        OutputFormat(
            "webp",
            "WebP",
            ".webp",
            alpha=True,
            encode=_encode_webp,
            write_result=_write_whole_result,
            complete=_webp_complete,
            record=_webp_record,
            # Lossy colour at a high quality, lossless alpha: edges stay exact, files small.
            # The quality is the options' (DEFAULT_QUALITY's when they name none).
            pillow={
                "format": "WEBP",
                "quality": DEFAULT_QUALITY["webp"],
                "alpha_quality": 100,
                "method": 4,
            },
        ),
        OutputFormat(
            "jpeg",
            "JPEG",
            ".jpg",
            alpha=False,
            encode=_encode_jpeg,
            write_result=_write_whole_result,
            complete=_jpeg_complete,
            record=_jpeg_record,
            # Quality: options.quality, or options.DEFAULT_QUALITY["jpeg"].
            pillow={"format": "JPEG"},
            other_extensions=(".jpeg",),
        ),
        OutputFormat(
            "tiff",
            "TIFF",
            ".tif",
            alpha=True,
            encode=_encode_tiff,
            write_result=_write_whole_result,
            complete=_tiff_complete,
            record=_tiff_record,
            # Deflate (zlib), as Adobe's programs write it: lossless, read everywhere.
            pillow={"format": "TIFF", "compression": "tiff_adobe_deflate"},
            other_extensions=(".tiff",),
        ),
    )
}
DEFAULT_FORMAT = "png"


def get_format(name: str) -> OutputFormat:
    """The format called ``name``; an unknown one is an :class:`ImageWriteError`."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ImageWriteError(
            f"Unknown output format {name!r}; use one of: {', '.join(FORMATS)}."
        ) from None


def format_for_path(path: Path) -> OutputFormat | None:
    """The format a file name asks for by its ending, if bgremover writes it."""
    suffix = path.suffix.lower()
    return next((f for f in FORMATS.values() if suffix in f.extensions), None)


def write_output(
    rgb: np.ndarray,
    alpha: np.ndarray,
    options: ComposeOptions,
    path: Path,
    fmt: str,
    record: SourceRecord | None = None,
    claim: Claim | None = None,
    metadata: Metadata | None = None,
) -> int:
    """Compose the output for ``options`` and write it atomically; returns its bytes.

    ``record`` (the photo it was made from) goes into the file, so that a rerun knows
    the file is this photo's; ``claim``, when the caller holds ``path``'s claim already.
    ``metadata`` (the photo's, see :attr:`~bgremover.files.imaging.LoadedImage.metadata`): its
    colour profile goes into colour outputs, its EXIF (orientation 1: the pixels are
    upright) into every output unless ``options.strip_metadata``.
    """
    out = get_format(fmt)
    return out.write_result(rgb, alpha, options, path, out, record, claim, metadata)


def write_image(
    img: Image.Image | np.ndarray,
    path: Path,
    fmt: str,
    options: ComposeOptions | None = None,
    metadata: Metadata | None = None,
) -> int:
    """Write a whole image to ``path`` atomically and return the bytes written.

    ``options`` gives the encoding settings (quality, lossless, strip_metadata) and
    ``metadata`` what the file carries over, as for :func:`write_output`."""
    out = get_format(fmt)
    return write_atomically(path, lambda fh: out.encode(fh, img, out, None, options, metadata))


def is_complete_output(path: Path) -> bool:
    """True when ``path`` is a whole file of the format its name says (a rerun skips it).

    Checked from the file's structure in a few bytes, without decoding, so resuming
    a large batch does not decode every finished output. A file whose ending is not
    one bgremover writes is never complete.
    """
    fmt = format_for_path(path)
    try:
        return fmt is not None and path.stat().st_size > 0 and fmt.complete(path)
    except OSError:
        return False


#: What an existing output is to a photo that would be written there (see :func:`existing_output`).
MISSING, DONE, REDO, UNVERIFIED, OTHER_PHOTO = "missing", "done", "redo", "unverified", "other"
#: An output of this photo made with other settings, or with settings it does not record.
STALE = "stale"
#: An output of this photo made with the user's edits, for a run that has none for it.
EDITED = "edited"


@dataclass(frozen=True)
class Existing:
    """What stands at an output path, for the photo that would be written there."""

    state: str
    #: The photo the file records it was made from, when it records one.
    record: SourceRecord | None = None


def existing_output(path: Path, source: SourceRecord) -> Existing:
    """Whether the file at ``path`` is ``source``'s finished output.

    - MISSING: nothing there.
    - DONE: a whole file made from this photo (same size and first MiB), with the
      settings ``source.settings`` names (or any settings, when that is None).
    - STALE: a whole file made from this photo with other settings, or one whose record
      names no settings (written by an earlier bgremover): it is made again.
    - EDITED: a whole file made from this photo with the user's edits (touch-up), where
      ``source.settings`` has none: not replaced without ``--overwrite`` (the touch-up
      would be lost).
    - REDO: an unfinished file made from this photo: writing it again is safe.
    - OTHER_PHOTO: a file made from another photo (a photo renamed, or two names that
      are one on a case-insensitive disk): never taken for this photo's output.
    - UNVERIFIED: a file that records no photo (written by bgremover 0.1.0 or earlier, or
      by another program): not replaced without ``--overwrite``.
    """
    fmt = format_for_path(path)
    try:
        if not path.exists():
            return Existing(MISSING)
        record = fmt.record(path) if fmt is not None else None
        if record is None:
            return Existing(UNVERIFIED)
        if not record.same_photo(source):
            return Existing(OTHER_PHOTO, record)
        if not is_complete_output(path):
            return Existing(REDO, record)
        wanted, made = source.settings, record.settings
        if wanted is not None and (made is None or made.digest != wanted.digest):
            edits_lost = made is not None and made.edited and not wanted.edited
            return Existing(EDITED if edits_lost else STALE, record)
        return Existing(DONE, record)
    except OSError:
        return Existing(UNVERIFIED)


def encoded_preview(pixels: np.ndarray, fmt_name: str, options: ComposeOptions) -> np.ndarray:
    """``pixels`` as a file of format ``fmt_name`` written with ``options`` would hold
    them: encoded and decoded again when the format loses detail (JPEG; WebP unless
    lossless), else ``pixels`` themselves. The same layout comes back (grey, RGB, RGBA).

    The app's preview shows this, so it is what Save writes; the source record and the
    photo's metadata that a saved file also carries do not change pixels."""
    import io

    import numpy as np
    from PIL import Image

    fmt = get_format(fmt_name)
    grey = pixels.ndim == 2
    lossy = fmt.name == "jpeg" or (fmt.name == "webp" and not options.lossless and not grey)
    if not lossy:
        return pixels
    buffer = io.BytesIO()
    fmt.encode(buffer, pixels, fmt, None, options, None)
    buffer.seek(0)
    with Image.open(buffer) as decoded:
        mode = "L" if grey else "RGBA" if pixels.shape[2] == 4 else "RGB"
        return np.asarray(decoded.convert(mode))
