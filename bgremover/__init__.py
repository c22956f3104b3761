"""bgremover: remove image backgrounds with U²-Net-family ONNX models.

The package imports fast and without ONNX Runtime or Qt; the engine is loaded on
first use of :class:`Remover`::

    from bgremover import Remover
    result = Remover("u2netp").remove("photo.jpg")
    result.cutout().save("photo.png")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["ComposeOptions", "Remover", "Result", "__version__"]

if TYPE_CHECKING:
    from .pipeline import ComposeOptions, Remover, Result


def __getattr__(name: str) -> Any:
    # Lazy so that `bgremover --version` and `import bgremover` stay cheap:
    # the pipeline pulls in numpy, Pillow and (on first session) ONNX Runtime.
    if name in ("Remover", "Result", "ComposeOptions"):
        from . import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'bgremover' has no attribute {name!r}")
