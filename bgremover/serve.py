"""The HTTP API: ``bgremover serve``.

A FastAPI app on uvicorn with one :class:`~bgremover.pipeline.Remover` (one ONNX
Runtime session) made at start and shared by every request:

- ``POST /v1.0/removebg``: remove.bg's API, as its real clients use it. The image
  comes as a multipart file ``image_file`` (with or without a file name), as a field
  ``image_file_b64`` (base64; line breaks and a ``data:`` prefix allowed), in a
  multipart or urlencoded form or a JSON object (JSON booleans and numbers read as
  remove.bg reads them). Parameters and what they become, through the same
  :func:`~bgremover.presets.options_from` that reads the command line's options:

  - ``format``: ``auto`` (the default, as remove.bg's: PNG when the output has
    transparency or is a mask, JPEG otherwise), ``png``, ``jpg``/``jpeg``, ``webp``.
    A JPEG without ``bg_color`` gets a white background, as remove.bg's does.
  - ``channels``: ``rgba`` (the cutout) or ``alpha`` (the mask, ``mask_only``).
  - ``bg_color``: hex with or without ``#`` (``81d4fa``, ``fff``, ``81d4fa80``) or a
    colour name (``green``): the ``background``.
  - ``crop``: true/false; ``crop_margin``: ``30px``, ``30`` or ``10%`` (the ``margin``
    around the cropped subject; a percentage is of the subject box's long side), also
    as CSS's two or four values when they are equal; ignored without ``crop``, as
    remove.bg ignores it.
  - ``size``: remove.bg's sizes as pixel counts, applied through ``max_size``
    (the long side, computed per image so that the output holds at most that many
    pixels; never scaled up): ``preview``/``small``/``regular`` 0.25 megapixels,
    ``medium`` 1.5, ``hd`` 4, ``4k`` 10; ``full``, ``50MP`` and ``auto`` keep the
    photo's size (up to the megapixel limit every input has). The default is ``auto``:
    remove.bg's default is ``preview`` because larger sizes cost credits; here none do.
  - ``roi``: ``x1 y1 x2 y2`` in pixels or percent: nothing outside is foreground.
  - ``add_shadow``: true adds bgremover's soft drop shadow (``shadow_type`` drop;
    ``shadow_opacity`` 0-100, as remove.bg's).
  - remove.bg's defaults, which clients send on every call, change nothing
    (:data:`NO_OP_VALUES`: ``type=auto``, ``type_level``, ``scale``/``position``
    ``original``, ``semitransparency``, ``shadow_method=legacy``); other values of
    them are refused with 400 naming the default, never ignored.

  ``image_url``, ``bg_image_url`` and ``bg_image_file`` and any unknown name are
  refused with 400: this server does not fetch URLs (no outbound requests at all).
  An answer carries remove.bg's headers: ``X-Type`` (always ``other``), ``X-Width``,
  ``X-Height``, ``X-Foreground-Top/Left/Width/Height`` (the subject's box on the
  output), ``X-Credits-Charged`` (0) and ``X-RateLimit-Limit/Remaining/Reset`` (this
  server's limit is requests at once, workers + queue); with ``Accept:
  application/json`` the image comes as remove.bg's JSON, ``{"data": {"result_b64",
  "foreground_top", ...}}``.
- ``POST /api/remove``: the image as the raw body; the same parameters as query
  parameters (``?format=webp&bg_color=fff``); a PNG cutout by default.
- ``GET /v1.0/account``: 404 in remove.bg's errors shape (no accounts, no credits).
- ``GET /healthz``: ok, model, precision, providers (no key needed).
- ``GET /metrics``: Prometheus text format: requests by endpoint and status, a
  latency histogram, queue depth, requests in flight, resident memory.

Errors are remove.bg's JSON, ``{"errors": [{"title", "code", "detail"}]}`` (unknown
paths too): 400 a bad parameter or an unreadable image, 403 (``/api/remove``: 401) a
missing or wrong ``X-Api-Key``, 408 an upload slower than the time limit, 400
``file_too_large`` (``/api/remove``: 413) a body or an image over the limits, 429 the
queue is full (with ``Retry-After``), 503 shutting down or a request over the time
limit (with ``Retry-After``). A body declared over the limit is refused before it is
read (no ``100 Continue``); of a refused request's body at most DISCARD_SECONDS are
read, so a client that trickles is answered all the same.

Work is bounded: a request is admitted (or refused with 429) before its body is read,
at most ``workers + queue`` at once; the body is read in chunks up to the size limit;
``workers`` threads run the engine (decode, model input, finish, compose, encode),
with one inference at a time on the shared session (which uses every core), as
the batch pipeline does, and the pixels being decoded or finished are held under
the batch's pixel budget. Nothing of the engine runs on the event loop. On SIGTERM
(or Ctrl+C) the server keeps listening while the admitted requests finish, answers
503 with Retry-After to requests that arrive meanwhile, then exits 0 (a second signal
stops it listening at once).
"""

import asyncio
import base64
import binascii
import contextlib
import hmac
import io
import ipaddress
import json
import logging
import math
import os
import re
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus, unquote_to_bytes

import numpy as np

from .errors import BgRemoverError, ImageReadError, UsageError

log = logging.getLogger("bgremover.serve")

