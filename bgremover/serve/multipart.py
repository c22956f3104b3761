"""A request body as the image and its fields: a multipart form, an urlencoded form or a
JSON object (remove.bg takes all three), ``image_file`` or ``image_file_b64``."""

import base64
import binascii
import json
import re
from typing import Any
from urllib.parse import unquote_plus, unquote_to_bytes

from .api_error import ApiError

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
    except RecursionError:  # '[' * 100000: the parser gives up on its own stack
        raise ApiError(
            400,
            "The JSON body is nested too deeply.",
            "invalid_form",
            "Send one JSON object whose fields are strings, numbers or booleans.",
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
