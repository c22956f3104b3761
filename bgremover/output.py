"""The output formats, in one table, and writing a result in one of them.

Each :class:`OutputFormat` says what its files are called, whether they keep
transparency, how a result is written (composed and encoded straight into an
atomic file) and how a finished file is recognised on a rerun: whole, and
made from the same photo, by the record of its source (:class:`SourceRecord`)
that bgremover writes into each output (a PNG iTXt chunk, WebP XMP). The command
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from xml.sax.saxutils import escape, unescape

from .atomic import Claim, write_atomically
from .errors import ImageWriteError

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

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
class SourceRecord:
    """What an output records about the photo it was made from.

    Two photos are the same when size and the SHA-256 of their first MiB agree: a
    renamed or copied photo is still itself, another photo under the same name is not.
    The name is kept to say which photo an output was made from.
    """

    name: str
    size: int
    head_sha256: str

    @classmethod
    def of(cls, source: Path) -> SourceRecord:
        """The record of the photo at ``source`` (OSError if it cannot be read)."""
        with open(source, "rb") as fh:
            head = fh.read(RECORD_HEAD_BYTES)
            size = os.fstat(fh.fileno()).st_size
        return cls(source.name, size, hashlib.sha256(head).hexdigest())

    def same_photo(self, other: SourceRecord) -> bool:
        return self.size == other.size and self.head_sha256 == other.head_sha256

    def to_text(self) -> str:
        return json.dumps(
            {"source": self.name, "size": self.size, "sha256_first_mib": self.head_sha256},
            ensure_ascii=False,
        )

    @classmethod
    def from_text(cls, text: str) -> SourceRecord | None:
        try:
            data = json.loads(text)
            return cls(str(data["source"]), int(data["size"]), str(data["sha256_first_mib"]))
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
    from .png import read_itxt

    with open(path, "rb") as fh:
        text = read_itxt(fh, RECORD_KEYWORD)
    return None if text is None else SourceRecord.from_text(text)


def _webp_record(path: Path) -> SourceRecord | None:
    """The record in a WebP's XMP chunk, found by walking the RIFF chunk headers."""
    with open(path, "rb") as fh:
        head = fh.read(12)
        if head[:4] != b"RIFF" or head[8:12] != b"WEBP":
            return None
        while len(chunk := fh.read(8)) == 8:
            kind, length = chunk[:4], int.from_bytes(chunk[4:], "little")
            if kind == b"XMP ":
                match = _XMP_RE.search(fh.read(min(length, 1 << 20)))
                if not match:
                    return None
                return SourceRecord.from_text(unescape(match.group(1).decode("utf-8", "replace")))
            fh.seek(length + (length & 1), os.SEEK_CUR)
    return None


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


def _png_rows(
    fh: BinaryIO,
    width: int,
    height: int,
    channels: int,
    strips,
    record: SourceRecord | None = None,
) -> None:
    from .png import PngWriter

    text = {RECORD_KEYWORD: record.to_text()} if record else None
    writer = PngWriter(fh, width, height, channels, text=text)
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
) -> None:
    pixels = _png_pixels(img)
    if pixels is None:  # a mode the streaming writer does not take (e.g. palette)
        _encode_pillow(fh, img, fmt, record)
        return
    height, width = pixels.shape[:2]
    channels = 1 if pixels.ndim == 2 else pixels.shape[2]
    strips = (pixels[y : y + PNG_STRIP_ROWS] for y in range(0, height, PNG_STRIP_ROWS))
    _png_rows(fh, width, height, channels, strips, record)


def _encode_pillow(
    fh: BinaryIO,
    img: Image.Image | np.ndarray,
    fmt: OutputFormat,
    record: SourceRecord | None = None,
) -> None:
    from PIL import Image, PngImagePlugin

    if not isinstance(img, Image.Image):
        img = Image.fromarray(img)
    options = dict(fmt.pillow)
    if fmt.name == "webp" and img.mode == "L":
        options.update(lossless=True)  # masks are data: keep them exact
    if record is not None and fmt.name == "webp":
        options.update(xmp=record.to_xmp())
    elif record is not None and fmt.name == "png":
        info = PngImagePlugin.PngInfo()
        info.add_itxt(RECORD_KEYWORD, record.to_text())
        options.update(pnginfo=info)
    img.save(fh, **options)


def _write_png_result(
    rgb: np.ndarray,
    alpha: np.ndarray,
    options: ComposeOptions,
    path: Path,
    fmt: OutputFormat,
    record: SourceRecord | None = None,
    claim: Claim | None = None,
) -> int:
    """Composed and compressed a strip of rows at a time: the image is never whole."""
    from .compose import compose_strips

    height, width = alpha.shape
    channels, strips = compose_strips(rgb, alpha, options, rows=PNG_STRIP_ROWS)
    return write_atomically(
        path, lambda fh: _png_rows(fh, width, height, channels, strips, record), claim
    )


def _write_whole_result(
    rgb: np.ndarray,
    alpha: np.ndarray,
    options: ComposeOptions,
    path: Path,
    fmt: OutputFormat,
    record: SourceRecord | None = None,
    claim: Claim | None = None,
) -> int:
    from .compose import compose_array

    pixels = compose_array(rgb, alpha, options)
    return write_atomically(path, lambda fh: fmt.encode(fh, pixels, fmt, record), claim)


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

    @property
    def dialog_filter(self) -> str:
        """The file-dialog filter, e.g. ``PNG image (*.png)``."""
        return f"{self.label} image (*{self.extension})"


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
            encode=_encode_pillow,
            write_result=_write_whole_result,
            complete=_webp_complete,
            record=_webp_record,
            # Lossy colour at a high quality, lossless alpha: edges stay exact, files small.
            pillow={"format": "WEBP", "quality": 90, "alpha_quality": 100, "method": 4},
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
    return next((f for f in FORMATS.values() if f.extension == suffix), None)


def write_output(
    rgb: np.ndarray,
    alpha: np.ndarray,
    options: ComposeOptions,
    path: Path,
    fmt: str,
    record: SourceRecord | None = None,
    claim: Claim | None = None,
) -> int:
    """Compose the output for ``options`` and write it atomically; returns its bytes.

    ``record`` (the photo it was made from) goes into the file, so that a rerun knows
    the file is this photo's; ``claim``, when the caller holds ``path``'s claim already.
    """
    out = get_format(fmt)
    return out.write_result(rgb, alpha, options, path, out, record, claim)


def write_image(img: Image.Image | np.ndarray, path: Path, fmt: str) -> int:
    """Write a whole image to ``path`` atomically and return the bytes written."""
    out = get_format(fmt)
    return write_atomically(path, lambda fh: out.encode(fh, img, out))


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


@dataclass(frozen=True)
class Existing:
    """What stands at an output path, for the photo that would be written there."""

    state: str
    #: The photo the file records it was made from, when it records one.
    record: SourceRecord | None = None


def existing_output(path: Path, source: SourceRecord) -> Existing:
    """Whether the file at ``path`` is ``source``'s finished output.

    - MISSING: nothing there.
    - DONE: a whole file made from this photo (same size and first MiB).
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
        return Existing(DONE if is_complete_output(path) else REDO, record)
    except OSError:
        return Existing(UNVERIFIED)