API_KEY_ENV = "BGREMOVER_API_KEY"
DEFAULT_MAX_BODY_MB = 25.0  # remove.bg takes files up to 22 MB
DEFAULT_TIMEOUT = 120.0
#: Output size limits of remove.bg's ``size`` values, in pixels (None: the photo's own).
SIZES: dict[str, int | None] = {
    "preview": 250_000,
    "small": 250_000,
    "regular": 250_000,
    "medium": 1_500_000,
    "hd": 4_000_000,
    "4k": 10_000_000,
    "full": None,
    "50mp": None,
    "auto": None,
}
#: remove.bg's parameters that bgremover reads (the image fields aside).
PARAMETERS = (
    "format",
    "channels",
    "bg_color",
    "crop",
    "crop_margin",
    "size",
    "roi",
    "add_shadow",
    "shadow_type",
    "shadow_opacity",
    "type",
    "type_level",
    "scale",
    "position",
    "semitransparency",
    "shadow_method",
)
#: remove.bg's parameters whose values listed here change nothing in bgremover's output
#: (remove.bg's defaults, which real clients always send), each with what any other value
#: asks for that bgremover cannot do.
NO_OP_VALUES: dict[str, tuple[tuple[str, ...], str]] = {
    # bgremover finds the foreground itself and reports every subject as "other".
    "type": (("auto",), "bgremover has no foreground types: it finds the subject itself"),
    # The level of the type classification only names what X-Type reports.
    "type_level": (("none", "1", "2", "latest"), "type_level is none, 1, 2 or latest"),
    "scale": (("original", "100%"), "the subject is never rescaled inside its image"),
    "position": (("original",), "the subject is never moved inside its image"),
    # remove.bg makes only car windows see-through; bgremover's edges keep their partial
    # alpha (hair, fur) either way, as remove.bg's do for every other subject.
    "semitransparency": (("true", "false", "1", "0"), "semitransparency is true or false"),
    "shadow_method": (("legacy",), "bgremover draws its own soft drop shadow (legacy)"),
}
#: remove.bg parameters bgremover does not implement at all: refused by name, with a reason.
UNSUPPORTED = {
    "image_url": "this server does not fetch URLs (URL fetching is off); send the image "
    "itself as image_file, image_file_b64 or the raw body of /api/remove",
    "bg_image_url": "background images from URLs are not supported (no outbound requests)",
    "bg_image_file": "background image files are not supported by the server",
}
HISTOGRAM_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
CONTENT_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}
_HEX = re.compile(r"^(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")


class ApiError(Exception):
    """A request that fails: its HTTP status and remove.bg's error fields."""

    def __init__(
        self,
        status: int,
        title: str,
        code: str,
        detail: str = "",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(title)
        self.status = status
        self.title = title
        self.code = code
        self.detail = detail
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        error = {"title": self.title, "code": self.code}
        if self.detail:
            error["detail"] = self.detail
        return {"errors": [error]}


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_of(host: str, port: int) -> str:
    """The URL clients use for ``host`` and ``port`` (an IPv6 address in brackets)."""
    try:
        ipv6 = ipaddress.ip_address(host.strip("[]")).version == 6
    except ValueError:
        ipv6 = False
    return f"http://[{host.strip('[]')}]:{port}" if ipv6 else f"http://{host}:{port}"


#: The server's memory per pixel of the image being worked on, at its peak (decode, mask,
#: refinement, composition and encoding), above the idle server's: 10.6 bytes measured
#: on a 60-megapixel PNG, 10.7 on a 245-megapixel one (2.6 GB over 0.4 GB idle). The
#: pixel budget lets only one image over DEFAULT_PIXELS_IN_FLIGHT be worked on at a
#: time, so an image at the megapixel limit is the worst case (tests/test_serve.py).
BYTES_PER_PIXEL = 11
#: The share of the machine's memory the worst-case image may take.
MEMORY_SHARE = 0.5


def memory_megapixels(total: int | None = None) -> float:
    """The default megapixel limit: the imaging default (250), lowered so that one image
    at the limit fits in MEMORY_SHARE of the machine's memory (``total`` bytes; read
    from the system when None, the imaging default where it cannot be read)."""
    from .imaging import DEFAULT_MAX_MEGAPIXELS

    if total is None:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):
            return DEFAULT_MAX_MEGAPIXELS
    fits = MEMORY_SHARE * total / BYTES_PER_PIXEL / 1e6
    return float(min(DEFAULT_MAX_MEGAPIXELS, max(1, math.floor(fits))))


def api_key_for(host: str, given: str | None) -> str | None:
    """The key clients must send: ``given``, else $BGREMOVER_API_KEY; required off loopback."""
    key = given if given is not None else os.environ.get(API_KEY_ENV)
    key = key or None
    if key is None and not is_loopback(host):
        raise UsageError(
            f"Refusing to listen on {host} without an API key: anyone who can reach this "
            "machine could use it.",
            fix=f"Give --api-key KEY (or set {API_KEY_ENV}); clients send it as the "
            "X-Api-Key header. Or listen on 127.0.0.1 only.",
        )
    return key


# -- parameters -----------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """What the engine needs of one request: the image bytes and its parameters."""

    data: bytes
    params: Mapping[str, str]
    default_format: str


