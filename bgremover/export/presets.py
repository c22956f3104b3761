"""Export settings by name: the presets users expect, and their own, as small files.

A preset is a table of export options spelled as on the command line
(``background = "white"``, ``canvas = "2000x2000"``, ``margin = "5%"``,
``format = "jpeg"``): :func:`options_from` turns such a table into
:class:`~bgremover.export.compose.ComposeOptions` and an output format with the parsers of
the options' records (:mod:`bgremover.export.options`), so a preset, the command line's flags,
the server's parameters and the app's Export panel are read by the same code. User
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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..files.atomic import write_atomically
from .compose import ComposeOptions
from .options import EXPORT_OPTIONS, KEYS
from .output import FORMATS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

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
    #: The options it sets, spelled as on the command line (see :data:`KEYS`, the keys
    #: of :data:`bgremover.export.options.EXPORT_OPTIONS`).
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
    as on the command line, over ``base``; each value is read by its record's parser
    (:data:`bgremover.export.options.EXPORT_OPTIONS`). Unknown keys and bad values are a
    :class:`UsageError` that says what is allowed."""
    unknown = [k for k in values if k not in KEYS]
    if unknown:
        raise UsageError(
            f"Unknown export option {unknown[0]!r}.", fix=f"Use these: {', '.join(KEYS)}."
        )
    changes: dict[str, Any] = {}
    for option in EXPORT_OPTIONS:
        if option.key in values and option.parse is not None:
            changes.update(option.parse(values[option.key]))
    fmt = parse_format(values["format"]) if "format" in values else None
    return replace(base or ComposeOptions(), **changes), fmt


def parse_format(value: Any) -> str:
    """An output format by its name or by the ending of its files, any case ("jpg" and
    "JPEG" are "jpeg"); an unknown one is a :class:`UsageError` naming the formats."""
    spelled = str(value).strip().lower()
    for out in FORMATS.values():
        if spelled == out.name or f".{spelled}" in out.extensions:
            return out.name
    raise UsageError(f"Unknown format {spelled!r}.", fix=f"Use one of: {', '.join(FORMATS)}.")


def values_of(options: ComposeOptions, fmt: str | None = None) -> dict[str, Any]:
    """The option values (as :func:`options_from` reads them) that make ``options``:
    what the app saves as a preset."""
    values: dict[str, Any] = {}
    for option in EXPORT_OPTIONS:
        value = option.write(options) if option.write is not None else None
        if value is not None:
            values[option.key] = value
    if fmt is not None:
        values["format"] = fmt
    return values


def check_export(options: ComposeOptions, fmt: str, app: bool = False) -> None:
    """Refuse, before any work, an output its format cannot hold (transparency in JPEG);
    the fix is worded for the command line, or with ``app`` for the app's Export panel."""
    out = FORMATS[fmt]
    if options.channels == 4 and not out.alpha:
        keeping = [f.label for f in FORMATS.values() if f.alpha]
        formats = f"{', '.join(keeping[:-1])} or {keeping[-1]}"
        fix = (
            f"Choose a background (White, a colour, an image or Blur), or the {formats} format."
            if app
            else "Add a background (--background white, an image, or blur), or write "
            f"{formats} (--format png)."
        )
        raise UsageError(
            f"{out.label} cannot keep transparency, and this output would have it "
            "(no background, or a see-through one).",
            fix=fix,
        )
