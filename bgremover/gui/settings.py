"""The app's settings, remembered between runs with QSettings."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from PySide6.QtCore import QSettings

from ..compose import ComposeOptions, parse_color
from ..errors import UsageError
from ..pipeline import EngineConfig


@dataclass(frozen=True)
class Settings:
    # The engine's fields, with the engine's defaults (see engine()).
    model: str = EngineConfig.model
    precision: str = EngineConfig.precision
    providers: str = EngineConfig.providers
    threads: int = EngineConfig.threads
    output_format: str = "png"
    #: "" for a transparent background, else a colour such as "#ffffff".
    background: str = ""
    mask_only: bool = False
    refine: bool = EngineConfig.refine
    decontaminate: bool = False
    last_folder: str = ""
    last_output_folder: str = ""

    def engine(self) -> EngineConfig:
        """The engine part of the settings (the fields both dataclasses share)."""
        mine = {f.name for f in fields(self)}
        return EngineConfig(
            **{f.name: getattr(self, f.name) for f in fields(EngineConfig) if f.name in mine}
        )

    def compose(self, mask_only: bool | None = None) -> ComposeOptions:
        """What the outputs look like (background, mask only, decontamination): what the
        Result view shows and Save writes. ``mask_only`` overrides the setting (Save Mask)."""
        return ComposeOptions(
            mask_only=self.mask_only if mask_only is None else mask_only,
            background=parse_color(self.background) if self.background else None,
            decontaminate=self.decontaminate,
        )


def qsettings() -> QSettings:
    # INI files everywhere: readable, and tests can redirect them with QSettings.setPath.
    return QSettings(
        QSettings.Format.IniFormat, QSettings.Scope.UserScope, "bgremover", "bgremover"
    )


def load_settings() -> Settings:
    store = qsettings()
    values = {}
    defaults = Settings()
    for f in fields(Settings):
        default = getattr(defaults, f.name)
        raw = store.value(f"settings/{f.name}", default)
        try:
            if isinstance(default, bool):
                value = raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes")
            elif isinstance(default, int):
                value = int(raw)
            else:
                value = str(raw)
        except (TypeError, ValueError):
            value = default  # a hand-edited or corrupt value: fall back quietly
        values[f.name] = value
    try:
        parse_color(values["background"] or "white")
    except UsageError:
        values["background"] = defaults.background  # a hand-edited colour that means nothing
    return replace(defaults, **values)


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
    items = [raw] if isinstance(raw, str) else list(raw or [])
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
