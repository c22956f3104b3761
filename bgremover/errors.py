"""The exception family of bgremover.

Every message says what happened, why (expected vs got where it helps) and what
the user can do about it. The CLI prints ``str(error)``; the app shows
:attr:`BgRemoverError.app_message`, which tells the fix in the app's own terms
(menus, not command-line options) and keeps a library's raw words out of the
message, behind "Show Details". Anything that is not a ``BgRemoverError`` is a
bug and is shown with its traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class BgRemoverError(Exception):
    """Base class: an expected failure with a message meant for the user.

    ``message`` says what happened and why in plain words; ``fix`` what to do, as a
    command-line user does it; ``app_fix`` the same for the app's user (``fix`` when
    not given: advice that names no option); ``technical`` the underlying library's
    own words (ONNX Runtime's, the image decoder's), shown in brackets on the command
    line and behind Details in the app.
    """

    def __init__(
        self, message: str, *, fix: str = "", app_fix: str | None = None, technical: str = ""
    ) -> None:
        self.message = message
        self.fix = fix
        self.app_fix = fix if app_fix is None else app_fix
        self.technical = technical
        text = message + (f" ({technical})" if technical else "")
        super().__init__(text + (f"\n{fix}" if fix else ""))

    @property
    def app_message(self) -> str:
        """The message for the app: no command-line options, no library's raw text."""
        return self.message + (f"\n\n{self.app_fix}" if self.app_fix else "")


class ModelError(BgRemoverError):
    """A model is unknown, cannot be obtained, or cannot be loaded."""


class AmbiguousFamilyError(ModelError):
    """A model file's signature fits several families that prepare photos differently;
    ``candidates`` names them, so a front end can ask which one it is."""

    def __init__(self, message: str, candidates: tuple[str, ...], **kw: str) -> None:
        super().__init__(message, **kw)
        self.candidates = candidates


class ModelUnavailableError(ModelError):
    """Every source of a registry model failed; the message lists each one."""


class ImageReadError(BgRemoverError):
    """An input file is not an image we can read."""


class ImageWriteError(BgRemoverError):
    """An output could not be written (permissions, disk full, bad folder)."""


class DiskFullError(ImageWriteError):
    """The disk is full: a batch stops here instead of failing every remaining file."""


class OutputConflictError(ImageWriteError):
    """An output path would overwrite an input or another output."""


class InferenceError(BgRemoverError):
    """ONNX Runtime failed while running a model."""


class UsageError(BgRemoverError):
    """Invalid options or arguments (bad colour, unknown provider, ...)."""


class EditsError(BgRemoverError):
    """A file of mask edits that cannot be read, or that does not fit the image."""


def refuse_unknown(what: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Raise :class:`TypeError` for the first name of ``given`` that is not ``known``.

    The message names it, the closest known name when one is close, and every known name,
    so a misspelt key (``non_comercial``) is refused in words instead of ignored. For the
    keys a programmer writes (registry entries, keyword settings), not for user input.
    """
    names = list(known)
    for name in given:
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{what}: unknown key {name!r}{hint}. Known keys: {', '.join(names)}.")
