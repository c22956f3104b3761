"""The app's own words for the engine's failures: where in the app the fix is.

The engine's errors (``errors.py``) say what happened, and advise in words that name no
command-line option and no menu (``app_fix``); each has an :class:`ErrorKind`. Here the
kinds the app can help with get a sentence naming the app's menus, and every error the
app shows goes through :func:`app_message`.

The menu names are the real actions' texts, registered by the window that owns them
(:func:`use_menus`), so a renamed action renames its mention in every message: they
cannot drift apart. Until a window has registered its menus (an error at start-up, a
job runner without a window), no menu is named and the engine's advice stands alone.
Registration happens on the GUI thread; the names are plain strings, read from any
thread (the job runner words a failure on its worker thread).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import BgRemoverError, ErrorKind

if TYPE_CHECKING:  # Qt is imported when menus are read, not with the module: the app
    # shows a start-up failure (app.py) before it may load Qt, after ONNX Runtime.
    from PySide6.QtGui import QAction

#: Where the fix for each kind the app can help with is in the app: a template whose
#: ``{names}`` are the menu items that :func:`use_menus` registers (a new name here is a
#: new keyword there; a test checks that every one names a real menu item).
APP_ADVICE: dict[ErrorKind, str] = {
    ErrorKind.MODEL_UNAVAILABLE: (
        "{reprocess} tries again; {model_file} uses a model file you have."
    ),
    ErrorKind.MODEL_FILE_MISSING: (
        "{model_file} chooses another file; the built-in models are in Settings."
    ),
    ErrorKind.MODEL_FAMILY_AMBIGUOUS: "{model_file} asks for the family when you choose it.",
}


@dataclass(frozen=True)
class MenuItem:
    """A menu item as the user finds it: its menu's title, its text and its shortcut,
    all without the ``&`` of their mnemonics."""

    menu: str
    text: str
    shortcut: str = ""

    def __str__(self) -> str:
        where = f"{self.menu} ▸ {self.text}" if self.menu else self.text
        return where + (f" ({self.shortcut})" if self.shortcut else "")


#: The menu items the app's advice names, by the keyword :func:`use_menus` was given.
_MENUS: dict[str, MenuItem] = {}


def plain(text: str) -> str:
    """A menu's or an action's text as shown: the mnemonics' ``&`` gone, ``&&`` an ``&``."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&")


def menu_item(action: QAction) -> MenuItem:
    """Where ``action`` is: the title of the (first) menu that holds it, its text and its
    shortcut as the menu shows it."""
    from PySide6.QtGui import QKeySequence
    from PySide6.QtWidgets import QMenu

    menus = [m for m in action.associatedObjects() if isinstance(m, QMenu)]
    keys = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
    return MenuItem(plain(menus[0].title()) if menus else "", plain(action.text()), keys)


def use_menus(**actions: QAction) -> None:
    """Register the actions the app's advice names (``reprocess=..., model_file=...``),
    each under the name :data:`APP_ADVICE` uses; called by the window once its menus
    are built. The texts are read now, on the GUI thread."""
    _MENUS.update({name: menu_item(action) for name, action in actions.items()})


def app_words(template: str) -> str:
    """``template`` with its ``{names}`` the menu items :func:`use_menus` registered under
    them ("{reprocess} tries again." -> "Edit ▸ Reprocess All with Current Settings
    (Ctrl+R) tries again."); "" while one of them is not registered (no window yet), so
    that a text naming a menu item is left out rather than naming a stale one."""
    try:
        return template.format_map(_MENUS)
    except KeyError:
        return ""


def app_advice(error: BgRemoverError) -> str:
    """The app's words for where the fix for ``error`` is in the app; "" when the app
    has none for its kind, or no window has registered the menus they name."""
    template = APP_ADVICE.get(error.kind)
    return "" if template is None else app_words(template)


def app_message(error: BgRemoverError) -> str:
    """What the app shows for ``error``: its message, the engine's advice that names no
    option, and the app's own words for its kind. No library's raw words (those go
    behind Show Details)."""
    advice = " ".join(part for part in (error.app_fix, app_advice(error)) if part)
    return error.message + (f"\n\n{advice}" if advice else "")
