"""remove.bg's parameters read as bgremover's export options: which names are read, the
defaults clients send that change nothing, the names refused, and each value's parsing
into the options :func:`~bgremover.export.presets.options_from` takes. The parameters that are
export options are named by the options' records (``http`` in :mod:`bgremover.export.options`),
and their values are handed to the records' parsers, as a preset's or a flag's are: an
option added as a record with ``http`` is read here with nothing else written. Only what is
remove.bg's own is read first, by the option's reader in :data:`READERS`."""

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import UsageError
from ..export.options import EXPORT_OPTIONS, parse_bool
from .api_error import ApiError

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
#: remove.bg's parameters that are bgremover's export options: name -> option key.
OPTION_PARAMETERS = {o.http: o.key for o in EXPORT_OPTIONS if o.http}
#: remove.bg's parameters that bgremover reads (the image fields aside): the export
#: options', then those of the server alone.
PARAMETERS = (
    *OPTION_PARAMETERS,
    "channels",
    "size",
    "roi",
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
    # The level of the type classification only names what X-Type reports.
    "type_level": (("none", "1", "2", "latest"), "type_level is none, 1, 2 or latest"),
    "scale": (("original", "100%"), "the subject is never rescaled inside its image"),
    "position": (("original",), "the subject is never moved inside its image"),
    # remove.bg makes only car windows see-through; bgremover's edges keep their partial
    # alpha (hair, fur) either way, as remove.bg's do for every other subject.
    "semitransparency": (("true", "false", "1", "0"), "semitransparency is true or false"),
    "shadow_method": (("legacy",), "bgremover draws its own soft drop shadow (legacy)"),
}
#: remove.bg's foreground types. The server runs its one model on every photo, so each
#: is accepted and runs as ``auto``; an answer to another type says so in a header
#: (X-Type-Applied), and X-Type reports every subject as "other".
TYPES = (
    "auto", "person", "product", "animal", "car", "car_interior", "car_part",
    "transportation", "graphics", "other",
)  # fmt: skip
#: remove.bg parameters bgremover does not implement at all: refused by name, with a reason.
UNSUPPORTED = {
    "image_url": "this server does not fetch URLs (URL fetching is off); send the image "
    "itself as image_file, image_file_b64 or the raw body of /api/remove",
    "bg_image_url": "background images from URLs are not supported (no outbound requests)",
    "bg_image_file": "background image files are not supported by the server",
}


CONTENT_TYPES = {
    "png": "image/png",
    "jpeg": "image/jpeg",
    "webp": "image/webp",
    # remove.bg's ZIP: color.jpg (the output's colour) and alpha.png (its alpha), which
    # its documents recommend for large images.
    "zip": "application/zip",
}
_HEX = re.compile(r"^(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")
#: What an HTTP colour may be made of: hex digits, a name, CSS's rgb()/hsl() forms or
#: "r,g,b[,a]". No path separator, dot-dot or tilde can pass, and nothing of it is ever
#: looked up on disk (it is read by the colour parser alone, never the CLI's background
#: parser, which also takes image files).
_COLOUR = re.compile(r"^[#A-Za-z0-9(),.%\s]{1,64}$")
#: remove.bg's largest crop_margin: 500 px, or 50 % of the subject's box.
MAX_CROP_MARGIN_PX = 500
MAX_CROP_MARGIN_PERCENT = 50


def shown(value: str, limit: int = 40) -> str:
    """A client's value as an answer quotes it: at most ``limit`` characters."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


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
    kind = params.get("type", "auto").strip().lower() or "auto"
    if kind not in TYPES:
        raise ApiError(
            400,
            f"Unknown type {shown(params['type'])}.",
            "invalid_parameter",
            f"Use one of remove.bg's: {', '.join(TYPES)}.",
        )
    values: dict[str, Any] = {}
    channels = params.get("channels", "rgba").strip().lower()
    if channels not in ("rgba", "alpha"):
        raise ApiError(400, f"channels is rgba or alpha, not {channels!r}.", "invalid_channels")
    for name, key in OPTION_PARAMETERS.items():
        if key in READERS:
            values.update(READERS[key](params))
        elif name in params:
            values[key] = params[name]  # read by the record's parser (options_from)
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
    fmt = values.get("format") or params.get("format", "auto").strip().lower()
    if fmt == "zip" and channels == "alpha":
        raise ApiError(
            400,
            "format=zip holds the colour and the alpha of a cutout, not a mask alone.",
            "invalid_format",
            "Send channels=rgba with format=zip, or format=png with channels=alpha.",
        )
    return values, fmt, channels == "alpha"


def _background(params: Mapping[str, str]) -> dict[str, Any]:
    """``bg_color``: a colour by HTTP's rules (:func:`http_colour`), never a file."""
    text = params.get("bg_color", "")
    return {"background": http_colour(text)} if text.strip() else {}


