"""Export settings by name: the presets users expect, and their own, as small files.

A preset is a table of export options spelled as on the command line
(``background = "white"``, ``canvas = "2000x2000"``, ``margin = "5%"``,
``format = "jpeg"``): :func:`options_from` turns such a table into
:class:`~bgremover.compose.ComposeOptions` and an output format, so a preset, the
command line's flags and the app's Export panel are read by the same code. User
presets are TOML (or JSON) files in the presets folder (:func:`presets_dir`), one
per preset, named after it. Built-in presets are never changed: a user preset saved
under a built-in's name is used instead of it until it is removed (:func:`remove_preset`),
and saving over any existing preset has to say so (``replace=True``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from .atomic import write_atomically
from .compose import (
    ComposeOptions,
    Shadow,
    parse_blur,
    parse_canvas,
    parse_color,
    parse_length,
    parse_outline,
)
from .errors import UsageError
from .output import FORMATS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: The options a preset may set, in the order they are listed.
KEYS = (
    "background",
    "background_fit",
    "crop",
    "margin",
    "canvas",
    "position",
    "max_size",
    "shadow",
    "outline",
    "decontaminate",
    "format",
    "quality",
    "lossless",
    "strip_metadata",
)

#: The presets bgremover ships: what marketplaces, messengers and the web ask for.
BUILTIN: dict[str, dict[str, Any]] = {
    "product-white-square": {
        "description": "product photo: white, square 2000 px, 5 % margin, soft shadow, JPEG",
        "background": "white",
        "crop": True,
        "canvas": "2000x2000",
        "margin": "5%",
        "shadow": True,
        "format": "jpeg",
        "quality": 92,
    },
    "sticker": {
        "description": "sticker: transparent, cropped, 8 px white outline, PNG",
        "crop": True,
        "margin": "12px",
        "outline": "8:white",
        "format": "png",
    },
    "portrait-blur": {
        "description": "portrait on its own background, blurred, JPEG",
        "background": "blur",
        "format": "jpeg",
    },
    "web": {
        "description": "web image: WebP, long side at most 1600 px",
        "format": "webp",
        "max_size": 1600,
    },
}

#: What a preset's name may be (it names its file).
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
_NAME = re.compile(f"^{NAME_PATTERN}$")


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    #: The options it sets, spelled as on the command line (see KEYS).
    values: Mapping[str, Any]
    #: The file it was read from; None for a built-in preset.
    path: Path | None = None

    @property
    def builtin(self) -> bool:
        return self.path is None

    @property
    def shadows_builtin(self) -> bool:
        """A user preset used instead of the built-in of its name."""
        return not self.builtin and self.name in BUILTIN

    def summary(self) -> str:
        """The options it sets, as one line: ``background=white crop canvas=2000x2000``."""
        parts = []
        for key in KEYS:
            if key not in self.values:
                continue
            value = self.values[key]
            if value is True:
                parts.append(key)
            elif isinstance(value, list):
                parts.append(f"{key}={'+'.join(map(str, value))}")
            elif value is not False:
                parts.append(f"{key}={value}")
        return " ".join(parts)


def presets_dir() -> Path:
    """Where user presets live: bgremover's folder in the user's configuration folder
    (``BGREMOVER_PRESETS`` overrides it)."""
    override = os.environ.get("BGREMOVER_PRESETS")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_config_dir("bgremover", appauthor=False)) / "presets"


def builtin_presets() -> dict[str, Preset]:
    """The presets bgremover ships, by name."""
    return {
        name: Preset(name, str(values["description"]), _without_description(values))
        for name, values in BUILTIN.items()
    }


def _user_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [
        path
        for path in sorted(folder.iterdir())
        if path.suffix.lower() in (".toml", ".json") and not path.name.startswith(".")
    ]


def load_presets(folder: Path | None = None) -> dict[str, Preset]:
    """Built-in presets, then the user's (a user file is used instead of a built-in of
    its name, which comes back when the file is removed).

    A file that cannot be read or holds a bad option is a :class:`UsageError` naming it.
    """
    found = builtin_presets()
    for path in _user_files(presets_dir() if folder is None else folder):
        preset = read_preset(path)
        found[preset.name] = preset
    return found


def get_preset(name: str, folder: Path | None = None) -> Preset:
    presets = load_presets(folder)
    try:
        return presets[name]
    except KeyError:
        raise UsageError(
            f"No preset called {name!r}.",
            fix=f"Use one of: {', '.join(presets)} (see `bgremover presets`).",
        ) from None


def read_preset(path: Path) -> Preset:
    """A user preset file: TOML or JSON, a table of options (see KEYS) and a description."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(
            f"The preset file {path} cannot be read: {exc}.",
            fix="Correct it or remove it from the presets folder.",
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"The preset file {path} is not a table of options.")
    values = _without_description(data)
    try:
        options_from(values)
    except UsageError as exc:
        raise UsageError(f"The preset file {path}: {exc.message}", fix=exc.fix) from None
    return Preset(path.stem, str(data.get("description", "")), values, path)


