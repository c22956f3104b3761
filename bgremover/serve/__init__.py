"""The HTTP API: ``bgremover serve``.

A FastAPI app on uvicorn with one :class:`~bgremover.engine.pipeline.Remover` (one ONNX
Runtime session) made at start and shared by every request:

- ``POST /v1.0/removebg``: remove.bg's API, as its real clients use it. The image
  comes as a multipart file ``image_file`` (with or without a file name), as a field
  ``image_file_b64`` (base64; line breaks and a ``data:`` prefix allowed), in a
  multipart or urlencoded form or a JSON object (JSON booleans and numbers read as
  remove.bg reads them). Parameters and what they become, through the same
  :func:`~bgremover.export.presets.options_from` that reads the command line's options:

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

Work is bounded: a request's headers have a time limit; its body is read first, in
chunks up to the size limit, under a minimum rate and a deadline, holding no processing
slot; then it is admitted (or refused with 429), at most ``workers + queue`` at once;
every image the options would make is held to the megapixel limit before work starts;
``workers`` threads run the engine (decode, model input, finish, compose, encode),
with one inference at a time on the shared session (which uses every core), as
the batch pipeline does, and the pixels being decoded or finished are held under
the batch's pixel budget. Nothing of the engine runs on the event loop. On SIGTERM
(or Ctrl+C) the server keeps listening while the admitted requests finish, answers
503 with Retry-After to requests that arrive meanwhile, then exits 0 (a second signal
stops it listening at once).

The package, one module per job: :mod:`.config` (settings, limits, the key rule),
:mod:`.api_error` (remove.bg's errors), :mod:`.params` (remove.bg's parameters as
export options), :mod:`.multipart` (the body's forms), :mod:`.pool` (the engine's
threads), :mod:`.prometheus` (``/metrics``), :mod:`.app` (the endpoints),
:mod:`.protocol` (HTTP with a time limit on headers) and :mod:`.command` (``bgremover
serve``). Nothing here imports FastAPI or uvicorn until the server starts, so the
names below import without the ``serve`` extra; only
:mod:`.config` is imported with the package (the command line reads its defaults while
building its parser), the other modules when one of their names is first used.
"""

from typing import TYPE_CHECKING, Any

from .config import (
    API_KEY_ENV,
    BYTES_PER_PIXEL,
    DEFAULT_MAX_BODY_MB,
    DEFAULT_TIMEOUT,
    MEMORY_SHARE,
    Settings,
    api_key_for,
    is_loopback,
    memory_megapixels,
    url_of,
)

if TYPE_CHECKING:
    from .api_error import ApiError, removebg_status, too_large
    from .app import DISCARD_LIMIT, DISCARD_SECONDS, REMOVEBG, Body, State, create_app
    from .command import cmd_serve
    from .multipart import MAX_PART_HEADER, body_params, decode_b64, form_fields, json_fields
    from .params import (
        CONTENT_TYPES,
        NO_OP_VALUES,
        PARAMETERS,
        SIZES,
        UNSUPPORTED,
        crop_margin,
        export_values,
        options_for,
        roi_box,
    )
    from .pool import Engine, Output, Request, foreground_box
    from .prometheus import HISTOGRAM_BUCKETS, Metrics, rss_bytes

#: The module of each name exported lazily (numpy, asyncio and the engine load with them).
_LAZY = {
    **dict.fromkeys(("ApiError", "removebg_status", "too_large"), "api_error"),
    **dict.fromkeys(
        ("DISCARD_LIMIT", "DISCARD_SECONDS", "REMOVEBG", "Body", "State", "create_app"), "app"
    ),
    "cmd_serve": "command",
    **dict.fromkeys(
        ("MAX_PART_HEADER", "body_params", "decode_b64", "form_fields", "json_fields"),
        "multipart",
    ),
    **dict.fromkeys(
        (
            "CONTENT_TYPES",
            "NO_OP_VALUES",
            "PARAMETERS",
            "SIZES",
            "UNSUPPORTED",
            "crop_margin",
            "export_values",
            "options_for",
            "roi_box",
        ),
        "params",
    ),
    **dict.fromkeys(("Engine", "Output", "Request", "foreground_box"), "pool"),
    **dict.fromkeys(("HISTOGRAM_BUCKETS", "Metrics", "rss_bytes"), "prometheus"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [
    "API_KEY_ENV",
    "BYTES_PER_PIXEL",
    "CONTENT_TYPES",
    "DEFAULT_MAX_BODY_MB",
    "DEFAULT_TIMEOUT",
    "DISCARD_LIMIT",
    "DISCARD_SECONDS",
    "HISTOGRAM_BUCKETS",
    "MAX_PART_HEADER",
    "MEMORY_SHARE",
    "NO_OP_VALUES",
    "PARAMETERS",
    "REMOVEBG",
    "SIZES",
    "UNSUPPORTED",
    "ApiError",
    "Body",
    "Engine",
    "Metrics",
    "Output",
    "Request",
    "Settings",
    "State",
    "api_key_for",
    "body_params",
    "cmd_serve",
    "create_app",
    "crop_margin",
    "decode_b64",
    "export_values",
    "foreground_box",
    "form_fields",
    "is_loopback",
    "json_fields",
    "memory_megapixels",
    "options_for",
    "removebg_status",
    "roi_box",
    "rss_bytes",
    "too_large",
    "url_of",
]