def export_values(params: Mapping[str, str], width: int, height: int) -> tuple[dict, str, bool]:
    """remove.bg's parameters as bgremover's option values (presets' spelling), the
    format ("auto" or a name) and whether the output is the mask."""
    for name in params:
        if name in UNSUPPORTED:
            raise ApiError(
                400,
                f"The parameter {name!r} is not supported: {UNSUPPORTED[name]}.",
                "unsupported_parameter",
                f"Use only: {', '.join(PARAMETERS)}.",
            )
        if name not in PARAMETERS:
            raise ApiError(
                400,
                f"Unknown parameter {name!r}.",
                "unknown_parameter",
                f"This server reads: {', '.join(PARAMETERS)} (and image_file or image_file_b64).",
            )
    for name, (accepted, reason) in NO_OP_VALUES.items():
        value = params.get(name, accepted[0]).strip().lower()
        if value and value not in accepted:
            raise ApiError(
                400,
                f"{name}={params[name]!r} is not supported: {reason}.",
                "unsupported_parameter",
                f"Leave {name} out, or send {name}={accepted[0]} (remove.bg's default).",
            )
    values: dict[str, Any] = {}
    channels = params.get("channels", "rgba").strip().lower()
    if channels not in ("rgba", "alpha"):
        raise ApiError(400, f"channels is rgba or alpha, not {channels!r}.", "invalid_channels")
    if "bg_color" in params and params["bg_color"].strip():
        color = params["bg_color"].strip().removeprefix("#")
        values["background"] = f"#{color}" if _HEX.match(color) else color
    if "crop" in params:
        values["crop"] = params["crop"]
    if "crop_margin" in params and params["crop_margin"].strip():
        margin = crop_margin(params["crop_margin"])
        # remove.bg applies the margin only to a crop, and ignores it otherwise.
        if params.get("crop", "false").strip().lower() in ("true", "1", "yes", "on"):
            values["margin"] = margin
    values.update(_shadow_values(params))
    size = params.get("size", "auto").strip().lower()
    if size not in SIZES:
        raise ApiError(
            400,
            f"Unknown size {params['size']!r}.",
            "invalid_size",
            f"Use one of: {', '.join(SIZES)}.",
        )
    limit = SIZES[size]
    if limit is not None and width * height > limit:
        long_side, short_side = max(width, height), min(width, height)
        side = max(1, math.floor(long_side * math.sqrt(limit / (width * height))))
        while side > 1 and side * math.ceil(short_side * side / long_side) > limit:
            side -= 1  # the short side is rounded: stay within the pixel count
        values["max_size"] = side
    fmt = params.get("format", "auto").strip().lower()
    if fmt not in ("auto", "png", "jpg", "jpeg", "webp"):
        raise ApiError(
            400,
            f"Unknown format {params['format']!r}.",
            "invalid_format",
            "Use auto, png, jpg or webp (zip is not supported).",
        )
    if fmt != "auto":
        values["format"] = fmt
    return values, fmt, channels == "alpha"


def crop_margin(text: str) -> str:
    """remove.bg's ``crop_margin`` (one value, or CSS's two or four: top/bottom and
    left/right, or top, right, bottom, left) as bgremover's one margin.

    bgremover's crop has one margin for every side, so several values are taken when
    they are equal and refused otherwise; each is ``30px``, ``30`` or ``10%``.
    """
    parts = text.replace(",", " ").split()
    if len(parts) not in (1, 2, 4):
        raise ApiError(
            400,
            f"crop_margin has 1, 2 or 4 values, not {len(parts)}: {text!r}.",
            "invalid_parameter",
            "Send one margin for every side, e.g. crop_margin=30px or crop_margin=10%.",
        )
    from .compose import parse_length

    try:
        spelled = {parse_length(part) for part in parts}
    except UsageError as exc:
        raise ApiError(400, exc.message, "invalid_parameter", exc.fix) from None
    if len(spelled) > 1:
        raise ApiError(
            400,
            f"crop_margin={text!r} asks for different margins per side, which bgremover's "
            "crop does not make.",
            "unsupported_parameter",
            "Send one margin for every side, e.g. crop_margin=30px.",
        )
    return parts[0]


def roi_box(text: str, width: int, height: int) -> tuple[int, int, int, int] | None:
    """remove.bg's ``roi`` (``x1 y1 x2 y2``, each in pixels or percent of the photo) as a
    pixel box (x0, y0, x1, y1, exclusive ends); None when it is the whole photo."""
    parts = text.replace(",", " ").split()
    box: list[int] = []
    for i, part in enumerate(parts if len(parts) == 4 else ()):
        size = width if i % 2 == 0 else height
        number = part.lower().removesuffix("px").removesuffix("%")
        try:
            value = float(number)
        except ValueError:
            break
        if not math.isfinite(value) or value < 0:
            break
        pixels = value / 100 * size if part.endswith("%") else value
        box.append(min(size, round(pixels)))
    if len(box) != 4 or box[0] >= box[2] or box[1] >= box[3]:
        raise ApiError(
            400,
            f"roi={text!r} is not a region: it is x1 y1 x2 y2 with x1 < x2 and y1 < y2.",
            "invalid_parameter",
            "Send e.g. roi=0% 0% 100% 100% (the whole photo) or roi=10px 20px 300px 400px.",
        )
    if box == [0, 0, width, height]:
        return None
    return box[0], box[1], box[2], box[3]


def _shadow_values(params: Mapping[str, str]) -> dict[str, Any]:
    """remove.bg's ``add_shadow`` (with ``shadow_type`` drop and ``shadow_opacity``
    0-100) as bgremover's soft drop shadow."""
    kind = params.get("shadow_type", "drop").strip().lower()
    if kind not in ("drop", "auto"):
        raise ApiError(
            400,
            f"The shadow type {params['shadow_type']!r} is not supported.",
            "unsupported_parameter",
            "bgremover draws a soft drop shadow: leave shadow_type out, or use drop.",
        )
    add = params.get("add_shadow", "false").strip().lower()
    if add not in ("true", "false", "1", "0", "yes", "no"):
        raise ApiError(400, f"add_shadow is true or false, not {add!r}.", "invalid_parameter")
    if add not in ("true", "1", "yes"):
        return {}
    opacity = params.get("shadow_opacity", "").strip()
    if not opacity:
        return {"shadow": True}
    try:
        share = int(opacity) / 100
        if not 0 <= share <= 1:
            raise ValueError
    except ValueError:
        raise ApiError(
            400, f"shadow_opacity is 0 to 100, not {opacity!r}.", "invalid_parameter"
        ) from None
    return {"shadow": f"opacity={share:g}"}