def save_preset(
    name: str,
    values: Mapping[str, Any],
    description: str = "",
    folder: Path | None = None,
    replace: bool = False,
) -> Path:
    """Write a user preset as TOML (atomically); the file's path.

    A name that is already a preset's (the user's or a built-in's) is refused unless
    ``replace``: the caller asks first. A built-in itself is never changed: the file
    saved under its name is used instead of it until :func:`remove_preset`.
    """
    if not _NAME.match(name):
        raise UsageError(
            f"{name!r} cannot be a preset's name.",
            fix="Use letters, digits, '-', '_' or '.', up to 64 characters.",
        )
    options_from(values)  # refuse what could not be read back
    folder = presets_dir() if folder is None else folder
    if not replace and (name in BUILTIN or _files_named(folder, name)):
        what = "a built-in preset" if name in BUILTIN else "one of your presets"
        raise UsageError(
            f"{name!r} is already {what}: not saved.",
            fix="Choose another name, or confirm that yours replaces it.",
        )
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"description = {_toml(description)}"] if description else []
    lines += [f"{key} = {_toml(values[key])}" for key in KEYS if key in values]
    path = folder / f"{name}.toml"
    text = "\n".join(lines) + "\n"
    write_atomically(path, lambda fh: fh.write(text.encode("utf-8")))
    return path


def _files_named(folder: Path, name: str) -> list[Path]:
    return [path for path in _user_files(folder) if path.stem == name]


def remove_preset(name: str, folder: Path | None = None) -> list[Path]:
    """Delete the user's preset ``name`` (its files); the files removed. A built-in of
    that name is used again. A name that is only built in, or no preset's, is refused."""
    folder = presets_dir() if folder is None else folder
    paths = _files_named(folder, name)
    if not paths:
        if name in BUILTIN:
            raise UsageError(
                f"{name!r} is a built-in preset: it cannot be removed.",
                fix="Only your own presets can be removed (`bgremover presets` marks them).",
            )
        raise UsageError(
            f"You have no preset called {name!r}.",
            fix="`bgremover presets` lists your presets with their files.",
        )
    for path in paths:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise UsageError(
                f"The preset file {path} could not be removed: {exc.strerror}.",
                fix="Check that the presets folder can be written.",
            ) from None
    return paths


