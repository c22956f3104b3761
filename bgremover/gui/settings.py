"""The app's settings, remembered between runs with QSettings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings

from ..engine.pipeline import EngineConfig
from ..errors import BgRemoverError, UsageError
from ..export.compose import ComposeOptions, background_image
from ..export.options import EXPORT_OPTIONS, OPTIONS, SchemaSwitches, parse_bool, parse_length
from ..export.output import FORMATS
from ..export.presets import check_export, options_from, parse_format
from ..network.families import FAMILIES
from ..network.models import REGISTRY

#: The settings that say what an output looks like and how it is encoded, each the app's
#: field of an export option (bgremover.export.options: the Export panel's, and decontaminate,
#: the settings pane's), in the records' order, spelled as presets and the command line
#: spell them (see :meth:`Settings.values`).
EXPORT_FIELDS = tuple(name for option in EXPORT_OPTIONS for name in option.settings)


@dataclass(frozen=True)
class Settings(SchemaSwitches):
    """What the app remembers. The export fields' defaults and meaning are their option
    records' (bgremover.export.options); each switch of ``options.SWITCHES`` (crop, lossless...)
    is a bool field of its name, inherited from ``SchemaSwitches``. Give the fields by keyword."""

    # The engine's fields, with the engine's defaults (see engine()).
    model: str = EngineConfig.model
    precision: str = EngineConfig.precision
    int8_guard: bool = EngineConfig.int8_guard
    providers: str = EngineConfig.providers
    threads: int = EngineConfig.threads
    #: For a model file: the family the user said it belongs to ("" read from the file).
    family: str = ""
    output_format: str = OPTIONS["format"].default
    #: "" for a transparent background, a colour such as "#ffffff", "blur" or
    #: "blur:STRENGTH" (the photo's own background, blurred).
    background: str = ""
    #: An image file under the subject ("" none); the colour shows in its bars (fit).
    background_image: str = ""
    background_fit: str = OPTIONS["background_fit"].default
    #: Space around the subject with crop or a canvas: "" none, "30px", "5%".
    margin: str = ""
    #: "" keeps the photo's frame; "2000x2000" a canvas size; "1:1" an aspect ratio.
    canvas: str = ""
    position: str = OPTIONS["position"].default
    #: The output's longest side at most (0: as it comes).
    max_size: int = 0
    shadow: bool = False
    #: "" none, else "WIDTH:COLOUR" such as "8:white".
    outline: str = ""
    #: JPEG / WebP quality 1-100 (0: the format's default).
    quality: int = 0
    #: The preset chosen last ("" none: the options were set one by one).
    preset: str = ""
    mask_only: bool = False
    refine: bool = EngineConfig.refine
    #: Where photos were opened from last, and where the last batch wrote.
    last_folder: str = ""
    last_output_folder: str = ""
    #: Where the last cutout, mask or edits file was saved (Save's dialog opens there).
    last_save_folder: str = ""
    #: Touch-up's overlay tint: a colour's name (gui/overlay.py), "" automatic (the one
    #: that stands out from the photo).
    overlay_color: str = ""

    def engine(self) -> EngineConfig:
        """The engine part of the settings (the fields both dataclasses share)."""
        mine = {f.name for f in fields(self)}
        return EngineConfig(
            **{f.name: getattr(self, f.name) for f in fields(EngineConfig) if f.name in mine}
        )

    def values(self) -> dict[str, Any]:
        """The export settings as option values (:data:`bgremover.export.presets.KEYS`), read by
        :func:`bgremover.export.presets.options_from` like a preset or the command line's flags;
        each option's record says how (a margin only counts with a crop or a canvas, as
        the panel greys it out otherwise); unset ones are left out."""
        made = {o.key: o.from_settings(self) for o in EXPORT_OPTIONS if o.from_settings}
        return {key: value for key, value in made.items() if value is not None}

    def export_problem(self) -> UsageError | None:
        """Why the export settings cannot be written as they are (None: they can): an
        option that makes no image, or a format that cannot hold the output (JPEG with
        transparency)."""
        try:
            options, fmt = options_from(self.values())
        except UsageError as exc:
            return exc
        unreadable = background_problem(self.background_image)
        if unreadable:
            return UsageError(unreadable, fix="Choose another image (JPEG, PNG, WebP, TIFF…).")
        try:
            if not self.mask_only:
                check_export(options, fmt or self.output_format, app=True)
        except UsageError as exc:
            return exc
        return None

    def compose(self, mask_only: bool | None = None) -> ComposeOptions:
        """What the outputs look like (every export option, mask only, decontamination):
        what the Result view shows and Save writes. ``mask_only`` overrides the setting
        (Save Mask). Options that cannot make an image fall back, one at a time, to
        their defaults (the Export panel says what is wrong)."""
        values = self.values()
        values.pop("format")
        if background_problem(self.background_image):
            # An image that cannot be read: the colour alone (the panel says why).
            colour = self.background
            values.pop("background", None)
            if colour:
                values["background"] = colour
        base = ComposeOptions(mask_only=self.mask_only if mask_only is None else mask_only)
        try:
            return options_from(values, base)[0]
        except UsageError:
            pass
        for key in list(values):
            fewer = {k: v for k, v in values.items() if k != key}
            try:
                return options_from(fewer, base)[0]
            except UsageError:
                continue
        return options_from({"decontaminate": self.decontaminate}, base)[0]


def export_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """The export settings that option ``values`` (a preset's) make: the fields they name,
    the others at their defaults (choosing a preset sets all of them). Each value is read
    by its option record, as :func:`bgremover.export.presets.options_from` reads it."""
    defaults = Settings()
    found: dict[str, Any] = {name: getattr(defaults, name) for name in EXPORT_FIELDS}
    for option in EXPORT_OPTIONS:
        if option.key not in values:
            continue
        if option.key == "format":  # read against the format table
            found["output_format"] = parse_format(values["format"])
        elif option.to_settings is not None:
            found.update(option.to_settings(values[option.key]))
    return found


def qsettings() -> QSettings:
    # INI files everywhere: readable, and tests can redirect them with QSettings.setPath.
    return QSettings(
        QSettings.Format.IniFormat, QSettings.Scope.UserScope, "bgremover", "bgremover"
    )


def load_settings() -> Settings:
    store = qsettings()
    values: dict[str, Any] = {}
    defaults = Settings()
    for f in fields(Settings):
        default = getattr(defaults, f.name)
        # What the INI file holds: a string as a rule, the default when absent.
        raw: Any = store.value(f"settings/{f.name}", default)
        value: bool | int | str
        try:
            if isinstance(default, bool):
                value = parse_bool(raw, f.name)
            elif isinstance(default, int):
                value = int(raw)
            else:
                value = str(raw)
        except (TypeError, ValueError, UsageError):
            value = default  # a hand-edited or corrupt value: fall back quietly
        values[f.name] = value
    if values["output_format"] not in FORMATS:
        values["output_format"] = defaults.output_format
    if values["family"] not in FAMILIES or values["model"] in REGISTRY:
        values["family"] = defaults.family  # a registry model has its own
    loaded = replace(defaults, **values)
    # A hand-edited export value that means nothing (a colour, a canvas, a missing
    # background image) falls back to its default; the others are kept.
    for name in EXPORT_FIELDS:
        if not _usable(replace(defaults, **{name: getattr(loaded, name)}), name):
            loaded = replace(loaded, **{name: getattr(defaults, name)})
    return loaded


def background_problem(path: str) -> str:
    """Why the background image ``path`` cannot be used, in words ("" when it can, or
    when there is none). It is read once while the file stays the same."""
    if not path:
        return ""
    try:
        background_image(path)
    except (BgRemoverError, OSError) as exc:
        reason = getattr(exc, "message", "") or getattr(exc, "strerror", "") or str(exc)
        return f"The background image {Path(path).name} cannot be read: {reason}"
    return ""


def _usable(settings: Settings, name: str) -> bool:
    """Whether export field ``name`` of ``settings`` (the defaults but for it) can be read."""
    value = getattr(settings, name)
    try:
        if name == "margin":
            parse_length(value or "0")
        elif name in OPTIONS and OPTIONS[name].choices:
            return value in OPTIONS[name].choices
        else:
            options_from(settings.values())
    except UsageError:
        return False
    return True


def save_settings(settings: Settings) -> None:
    store = qsettings()
    for name, value in asdict(settings).items():
        store.setValue(f"settings/{name}", value)
    store.sync()


#: How many files and folders File ▸ Open Recent lists.
RECENT_LIMIT = 10


def recent_paths() -> list[str]:
    """Files and folders opened lately, newest first (File ▸ Open Recent)."""
    raw = qsettings().value("recent/paths", [])
    items = [raw] if isinstance(raw, str) else list(raw) if isinstance(raw, list | tuple) else []
    return [str(item) for item in items if item][:RECENT_LIMIT]


def remember_recent(paths: list[str]) -> list[str]:
    """Put ``paths`` at the top of the recent list (once each); the new list."""
    fresh = list(dict.fromkeys(paths))
    items = fresh + [p for p in recent_paths() if p not in fresh]
    _store_recent(items[:RECENT_LIMIT])
    return items[:RECENT_LIMIT]


def forget_recent(path: str | None = None) -> list[str]:
    """Drop ``path`` (or every entry, with None) from the recent list; the new list."""
    items = [] if path is None else [p for p in recent_paths() if p != path]
    _store_recent(items)
    return items


def _store_recent(items: list[str]) -> None:
    store = qsettings()
    store.setValue("recent/paths", items)
    store.sync()
