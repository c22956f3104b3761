"""bgremover: remove image backgrounds with U²-Net-family ONNX models.

The package imports fast and without ONNX Runtime or Qt; the engine is loaded on
first use of :class:`Remover`::

    from bgremover import Remover
    result = Remover("u2netp").remove("photo.jpg")
    result.cutout().save("photo.png")
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: The environment variables that switch ONNX Runtime's telemetry off, and their value:
#: ``ORT_DISABLE_TELEMETRY`` is the one ONNX Runtime 1.29+ reads on Linux and macOS (no
#: uploader, device id or event cache is created); ``ORT_TELEMETRY_DISABLED`` is the name
#: later releases read as well. Both are set, so that either release keeps it off.
ONNXRUNTIME_TELEMETRY_OFF = {"ORT_DISABLE_TELEMETRY": "1", "ORT_TELEMETRY_DISABLED": "1"}


def _keep_onnxruntime_telemetry_off() -> None:
    """Switch ONNX Runtime's telemetry off for this process and every process it starts.

    Why here: since 1.29, ONNX Runtime's official wheels send usage events (1DS) to
    Microsoft on Linux and macOS too, write a device id and an event database under
    ``~/.cache/Microsoft/DeveloperTools/`` and a session file in the temp folder, and look
    up their collector's address on their own. bgremover promises no outbound connection
    but the model downloads a user asks for, so that has to be off. ONNX Runtime reads the
    variable once, when its environment is created (on its first import), and latches it:
    set later, it does nothing. Every entry point (the CLI, the app, ``bgremover serve``,
    Ray's workers, ``from bgremover import Remover``) imports this package before it can
    import ONNX Runtime, so this is the one place that is early enough everywhere; and
    child processes (pip, Ray's workers on this machine) inherit ``os.environ``.

    The value is forced, not defaulted: an ``ORT_DISABLE_TELEMETRY=0`` inherited from the
    environment does not switch it back on, since the promise is bgremover's to keep.
    A program that imported ``onnxruntime`` before ``bgremover`` created that environment
    already; bgremover's session module still turns the events off as far as ONNX Runtime
    then allows (``disable_telemetry_events``, see ``session._onnxruntime``).
    """
    os.environ.update(ONNXRUNTIME_TELEMETRY_OFF)


_keep_onnxruntime_telemetry_off()

__all__ = ["ComposeOptions", "Remover", "Result", "__version__"]

if TYPE_CHECKING:
    from .engine.pipeline import ComposeOptions, Remover, Result


def __getattr__(name: str) -> Any:
    # Lazy so that `bgremover --version` and `import bgremover` stay cheap:
    # the pipeline pulls in numpy, Pillow and (on first session) ONNX Runtime.
    if name in ("Remover", "Result", "ComposeOptions"):
        from .engine import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'bgremover' has no attribute {name!r}")
