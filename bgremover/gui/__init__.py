"""The desktop app (PySide6). Everything Qt lives in this sub-package."""

from __future__ import annotations

from .app import main

__all__ = ["main"]
