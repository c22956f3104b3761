"""The HTTP API: ``bgremover serve``.

A FastAPI app on uvicorn with one :class:`~bgremover.pipeline.Remover` (one ONNX
Runtime session) made at start and shared by every request:

- ``POST /v1.0/removebg``: remove.bg's API, for what bgremover supports. The image
  comes as a multipart file ``image_file`` or as a form field ``image_file_b64``
  (base64). Parameters (form fields) and what they become, through the same
  :func:`~bgremover.presets.options_from` that reads the command line's options:

  - ``format``: ``auto`` (the default, as remove.bg's: PNG when the output has
    transparency or is a mask, JPEG otherwise), ``png``, ``jpg``/``jpeg``, ``webp``.
    A JPEG without ``bg_color`` gets a white background, as remove.bg's does.
  - ``channels``: ``rgba`` (the cutout) or ``alpha`` (the mask, ``mask_only``).
  - ``bg_color``: hex without ``#`` (``81d4fa``, ``fff``, ``81d4fa80``) or a colour
    name (``green``): the ``background``.
  - ``crop``: true/false; ``crop_margin``: ``30px``, ``30`` or ``10%`` (the ``margin``
    around the cropped subject; a percentage is of the subject box's long side).
  - ``size``: remove.bg's sizes as pixel counts, applied through ``max_size``
    (the long side, computed per image so that the output holds at most that many
    pixels; never scaled up): ``preview``/``small``/``regular`` 0.25 megapixels,
    ``medium`` 1.5, ``hd`` 4, ``4k`` 10; ``full``, ``50MP`` and ``auto`` keep the
    photo's size (up to the megapixel limit every input has).

  - ``add_shadow``: true adds bgremover's soft drop shadow (``shadow_type`` drop;
    ``shadow_opacity`` 0-100, as remove.bg's).

  remove.bg's other parameters (``type``, ``bg_image_url``, ``roi``, ``scale``, ...)
  and any unknown name are refused with 400, never ignored. ``image_url`` is
  refused too: this server does not fetch URLs (no outbound requests at all); send
  the image itself.
- ``POST /api/remove``: the image as the raw body; the same parameters as query
  parameters (``?format=webp&bg_color=fff``); a PNG cutout by default.
- ``GET /healthz``: ok, model, precision, providers (no key needed).
- ``GET /metrics``: Prometheus text format: requests by endpoint and status, a
  latency histogram, queue depth, requests in flight, resident memory.

Errors are remove.bg's JSON, ``{"errors": [{"title", "code", "detail"}]}``: 400 a bad
parameter or an unreadable image, 401 a missing or wrong ``X-Api-Key``, 408 an upload
slower than the time limit, 413 a body or an image over the limits, 429 the queue is
full (with ``Retry-After``), 503 shutting down or a request over the time limit.

Work is bounded: a request is admitted (or refused with 429) before its body is read,
at most ``workers + queue`` at once; the body is read in chunks up to the size limit;
``workers`` threads run the engine (decode, model input, finish, compose, encode),
with one inference at a time on the shared session (which uses every core), as
the batch pipeline does, and the pixels being decoded or finished are held under
the batch's pixel budget. Nothing of the engine runs on the event loop. On SIGTERM
(or Ctrl+C) the server stops accepting connections, answers 503 to requests that
still arrive, lets the ones in flight finish, and exits 0.
"""

