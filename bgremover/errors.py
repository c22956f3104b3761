"""The exception family of bgremover.

Every message says what happened, why (expected vs got where it helps) and what
the user can do about it. The CLI prints ``str(error)``; the GUI shows it in a
dialog. Anything that is not a ``BgRemoverError`` is a bug and is shown with its
traceback.
"""

from __future__ import annotations


class BgRemoverError(Exception):
    """Base class: an expected failure with a message meant for the user."""


class ModelError(BgRemoverError):
    """A model is unknown, cannot be obtained, or cannot be loaded."""


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