def options_for(params: Mapping[str, str], width: int, height: int, default_format: str):
    """ComposeOptions and the output format for remove.bg's ``params`` on a photo of
    ``width`` x ``height``; bad values are 400 with options_from's own words."""
    from .compose import ComposeOptions
    from .presets import check_export, options_from

    values, fmt, mask = export_values(params, width, height)
    try:
        options, chosen = options_from(values, ComposeOptions(mask_only=mask))
        if fmt == "auto":
            chosen = default_format if default_format != "auto" else None
            if chosen is None:
                chosen = "png" if options.channels != 3 else "jpeg"
        assert chosen is not None
        if chosen == "jpeg" and options.channels == 4 and "background" not in values:
            # remove.bg's JPEGs have a white background when none is asked for.
            values["background"] = "white"
            options, _ = options_from(values, ComposeOptions(mask_only=mask))
        check_export(options, chosen)
    except UsageError as exc:
        raise ApiError(400, exc.message, "invalid_parameter", exc.fix) from None
    if chosen not in CONTENT_TYPES:
        raise ApiError(400, f"The format {chosen} is not served.", "invalid_format")
    return options, chosen


#: The longest header line of one multipart part: long file names (8,000 characters) are
#: read; the body's size limit bounds the whole form.
MAX_PART_HEADER = 64 * 1024
_DATA_URL = re.compile(r"^data:[^,]*;base64,", re.IGNORECASE)


def body_params(body: bytes, content_type: str, limit: int) -> tuple[bytes, dict[str, str]]:
    """The image bytes and the other fields of a multipart form, an urlencoded form or
    a JSON object (remove.bg takes all three)."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == "application/json":
        fields = json_fields(body)
        files: dict[str, bytes] = {}
    elif kind in ("multipart/form-data", "application/x-www-form-urlencoded"):
        files, fields = form_fields(body, content_type, limit)
    else:
        raise ApiError(
            400,
            "The body is not a form.",
            "invalid_form",
            "Send multipart/form-data with the image as image_file, or a JSON object with "
            "image_file_b64.",
        )
    b64 = fields.pop("image_file_b64", None)
    if "image_file" in files and b64 is not None:
        raise ApiError(400, "Both image_file and image_file_b64 are given.", "invalid_parameter")
    if "image_file" in files:
        return files["image_file"], fields
    if b64 is not None:
        return decode_b64(b64), fields
    if "image_url" in fields:
        return b"", fields  # refused by name in export_values
    raise ApiError(
        400,
        "No image: the request has neither image_file nor image_file_b64.",
        "missing_source",
        "Send the image as a multipart file named image_file.",
    )


def decode_b64(text: str) -> bytes:
    """``image_file_b64``'s bytes: line breaks and a ``data:...;base64,`` prefix allowed."""
    compact = "".join(_DATA_URL.sub("", text.strip()).split())
    try:
        return base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, "image_file_b64 is not valid base64.", "invalid_file_b64") from None


def json_fields(body: bytes) -> dict[str, str]:
    """A JSON object's fields as the form's text values (true/false, numbers as written)."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(
            400, "The request body is not valid JSON.", "invalid_form", str(exc)
        ) from None
    if not isinstance(document, dict):
        raise ApiError(400, "The JSON body is not an object.", "invalid_form")
    fields: dict[str, str] = {}
    for name, value in document.items():
        if value is None:
            continue
        if isinstance(value, bool):
            fields[name] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            fields[name] = str(value)
        else:
            raise ApiError(
                400, f"The JSON field {name!r} is not a string, number or boolean.", "invalid_form"
            )
    return fields


def form_fields(
    body: bytes, content_type: str, limit: int
) -> tuple[dict[str, bytes], dict[str, str]]:
    """A multipart or urlencoded form's file parts (as bytes) and text fields."""
    from python_multipart.exceptions import FormParserError
    from python_multipart.multipart import create_form_parser

    fields: dict[str, str] = {}
    files: dict[str, bytes] = {}
    duplicate: list[str] = []
    urlencoded = content_type.lower().startswith("application/x-www-form-urlencoded")

    def text(raw: bytes) -> str:
        value = raw.decode("utf-8", "replace")
        return unquote_plus(value) if urlencoded else value  # the parser leaves %xx and +

    def keep(name: str) -> None:
        if name in fields or name in files:
            duplicate.append(name)

    def on_field(f: Any) -> None:
        name = text(f.field_name)
        keep(name)
        raw = f.value or b""
        if name == "image_file":
            # A part without a file name (curl -F 'image_file=<photo.jpg') is a field to
            # the parser; its bytes are the image, not text.
            files[name] = unquote_to_bytes(raw.replace(b"+", b" ")) if urlencoded else raw
        else:
            fields[name] = text(raw)

    def on_file(f: Any) -> None:
        name = f.field_name.decode("utf-8", "replace")
        keep(name)
        handle = f.file_object
        handle.seek(0)
        files[name] = handle.read()

    headers = {"Content-Type": content_type.encode("latin-1"), "Content-Length": b"%d" % len(body)}
    try:
        parser = create_form_parser(
            headers,
            on_field,
            on_file,
            config={"MAX_MEMORY_FILE_SIZE": limit + 1, "MAX_HEADER_SIZE": MAX_PART_HEADER},
        )
        parser.write(body)
        parser.finalize()
    except (FormParserError, ValueError) as exc:
        raise ApiError(
            400,
            "The request body is not a readable form.",
            "invalid_form",
            f"Send multipart/form-data with an image_file part ({exc}).",
        ) from None
    if duplicate:
        raise ApiError(
            400,
            f"The field {duplicate[0]!r} is given twice.",
            "invalid_parameter",
            "Send each field once (one image per request).",
        )
    unknown_files = [name for name in files if name != "image_file"]
    if unknown_files:
        raise ApiError(
            400,
            f"Unknown file field {unknown_files[0]!r}.",
            "unknown_parameter",
            "Send the image as image_file.",
        )
    return files, fields