def _margin(params: Mapping[str, str]) -> dict[str, Any]:
    """``crop_margin`` (:func:`crop_margin`), which remove.bg applies only to a crop and
    ignores otherwise."""
    text = params.get("crop_margin", "")
    if not text.strip():
        return {}
    margin = crop_margin(text)
    return {"margin": margin} if _on(params, "crop") else {}


def _format(params: Mapping[str, str]) -> dict[str, Any]:
    """``format``: auto (the server's choice) and zip (colour and alpha apart) are the
    server's alone; any other is a format it serves, by name or ending."""
    fmt = params.get("format", "auto").strip().lower()
    if fmt in ("auto", "zip"):
        return {}
    from ..export.presets import parse_format

    try:
        fmt = parse_format(fmt)
    except UsageError:
        fmt = ""
    if fmt not in CONTENT_TYPES:
        raise ApiError(
            400,
            f"Unknown format {params['format']!r}.",
            "invalid_format",
            "Use auto, png, jpg, webp or zip.",
        )
    return {"format": fmt}


def http_colour(text: str) -> tuple[int, int, int, int]:
    """remove.bg's ``bg_color`` as a colour, by HTTP's rules: hex with or without ``#``
    (``81d4fa``, ``fff``, ``81d4fa80``), a colour name (``green``), ``rgb(...)`` or
    ``r,g,b[,a]``. Never a file: the value is parsed as a colour and nothing else."""
    from ..export.options import parse_color

    value = text.strip()
    bare = value.removeprefix("#")
    if _HEX.match(bare):
        value = f"#{bare}"
    try:
        if not _COLOUR.match(value):
            raise UsageError("not made of a colour's characters")
        return parse_color(value)
    except UsageError:
        raise ApiError(
            400,
            f"bg_color={shown(text)} is not a colour.",
            "invalid_parameter",
            "Send a hex colour (81d4fa, fff, 81d4fa80) or a colour name (green).",
        ) from None


def _on(params: Mapping[str, str], name: str) -> bool:
    """An on/off parameter (false when absent), read as every on/off option is."""
    try:
        return parse_bool(params.get(name, "false"), name)
    except UsageError as exc:
        raise ApiError(400, exc.message, "invalid_parameter", exc.fix) from None


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
    from ..export.options import parse_length

    try:
        spelled = {parse_length(part) for part in parts}
    except UsageError as exc:
        raise ApiError(400, exc.message, "invalid_parameter", exc.fix) from None
    if any(
        length.value > (MAX_CROP_MARGIN_PERCENT if length.percent else MAX_CROP_MARGIN_PX)
        for length in spelled
    ):
        raise ApiError(
            400,
            f"crop_margin={shown(text)} is over remove.bg's limit of "
            f"{MAX_CROP_MARGIN_PX} px or {MAX_CROP_MARGIN_PERCENT}%.",
            "invalid_parameter",
            f"Send a margin of at most {MAX_CROP_MARGIN_PX}px or {MAX_CROP_MARGIN_PERCENT}%.",
        )
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
    if not _on(params, "add_shadow"):
        return {}
    opacity = params.get("shadow_opacity", "").strip()
    if not opacity:
        return {"shadow": True}
    try:
        share = int(opacity) / 100
        if not 0 <= share <= 1:
            raise ValueError
    except (ValueError, OverflowError):  # OverflowError: 400 digits are no float
        raise ApiError(
            400, f"shadow_opacity is 0 to 100, not {shown(opacity)}.", "invalid_parameter"
        ) from None
    return {"shadow": f"opacity={share:g}"}


#: The export options whose remove.bg parameters mean more than the option's value, by the
#: option's key: each reader takes the request's parameters (it runs whether its parameter
#: was sent or not, so a companion such as shadow_type is checked alone too) and gives
#: option values. Every other option's parameter is its record's to read.
READERS: dict[str, Callable[[Mapping[str, str]], dict[str, Any]]] = {
    "background": _background,
    "margin": _margin,
    "shadow": _shadow_values,
    "format": _format,
}


def options_for(params: Mapping[str, str], width: int, height: int, default_format: str):
    """ComposeOptions and the output format for remove.bg's ``params`` on a photo of
    ``width`` x ``height``; bad values are 400 with options_from's own words."""
    from ..export.compose import ComposeOptions
    from ..export.presets import check_export, options_from

    values, fmt, mask = export_values(params, width, height)
    try:
        options, chosen = options_from(values, ComposeOptions(mask_only=mask))
        if fmt == "zip":
            return options, fmt  # colour and alpha apart: any output fits
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