def _toml(value: Any) -> str:
    """A TOML value for the option types presets hold (JSON's string escapes are TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))


def _without_description(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k != "description"}


def options_from(
    values: Mapping[str, Any], base: ComposeOptions | None = None
) -> tuple[ComposeOptions, str | None]:
    """Export options and an output format (None: not set) from option values spelled
    as on the command line, over ``base``. Unknown keys and bad values are a
    :class:`UsageError` that says what is allowed."""
    unknown = [k for k in values if k not in KEYS]
    if unknown:
        raise UsageError(
            f"Unknown export option {unknown[0]!r}.", fix=f"Use these: {', '.join(KEYS)}."
        )
    changes: dict[str, Any] = {}
    if "background" in values:
        changes.update(parse_background(values["background"]))
    if "background_fit" in values:
        changes["background_fit"] = str(values["background_fit"])
    if "crop" in values:
        changes["crop"] = _flag(values["crop"], "crop")
    if "margin" in values:
        changes["margin"] = parse_length(str(values["margin"]))
    if "canvas" in values:
        if values["canvas"] in (None, "", "keep", False):
            changes["canvas"] = changes["aspect"] = None
        else:
            changes["canvas"], changes["aspect"] = parse_canvas(str(values["canvas"]))
    if "position" in values:
        changes["position"] = str(values["position"])
    if "max_size" in values:
        changes["max_size"] = _number(values["max_size"], "max_size", int) or None
    if "shadow" in values:
        changes["shadow"] = parse_shadow(values["shadow"])
    if "outline" in values:
        outline = values["outline"]
        changes["outline"] = None if outline in (None, "", False) else parse_outline(str(outline))
    for key in ("decontaminate", "lossless", "strip_metadata"):
        if key in values:
            changes[key] = _flag(values[key], key)
    if "quality" in values:
        changes["quality"] = _number(values["quality"], "quality", int)
    fmt = None
    if "format" in values:
        fmt = str(values["format"]).lower()
        if fmt == "jpg":
            fmt = "jpeg"
        if fmt not in FORMATS:
            raise UsageError(f"Unknown format {fmt!r}.", fix=f"Use one of: {', '.join(FORMATS)}.")
    return replace(base or ComposeOptions(), **changes), fmt


def parse_background(value: Any) -> dict[str, Any]:
    """A background: "transparent", a colour, an image file, "blur[:STRENGTH]", or a list
    of a colour and an image (the colour shows in a fitted image's bars)."""
    items = value if isinstance(value, list) else [value]
    found: dict[str, Any] = {"background": None, "background_image": None, "blur": None}
    parsed: Any
    for item in items:
        text = str(item).strip()
        if text.lower() in ("", "none", "transparent"):
            continue
        strength = parse_blur(text)
        if strength is not None:
            key, parsed = "blur", strength
        elif _looks_like_file(text):
            if not Path(text).is_file():
                raise UsageError(
                    f"The background image {text} does not exist.",
                    fix="Give the path of an image file, a colour, or blur.",
                )
            key, parsed = "background_image", str(Path(text).resolve())
        else:
            try:
                key, parsed = "background", parse_color(text)
            except UsageError:
                raise UsageError(
                    f"Not a colour, an image file or blur: {text!r}.",
                    fix="Give a colour (white, #rrggbb, r,g,b), an image file, blur or "
                    "blur:STRENGTH, or transparent.",
                ) from None
        if found[key] is not None:
            raise UsageError(f"Two backgrounds of one kind: {items}.", fix="Give one of each.")
        found[key] = parsed
    return found


def _looks_like_file(text: str) -> bool:
    from .imaging import is_image_name

    return Path(text).is_file() or is_image_name(Path(text)) or os.sep in text or "/" in text


def parse_shadow(value: Any) -> Shadow | None:
    """True (the soft default), False, or "opacity=0.6,blur=0.03,dx=0,dy=0.02,color=black"."""
    if value in (None, False, "", "none", "false", "off"):
        return None
    if value is True or str(value).lower() in ("true", "on", "soft"):
        return Shadow()
    changes: dict[str, Any] = {}
    names = {f.name for f in fields(Shadow)}
    for part in str(value).split(","):
        key, _, text = part.partition("=")
        key = key.strip().lower()
        if key not in names or not text.strip():
            raise UsageError(
                f"Not a shadow: {value!r}.",
                fix="Write --shadow alone, or like opacity=0.6,blur=0.03,dx=0.01,dy=0.02.",
            )
        changes[key] = parse_color(text) if key == "color" else _number(text, key, float)
    return replace(Shadow(), **changes)


def values_of(options: ComposeOptions, fmt: str | None = None) -> dict[str, Any]:
    """The option values (as :func:`options_from` reads them) that make ``options``:
    what the app saves as a preset."""
    values: dict[str, Any] = {}
    backgrounds: list[str] = []
    if options.background is not None:
        backgrounds.append("#{:02x}{:02x}{:02x}{:02x}".format(*options.background))
    if options.background_image is not None:
        backgrounds.append(options.background_image)
    if options.blur is not None:
        backgrounds.append(f"blur:{options.blur:g}")
    if backgrounds:
        values["background"] = backgrounds[0] if len(backgrounds) == 1 else backgrounds
    defaults = ComposeOptions()
    if options.background_fit != defaults.background_fit:
        values["background_fit"] = options.background_fit
    if options.crop:
        values["crop"] = True
    if options.margin.value:
        values["margin"] = str(options.margin)
    if options.canvas is not None:
        values["canvas"] = f"{options.canvas[0]}x{options.canvas[1]}"
    if options.aspect is not None:
        values["canvas"] = f"{options.aspect[0]}:{options.aspect[1]}"
    if options.position != defaults.position:
        values["position"] = options.position
    if options.max_size is not None:
        values["max_size"] = options.max_size
    if options.shadow is not None:
        s = options.shadow
        values["shadow"] = (
            True
            if s == Shadow()
            else (
                f"dx={s.dx:g},dy={s.dy:g},blur={s.blur:g},opacity={s.opacity:g},"
                "color=#{:02x}{:02x}{:02x}".format(*s.color[:3])
            )
        )
    if options.outline is not None:
        o = options.outline
        values["outline"] = f"{o.width:g}:#{o.color[0]:02x}{o.color[1]:02x}{o.color[2]:02x}"
    for key in ("decontaminate", "lossless", "strip_metadata"):
        if getattr(options, key):
            values[key] = True
    if options.quality is not None:
        values["quality"] = options.quality
    if fmt is not None:
        values["format"] = fmt
    return values


def _flag(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise UsageError(f"{key} is on or off, not {value!r}.", fix="Write true or false.")


def _number(value: Any, key: str, kind: type) -> Any:
    try:
        if isinstance(value, bool):
            raise ValueError
        return kind(value)
    except (TypeError, ValueError):
        raise UsageError(f"{key} is a number, not {value!r}.") from None


def check_export(options: ComposeOptions, fmt: str) -> None:
    """Refuse, before any work, an output its format cannot hold (transparency in JPEG)."""
    out = FORMATS[fmt]
    if options.channels == 4 and not out.alpha:
        raise UsageError(
            f"{out.label} cannot keep transparency, and this output would have it "
            "(no background, or a see-through one).",
            fix="Add a background (--background white, an image, or blur), or write "
            "PNG, WebP or TIFF (--format png).",
        )