# -- the engine's side ----------------------------------------------------------------


def foreground_box(
    alpha: np.ndarray, options: Any, width: int, height: int
) -> tuple[int, int, int, int]:
    """Where the foreground lies on the ``width`` x ``height`` output of ``options``:
    left, top, width, height (remove.bg's ``foreground_*``; zeros when there is none).
    Cropped, it is the subject's box (its leftovers are cleared); else the box of all
    the alpha that shows."""
    from .compose import layout
    from .subject import find_subject, visible_box

    subject = find_subject(alpha) if options.crop else None
    box = subject.box if subject is not None else visible_box(alpha)
    if box is None:
        return 0, 0, 0, 0
    lay = layout(alpha, options, subject)
    left, top = lay.to_output(box[0], box[1])
    right, bottom = lay.to_output(box[2], box[3])
    x0, y0 = max(0, math.floor(left)), max(0, math.floor(top))
    x1, y1 = min(width, math.ceil(right)), min(height, math.ceil(bottom))
    return x0, y0, max(0, x1 - x0), max(0, y1 - y0)


class PixelBudget:
    """Admits images while the pixels being worked on stay under a limit (one at least)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.cond = threading.Condition()

    @contextlib.contextmanager
    def hold(self, pixels: int) -> Iterator[None]:
        with self.cond:
            while self.used and self.used + pixels > self.limit:
                self.cond.wait()
            self.used += pixels
        try:
            yield
        finally:
            with self.cond:
                self.used -= pixels
                self.cond.notify_all()


@dataclass
class Output:
    body: bytes
    media_type: str
    width: int
    height: int
    #: The subject's box on the output: left, top, width, height (all 0 when none).
    foreground: tuple[int, int, int, int]
    #: What made the mask: "int8", or "fp32" (asked for, or where the int8 guard ran it).
    precision: str = "fp32"


class Engine:
    """The shared Remover, its worker threads and the admission count."""

    def __init__(
        self,
        remover: Any,
        workers: int,
        queue: int,
        max_megapixels: float,
        pixels_in_flight: int,
    ) -> None:
        self.remover = remover
        self.workers = max(1, workers)
        self.capacity = self.workers + max(0, queue)
        self.max_megapixels = max_megapixels
        self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="bgremover-serve")
        self.infer_lock = threading.Lock()
        self.budget = PixelBudget(pixels_in_flight)
        self.lock = threading.Lock()
        self.admitted = 0
        self.running = 0

    def admit(self) -> bool:
        with self.lock:
            if self.admitted >= self.capacity:
                return False
            self.admitted += 1
            return True

    def release(self) -> None:
        with self.lock:
            self.admitted -= 1

    @property
    def free(self) -> int:
        """Requests that would be admitted now."""
        with self.lock:
            return max(0, self.capacity - self.admitted)

    @property
    def busy(self) -> bool:
        """Whether any admitted request is still being read or processed."""
        with self.lock:
            return self.admitted > 0

    @property
    def queue_depth(self) -> int:
        with self.lock:
            return max(0, self.admitted - self.running)

    def submit(self, request: Request, content_type: str | None, limit: int) -> Future:
        return self.pool.submit(self._run, request, content_type, limit)

    def _run(self, request: Request, content_type: str | None, limit: int) -> Output:
        with self.lock:
            self.running += 1
        try:
            return self.process(request, content_type, limit)
        finally:
            with self.lock:
                self.running -= 1

    def process(self, request: Request, content_type: str | None, limit: int) -> Output:
        """Read, cut out, compose and encode one request's image (on a worker thread)."""
        data, params = request.data, dict(request.params)
        if content_type is not None:
            data, fields = body_params(data, content_type, limit)
            params.update(fields)
        if not data:
            export_values(params, 1, 1)  # an image_url, or unknown parameters: say so
            raise ApiError(400, "The image is empty (0 bytes).", "invalid_file")
        width, height = self.dimensions(data)
        options, fmt = options_for(params, width, height, request.default_format)
        roi = roi_box(params["roi"], width, height) if params.get("roi", "").strip() else None
        with self.budget.hold(width * height):
            loaded = self.read(data)
            batch, prep = self.remover.prepare(loaded)
            with self.infer_lock:
                raw, found = self.remover.infer_checked(batch)
            del batch
            result = self.remover.finish(loaded, raw, {"preprocess": prep}, guard=found)
            from .compose import compose_array
            from .output import FORMATS

            alpha = result.alpha
            if roi is not None:  # remove.bg: nothing outside the region is foreground
                x0, y0, x1, y1 = roi
                alpha = np.zeros_like(alpha)
                alpha[y0:y1, x0:x1] = result.alpha[y0:y1, x0:x1]
            pixels = compose_array(result.image.rgb, alpha, options)
            foreground = foreground_box(alpha, options, pixels.shape[1], pixels.shape[0])
            metadata = result.image.metadata
            precision = result.precision
            del result, loaded, raw
            out = io.BytesIO()
            FORMATS[fmt].encode(out, pixels, FORMATS[fmt], None, options, metadata)
            height_out, width_out = pixels.shape[:2]
        return Output(
            out.getvalue(), CONTENT_TYPES[fmt], width_out, height_out, foreground, precision
        )

    def dimensions(self, data: bytes) -> tuple[int, int]:
        """The image's size from its header, refusing images over the megapixel limit."""
        from .imaging import MAX_MEGAPIXELS_ENV, probe

        try:
            # The allow-listed decoders only, chosen by the signature: an EPS or a PDF is
            # refused here, never handed to a plugin that would run Ghostscript.
            _, width, height = probe(data, name="the uploaded image")
        except ImageReadError as exc:
            raise ApiError(400, exc.message, "invalid_file", exc.fix) from None
        megapixels = width * height / 1e6
        if megapixels > self.max_megapixels:
            raise ApiError(
                413,
                f"The image is {width}×{height}, {megapixels:.3g} megapixels: over this "
                f"server's limit of {self.max_megapixels:g} megapixels, which protects "
                "against decompression bombs.",
                "image_too_large",
                "Send a smaller image; a server operator can raise the limit with "
                f"--max-megapixels or {MAX_MEGAPIXELS_ENV}.",
            )
        return width, height

    def read(self, data: bytes):
        """Decode as the command line does (the same reader, through a file)."""
        import tempfile

        from .imaging import read_image

        fd, name = tempfile.mkstemp(prefix="bgremover-serve-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            try:
                return read_image(name, self.max_megapixels)
            except ImageReadError as exc:
                message = exc.message.replace(name, "the uploaded image")
                raise ApiError(400, message, "invalid_file", exc.fix) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(name)


# -- metrics --------------------------------------------------------------------------


@dataclass
class Metrics:
    requests: dict[tuple[str, int], int] = field(default_factory=dict)
    buckets: dict[str, list[int]] = field(default_factory=dict)
    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        with self.lock:
            key = (endpoint, status)
            self.requests[key] = self.requests.get(key, 0) + 1
            counts = self.buckets.setdefault(endpoint, [0] * len(HISTOGRAM_BUCKETS))
            for i, bound in enumerate(HISTOGRAM_BUCKETS):
                if seconds <= bound:
                    counts[i] += 1
            self.sums[endpoint] = self.sums.get(endpoint, 0.0) + seconds
            self.counts[endpoint] = self.counts.get(endpoint, 0) + 1

    def text(self, engine: Engine) -> str:
        lines = [
            "# HELP bgremover_requests_total Requests answered, by endpoint and status.",
            "# TYPE bgremover_requests_total counter",
        ]
        with self.lock:
            for (endpoint, status), n in sorted(self.requests.items()):
                lines.append(
                    f'bgremover_requests_total{{endpoint="{endpoint}",status="{status}"}} {n}'
                )
            lines += [
                "# HELP bgremover_request_seconds Time from request to response.",
                "# TYPE bgremover_request_seconds histogram",
            ]
            name = "bgremover_request_seconds"
            for endpoint, counts in sorted(self.buckets.items()):
                label = f'endpoint="{endpoint}"'
                for bound, n in zip(HISTOGRAM_BUCKETS, counts, strict=True):
                    lines.append(f'{name}_bucket{{{label},le="{bound}"}} {n}')
                total = self.counts[endpoint]
                lines.append(f'{name}_bucket{{{label},le="+Inf"}} {total}')
                lines.append(f"{name}_sum{{{label}}} {self.sums[endpoint]:.6f}")
                lines.append(f"{name}_count{{{label}}} {total}")
            in_flight = self.in_flight
        lines += [
            "# HELP bgremover_queue_depth Admitted requests waiting for a worker.",
            "# TYPE bgremover_queue_depth gauge",
            f"bgremover_queue_depth {engine.queue_depth}",
            "# HELP bgremover_in_flight Requests being read, waiting or processed.",
            "# TYPE bgremover_in_flight gauge",
            f"bgremover_in_flight {in_flight}",
            "# HELP bgremover_workers Worker threads that run the engine.",
            "# TYPE bgremover_workers gauge",
            f"bgremover_workers {engine.workers}",
            "# HELP process_resident_memory_bytes Resident memory size in bytes.",
            "# TYPE process_resident_memory_bytes gauge",
            f"process_resident_memory_bytes {rss_bytes()}",
        ]
        return "\n".join(lines) + "\n"


def rss_bytes() -> int:
    """This process's resident memory (Linux: now; elsewhere: the peak)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak if sys.platform == "darwin" else peak * 1024)


# -- the app --------------------------------------------------------------------------


@dataclass
class Settings:
    api_key: str | None
    max_body: int
    timeout: float
    model: str
    precision: str
    providers: tuple[str, ...]


class State:
    def __init__(self, engine: Engine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings
        self.metrics = Metrics()
        self.draining = False


#: What is read and dropped of a refused request's body before answering, so that a
#: client still sending reads the answer instead of a reset connection: at most this
#: many bytes, for at most this many seconds (a client that trickles its body is answered
#: all the same), then the answer and the connection closed.
DISCARD_LIMIT = 256 * 1024 * 1024  # a client sending fast is read to its end
DISCARD_SECONDS = 2.0
REMOVEBG = "/v1.0/removebg"


class Body:
    """A request's body as read so far: whether reading began and whether it ended."""

    def __init__(self, request: Any) -> None:
        self.request = request
        self.started = False
        self.complete = False

    async def chunks(self) -> Any:
        self.started = True
        async for chunk in self.request.stream():
            yield chunk
        self.complete = True

    async def read(self, limit: int) -> bytes:
        """The body, read in chunks; 413 as soon as it passes ``limit`` bytes."""
        parts: list[bytes] = []
        size = 0
        async for chunk in self.chunks():
            size += len(chunk)
            if size > limit:
                parts.clear()
                raise too_large(limit)
            parts.append(chunk)
        return b"".join(parts)

    async def discard(self) -> None:
        """Read what the client is still sending, within DISCARD_LIMIT and DISCARD_SECONDS.

        Nothing is read of a client that waits for ``100 Continue`` before sending: it
        gets the answer instead of the go-ahead."""
        from starlette.requests import ClientDisconnect

        if self.complete:
            return
        if not self.started and "100-continue" in self.request.headers.get("expect", "").lower():
            return

        async def drain() -> None:
            seen = 0
            async for chunk in self.chunks():
                seen += len(chunk)
                if seen > DISCARD_LIMIT:
                    return

        with contextlib.suppress(asyncio.TimeoutError, ClientDisconnect):
            await asyncio.wait_for(drain(), DISCARD_SECONDS)


def too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        f"The request body is over this server's limit of {limit / 1e6:g} MB.",
        "file_too_large",
        "Send a smaller file; a server operator can raise the limit with --max-body-mb.",
    )