import asyncio
import base64
import binascii
import contextlib
import hmac
import io
import ipaddress
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
from urllib.parse import unquote_plus

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
PARAMETERS = (
    "format",
    "channels",
    "bg_color",
    "crop",
    "crop_margin",
    "size",
    "add_shadow",
    "shadow_type",
    "shadow_opacity",
)
#: remove.bg parameters bgremover does not implement: refused by name, with a reason.
UNSUPPORTED = {
    "image_url": "this server does not fetch URLs (URL fetching is off); send the image "
    "itself as image_file, image_file_b64 or the raw body of /api/remove",
    "type": "bgremover finds the foreground itself; it has no foreground types",
    "type_level": "bgremover has no foreground types",
    "bg_image_url": "background images from URLs are not supported",
    "bg_image_file": "background image files are not supported by the server",
    "scale": "scale is not supported",
    "position": "position is not supported",
    "roi": "regions of interest are not supported",
    "semitransparency": "semitransparency is always on (edges are refined)",
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
    values: dict[str, Any] = {}
    channels = params.get("channels", "rgba").strip().lower()
    if channels not in ("rgba", "alpha"):
        raise ApiError(400, f"channels is rgba or alpha, not {channels!r}.", "invalid_channels")
    if "bg_color" in params and params["bg_color"].strip():
        color = params["bg_color"].strip()
        values["background"] = f"#{color}" if _HEX.match(color) else color
    if "crop" in params:
        values["crop"] = params["crop"]
    if "crop_margin" in params:
        values["margin"] = params["crop_margin"]
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


def form_params(body: bytes, content_type: str, limit: int) -> tuple[bytes, dict[str, str]]:
    """The image bytes and the other fields of a multipart or urlencoded form."""
    from python_multipart.exceptions import FormParserError
    from python_multipart.multipart import create_form_parser

    fields: dict[str, str] = {}
    files: dict[str, bytes] = {}
    duplicate: list[str] = []

    urlencoded = content_type.lower().startswith("application/x-www-form-urlencoded")

    def text(raw: bytes) -> str:
        value = raw.decode("utf-8", "replace")
        return unquote_plus(value) if urlencoded else value  # the parser leaves %xx and +

    def on_field(f: Any) -> None:
        name = text(f.field_name)
        if name in fields:
            duplicate.append(name)
        fields[name] = text(f.value or b"")

    def on_file(f: Any) -> None:
        name = f.field_name.decode("utf-8", "replace")
        handle = f.file_object
        handle.seek(0)
        files[name] = handle.read()

    headers = {"Content-Type": content_type.encode("latin-1"), "Content-Length": b"%d" % len(body)}
    try:
        parser = create_form_parser(
            headers, on_field, on_file, config={"MAX_MEMORY_FILE_SIZE": limit + 1}
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
        raise ApiError(400, f"The field {duplicate[0]!r} is given twice.", "invalid_parameter")
    unknown_files = [name for name in files if name != "image_file"]
    if unknown_files:
        raise ApiError(
            400,
            f"Unknown file field {unknown_files[0]!r}.",
            "unknown_parameter",
            "Send the image as image_file.",
        )
    b64 = fields.pop("image_file_b64", None)
    if "image_file" in files and b64 is not None:
        raise ApiError(400, "Both image_file and image_file_b64 are given.", "invalid_parameter")
    if "image_file" in fields:  # a plain field named image_file: not a file upload
        files["image_file"] = fields.pop("image_file").encode("latin-1", "replace")
    if "image_file" in files:
        return files["image_file"], fields
    if b64 is not None:
        try:
            return base64.b64decode(b64.strip(), validate=True), fields
        except (binascii.Error, ValueError):
            raise ApiError(400, "image_file_b64 is not valid base64.", "invalid_file_b64") from None
    if "image_url" in fields:
        return b"", fields  # refused by name in export_values
    raise ApiError(
        400,
        "No image: the form has neither image_file nor image_file_b64.",
        "missing_source",
        "Send the image as a multipart file named image_file.",
    )


# -- the engine's side ----------------------------------------------------------------


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
            data, fields = form_params(data, content_type, limit)
            params.update(fields)
        if not data:
            export_values(params, 1, 1)  # an image_url, or unknown parameters: say so
            raise ApiError(400, "The image is empty (0 bytes).", "invalid_file")
        width, height = self.dimensions(data)
        options, fmt = options_for(params, width, height, request.default_format)
        with self.budget.hold(width * height):
            loaded = self.read(data)
            batch, prep = self.remover.prepare(loaded)
            with self.infer_lock:
                raw, found = self.remover.infer_checked(batch)
            del batch
            result = self.remover.finish(loaded, raw, {"preprocess": prep}, guard=found)
            from .compose import compose_array
            from .output import FORMATS

            pixels = compose_array(result.image.rgb, result.alpha, options)
            metadata = result.image.metadata
            precision = result.precision
            del result, loaded, raw
            out = io.BytesIO()
            FORMATS[fmt].encode(out, pixels, FORMATS[fmt], None, options, metadata)
            height_out, width_out = pixels.shape[:2]
        return Output(out.getvalue(), CONTENT_TYPES[fmt], width_out, height_out, precision)

    def dimensions(self, data: bytes) -> tuple[int, int]:
        """The image's size from its header, refusing images over the megapixel limit."""
        from PIL import Image, UnidentifiedImageError

        from .imaging import MAX_MEGAPIXELS_ENV

        try:
            with Image.open(io.BytesIO(data)) as img:
                width, height = img.size
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
            raise ApiError(
                400,
                "The upload is not an image bgremover can read.",
                "invalid_file",
                "Send a JPEG, PNG, WebP, TIFF, BMP or GIF file.",
            ) from None
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


#: What is discarded of a refused request's body before answering (so that the client,
#: still sending, reads the answer instead of a reset connection); beyond it, close.
DISCARD_LIMIT = 256 * 1024 * 1024


async def discard(request: Any, already: int = 0) -> None:
    from starlette.requests import ClientDisconnect

    seen = already
    with contextlib.suppress(ClientDisconnect):
        async for chunk in request.stream():
            seen += len(chunk)
            if seen > DISCARD_LIMIT:
                break


async def read_body(request: Any, limit: int) -> bytes:
    """The body, read in chunks; 413 as soon as it passes ``limit`` bytes."""
    declared = request.headers.get("content-length")
    too_large = ApiError(
        413,
        f"The request body is over this server's limit of {limit / 1e6:g} MB.",
        "file_too_large",
        "Send a smaller file; a server operator can raise the limit with --max-body-mb.",
    )
    if declared is not None and declared.isdigit() and int(declared) > limit:
        await discard(request)
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            chunks.clear()
            await discard(request, size)
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(state: State):
    from fastapi import FastAPI
    from fastapi import Request as HttpRequest
    from fastapi.responses import JSONResponse, PlainTextResponse, Response
    from starlette.requests import ClientDisconnect

    app = FastAPI(title="bgremover", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.bgremover = state
    settings, engine, metrics = state.settings, state.engine, state.metrics

    def error_response(exc: ApiError) -> Response:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

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

    async def handle(
        request: HttpRequest, endpoint: str, params: Mapping[str, str], default_format: str
    ) -> Response:
        start = time.perf_counter()
        status = 500
        admitted = False
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
                try:
                    body = await asyncio.wait_for(
                        read_body(request, settings.max_body), settings.timeout
                    )
                except asyncio.TimeoutError:
                    raise ApiError(
                        408,
                        f"The upload took longer than this server's limit of "
                        f"{settings.timeout:g} seconds.",
                        "request_timeout",
                        "Send the file over a faster connection, or a smaller file.",
                    ) from None
                content_type = request.headers.get("content-type", "")
                form = None
                if endpoint == "/v1.0/removebg":
                    form = content_type
                    if not content_type.lower().startswith(
                        ("multipart/form-data", "application/x-www-form-urlencoded")
                    ):
                        raise ApiError(
                            400,
                            "The body is not a form.",
                            "invalid_form",
                            "Send multipart/form-data with the image as image_file.",
                        )
                future = engine.submit(
                    Request(body, params, default_format), form, settings.max_body
                )
                del body
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
                return Response(
                    output.body,
                    media_type=output.media_type,
                    headers={
                        "X-Width": str(output.width),
                        "X-Height": str(output.height),
                        "X-Type": "other",
                        "X-Precision": output.precision,
                    },
                )
            except ApiError as exc:
                if exc.status in (401, 429, 503):
                    await discard(request)
                status = exc.status
                return error_response(exc)
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

    @app.post("/v1.0/removebg")
    async def removebg(request: HttpRequest) -> Response:
        query = dict(request.query_params)
        return await handle(request, "/v1.0/removebg", query, "auto")

    @app.post("/api/remove")
    async def remove(request: HttpRequest) -> Response:
        params = dict(request.query_params)
        if "format" not in params:
            params["format"] = "png"
        return await handle(request, "/api/remove", params, "png")

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
    from .imaging import default_max_megapixels
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
    max_mp = args.max_megapixels if args.max_megapixels is not None else default_max_megapixels()
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
            state.draining = True
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
        f"{', '.join(info.active)}) on http://{args.host}:{args.port} with {engine.workers} "
        f"workers, {args.queue} waiting at most" + ("; API key required" if api_key else ""),
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
