"""The exception family of bgremover.

Every message says what happened, why (expected vs got where it helps) and what
the user can do about it. The CLI prints ``str(error)``: the message and its
``fix``, in the command line's terms. Each error has a :class:`ErrorKind`, which
a front end with words of its own reads: the app words each kind in its own terms
(its menus, ``gui/wording.py``), on top of :attr:`BgRemoverError.app_fix`, advice
that names no option and no menu, and keeps a library's raw words out of the
message, behind "Show Details". The engine never names the app's menus. Anything
that is not a ``BgRemoverError`` is a bug and is shown with its traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from enum import Enum
from typing import Any


class ErrorKind(str, Enum):
    """What went wrong, as a front end tells failures apart (a stable, machine-readable
    value): each error class has its own, and a raise may name a finer one."""

    FAILURE = "failure"
    MODEL = "model"
    #: A model file of the user's own that is not there.
    MODEL_FILE_MISSING = "model-file-missing"
    #: A model file whose signature fits several families (the user says which).
    MODEL_FAMILY_AMBIGUOUS = "model-family-ambiguous"
    #: Every source of a registry model failed (offline, moved): trying again may work.
    MODEL_UNAVAILABLE = "model-unavailable"
    CANCELLED = "cancelled"
    IMAGE_UNREADABLE = "image-unreadable"
    IMAGE_WRITE = "image-write"
    DISK_FULL = "disk-full"
    INFERENCE = "inference"
    USAGE = "usage"
    EDITS = "edits"


class BgRemoverError(Exception):
    """Base class: an expected failure with a message meant for the user.

    ``message`` says what happened and why in plain words; ``fix`` what to do, in the
    engine's and the command line's terms (options, commands); ``app_fix`` the same
    advice for a user without a command line, naming no option and no menu (``fix``
    when not given: advice that names neither); ``technical`` the underlying library's
    own words (ONNX Runtime's, the image decoder's), shown in brackets on the command
    line and behind Details in the app. ``kind`` is the class's :class:`ErrorKind`
    unless the raise names a finer one.
    """

    kind: ErrorKind = ErrorKind.FAILURE

    def __init__(
        self,
        message: str,
        *,
        fix: str = "",
        app_fix: str | None = None,
        technical: str = "",
        kind: ErrorKind | None = None,
    ) -> None:
        self.message = message
        self.fix = fix
        self.app_fix = fix if app_fix is None else app_fix
        self.technical = technical
        if kind is not None:
            self.kind = kind
        text = message + (f" ({technical})" if technical else "")
        super().__init__(text + (f"\n{fix}" if fix else ""))

    @property
    def app_message(self) -> str:
        """The message without the command line: no options, no library's raw text (the
        app adds its own words for the kind, ``gui/wording.py``)."""
        return self.message + (f"\n\n{self.app_fix}" if self.app_fix else "")


class ModelError(BgRemoverError):
    """A model is unknown, cannot be obtained, or cannot be loaded."""

    kind = ErrorKind.MODEL


class AmbiguousFamilyError(ModelError):
    """A model file's signature fits several families that prepare photos differently;
    ``candidates`` names them, so a front end can ask which one it is."""

    kind = ErrorKind.MODEL_FAMILY_AMBIGUOUS

    def __init__(self, message: str, candidates: tuple[str, ...], **kw: Any) -> None:
        super().__init__(message, **kw)
        self.candidates = candidates


class ModelUnavailableError(ModelError):
    """Every source of a registry model failed; the message lists each one."""

    kind = ErrorKind.MODEL_UNAVAILABLE


class ImageReadError(BgRemoverError):
    """An input file is not an image we can read."""

    kind = ErrorKind.IMAGE_UNREADABLE


class ImageWriteError(BgRemoverError):
    """An output could not be written (permissions, disk full, bad folder)."""

    kind = ErrorKind.IMAGE_WRITE


class DiskFullError(ImageWriteError):
    """The disk is full: a batch stops here instead of failing every remaining file."""

    kind = ErrorKind.DISK_FULL


class InferenceError(BgRemoverError):
    """ONNX Runtime failed while running a model."""

    kind = ErrorKind.INFERENCE


class UsageError(BgRemoverError):
    """Invalid options or arguments (bad colour, unknown provider, ...)."""

    kind = ErrorKind.USAGE


class EditsError(BgRemoverError):
    """A file of mask edits that cannot be read, or that does not fit the image."""

    kind = ErrorKind.EDITS


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