def removebg_status(exc: ApiError) -> ApiError:
    """The answer remove.bg gives where bgremover's own endpoint says otherwise: 403 for
    a missing or wrong key, 400 for a file or an image over the limits."""
    status = {401: 403, 413: 400}.get(exc.status, exc.status)
    if status == exc.status:
        return exc
    return ApiError(status, exc.title, exc.code, exc.detail, exc.headers)


def create_app(state: State):
    from fastapi import FastAPI
    from fastapi import Request as HttpRequest
    from fastapi.responses import JSONResponse, PlainTextResponse, Response
    from starlette.exceptions import HTTPException
    from starlette.requests import ClientDisconnect

    app = FastAPI(title="bgremover", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.bgremover = state
    settings, engine, metrics = state.settings, state.engine, state.metrics

    def error_response(exc: ApiError) -> Response:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(HTTPException)
    async def http_error(request: HttpRequest, exc: HTTPException) -> Response:
        """Unknown paths and methods, in remove.bg's errors shape like every other answer."""
        title = {404: "Not found.", 405: "Method not allowed."}.get(exc.status_code, exc.detail)
        return error_response(
            ApiError(
                exc.status_code,
                f"{title} ({request.method} {request.url.path})",
                "not_found" if exc.status_code == 404 else "method_not_allowed",
                f"This server answers POST {REMOVEBG}, POST /api/remove, GET /healthz and "
                "GET /metrics.",
                getattr(exc, "headers", None),
            )
        )

    def check_key(request: HttpRequest) -> None:
        if settings.api_key is None:
            return
        given = request.headers.get("x-api-key")
        if given is None:
            raise ApiError(
                401, "Missing API key.", "auth_failed", "Send the key in the X-Api-Key header."
            )
        if not hmac.compare_digest(given.encode(), settings.api_key.encode()):
            raise ApiError(401, "Invalid API key.", "auth_failed", "Check the X-Api-Key header.")

    def rate_headers() -> dict[str, str]:
        """remove.bg's rate-limit headers, for this server's limit: requests at once."""
        return {
            "X-RateLimit-Limit": str(engine.capacity),
            "X-RateLimit-Remaining": str(engine.free),
            "X-RateLimit-Reset": str(int(time.time()) + 1),
        }

    def answer(output: Output, wants_json: bool) -> Response:
        left, top, width, height = output.foreground
        headers = {
            "X-Type": "other",
            "X-Width": str(output.width),
            "X-Height": str(output.height),
            "X-Foreground-Top": str(top),
            "X-Foreground-Left": str(left),
            "X-Foreground-Width": str(width),
            "X-Foreground-Height": str(height),
            "X-Credits-Charged": "0",
            "X-Precision": output.precision,
            **rate_headers(),
        }
        if not wants_json:
            return Response(output.body, media_type=output.media_type, headers=headers)
        data = {
            "result_b64": base64.b64encode(output.body).decode("ascii"),
            "foreground_top": top,
            "foreground_left": left,
            "foreground_width": width,
            "foreground_height": height,
        }
        return JSONResponse({"data": data}, headers=headers)

    async def handle(
        request: HttpRequest, endpoint: str, params: Mapping[str, str], default_format: str
    ) -> Response:
        start = time.perf_counter()
        status = 500
        admitted = False
        body = Body(request)
        with metrics.lock:
            metrics.in_flight += 1
        try:
            try:
                check_key(request)
                if state.draining:
                    raise ApiError(
                        503,
                        "The server is shutting down.",
                        "shutting_down",
                        "Retry in a moment (against another instance or after restart).",
                        {"Retry-After": "5"},
                    )
                if not engine.admit():
                    raise ApiError(
                        429,
                        f"The server is busy: {engine.capacity} requests are being processed "
                        "or waiting.",
                        "rate_limit_exceeded",
                        "Retry after the number of seconds in Retry-After.",
                        {"Retry-After": "1"},
                    )
                admitted = True
                deadline = start + settings.timeout
                declared = request.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > settings.max_body:
                    raise too_large(settings.max_body)  # before reading (or a 100 Continue)
                try:
                    data = await asyncio.wait_for(body.read(settings.max_body), settings.timeout)
                except asyncio.TimeoutError:
                    raise ApiError(
                        408,
                        f"The upload took longer than this server's limit of "
                        f"{settings.timeout:g} seconds.",
                        "request_timeout",
                        "Send the file over a faster connection, or a smaller file.",
                    ) from None
                form = request.headers.get("content-type", "") if endpoint == REMOVEBG else None
                future = engine.submit(
                    Request(data, params, default_format), form, settings.max_body
                )
                del data
                future.add_done_callback(lambda _: engine.release())
                admitted = False  # released when the work ends, whatever the client does
                try:
                    output = await asyncio.wait_for(
                        asyncio.shield(asyncio.wrap_future(future)),
                        max(0.0, deadline - time.perf_counter()),
                    )
                except asyncio.TimeoutError:
                    future.cancel()
                    raise ApiError(
                        503,
                        f"The image took longer than this server's limit of "
                        f"{settings.timeout:g} seconds.",
                        "timeout",
                        "Send a smaller image, or retry when the server is less busy.",
                        {"Retry-After": "5"},
                    ) from None
                status = 200
                accept = request.headers.get("accept", "").lower()
                return answer(output, endpoint == REMOVEBG and "application/json" in accept)
            except ApiError as exc:
                if endpoint == REMOVEBG:
                    exc = removebg_status(exc)
                status = exc.status
                await body.discard()
                response = error_response(exc)
                response.headers.update(rate_headers())
                if not body.complete:
                    response.headers["Connection"] = "close"  # the rest is not read
                return response
            except BgRemoverError as exc:
                status = 400 if isinstance(exc, (ImageReadError, UsageError)) else 500
                return error_response(ApiError(status, exc.message, "processing_failed", exc.fix))
            except ClientDisconnect:
                status = 499  # the client went away; nobody reads the answer
                return Response(status_code=400)
        except Exception:
            log.exception("Unexpected error on %s", endpoint)
            status = 500
            return error_response(
                ApiError(
                    500,
                    "Unexpected server error; it is logged.",
                    "internal_error",
                    "Please report it with the server's log.",
                )
            )
        finally:
            if admitted:
                engine.release()
            with metrics.lock:
                metrics.in_flight -= 1
            metrics.observe(endpoint, status, time.perf_counter() - start)

    @app.post(REMOVEBG)
    async def removebg(request: HttpRequest) -> Response:
        query = dict(request.query_params)
        return await handle(request, REMOVEBG, query, "auto")

    @app.post("/api/remove")
    async def remove(request: HttpRequest) -> Response:
        params = dict(request.query_params)
        if "format" not in params:
            params["format"] = "png"
        return await handle(request, "/api/remove", params, "png")

    @app.get("/v1.0/account")
    async def account(request: HttpRequest) -> Response:
        """remove.bg's account and credits: none here, said in remove.bg's errors shape."""
        try:
            check_key(request)
        except ApiError as exc:
            return error_response(removebg_status(exc))
        return error_response(
            ApiError(
                404,
                "This server has no accounts or credits: every request is free.",
                "not_supported",
                "bgremover serve runs on your own machine; X-Credits-Charged is always 0.",
            )
        )

    @app.get("/healthz")
    async def healthz() -> Response:
        body = {
            "status": "shutting down" if state.draining else "ok",
            "model": settings.model,
            "precision": settings.precision,
            "providers": list(settings.providers),
            "workers": engine.workers,
            "queue": engine.capacity - engine.workers,
        }
        return JSONResponse(body, status_code=503 if state.draining else 200)

    @app.get("/metrics")
    async def metrics_endpoint(request: HttpRequest) -> Response:
        try:
            check_key(request)
        except ApiError as exc:
            return error_response(exc)
        return PlainTextResponse(
            metrics.text(engine), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    return app


def cmd_serve(args: Any) -> int:
    """``bgremover serve``: check the options, load the model, serve until SIGTERM."""
    try:
        import fastapi  # noqa: F401
        import python_multipart  # noqa: F401
        import uvicorn
    except ImportError as exc:
        raise UsageError(
            f"bgremover serve needs FastAPI and uvicorn, which are not installed ({exc}).",
            fix="Install them with: pip install 'bgremover[serve]'",
        ) from None
    from .batch import DEFAULT_PIXELS_IN_FLIGHT, default_finishers
    from .imaging import MAX_MEGAPIXELS_ENV, default_max_megapixels
    from .pipeline import EngineConfig, Remover

    api_key = api_key_for(args.host, args.api_key)
    if args.max_body_mb <= 0 or args.timeout <= 0 or args.queue < 0:
        raise UsageError("--max-body-mb and --timeout are above 0, --queue is 0 or more.")
    workers = args.workers or default_finishers() + 1
    config = EngineConfig(
        args.model, args.precision, args.providers, args.threads, args.refine,
        int8_guard=args.int8_guard,
    )  # fmt: skip
    remover = Remover.from_config(config)
    info = remover.load()  # a model that cannot load fails here, before listening
    max_mp = args.max_megapixels
    if max_mp is None:
        max_mp = (
            default_max_megapixels() if MAX_MEGAPIXELS_ENV in os.environ else memory_megapixels()
        )
    engine = Engine(remover, workers, args.queue, max_mp, DEFAULT_PIXELS_IN_FLIGHT)
    settings = Settings(
        api_key,
        int(args.max_body_mb * 1e6),
        float(args.timeout),
        remover.spec.name,
        remover.precision,
        tuple(info.active),
    )
    state = State(engine, settings)
    app = create_app(state)

    class Server(uvicorn.Server):
        """uvicorn's server, that turns requests away with 503 once told to stop and
        exits 0 after draining (uvicorn re-raises the signal otherwise)."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            if state.draining:  # a second signal: stop listening now
                super().handle_exit(sig, frame)
                return
            # Keep listening while the admitted requests finish, so that requests that
            # arrive meanwhile get 503 with Retry-After instead of a refused connection.
            state.draining = True
            threading.Thread(
                target=self.drain, args=(sig, frame), name="bgremover-drain", daemon=True
            ).start()

        def drain(self, sig: int, frame: Any) -> None:
            deadline = time.monotonic() + settings.timeout + 5
            while engine.busy and time.monotonic() < deadline:
                time.sleep(0.05)
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            signals = (signal.SIGINT, signal.SIGTERM)
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in signals}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    uv_config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=int(settings.timeout) + 5,
        lifespan="off",
    )
    server = Server(uv_config)
    print(
        f"bgremover: serving {remover.spec.name} ({remover.precision}, "
        f"{', '.join(info.active)}) on {url_of(args.host, args.port)} with {engine.workers} "
        f"workers, {args.queue} waiting at most, images up to {max_mp:g} megapixels"
        + ("; API key required" if api_key else ""),
        flush=True,
    )
    try:
        server.run()
    finally:
        engine.pool.shutdown(wait=True, cancel_futures=True)
    if not server.started:
        raise UsageError(
            f"Could not listen on {args.host}:{args.port} (see the message above).",
            fix="Choose another --port, or stop the program that uses it.",
        )
    print("bgremover: stopped", flush=True)
    return 0
