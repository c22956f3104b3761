"""The app's settings, remembered between runs with QSettings."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from PySide6.QtCore import QSettings

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
    return replace(defaults, **values)


def save_settings(settings: Settings) -> None:
    store = qsettings()
    for name, value in asdict(settings).items():
        store.setValue(f"settings/{name}", value)
    store.sync()
