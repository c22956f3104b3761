"""A click (prompt) model: the photo encoded once, then a mask per set of clicks.

:class:`PromptModel` holds the two ONNX Runtime sessions of a
:class:`~bgremover.network.prompt_models.PromptModelSpec`. :meth:`PromptModel.encode` runs the
encoder on a photo (its long side scaled to the model's input side, padded) and returns
an :class:`Embedding`; :meth:`PromptModel.decode` runs the decoder on an embedding and
points (photo pixel coordinates, label 1 include / 0 exclude) or a box, and returns the
mask's logits (positive: inside) in the *working frame*: the photo scaled to the input
side's long side, so that a 12-megapixel photo costs the decoder no more than an
800-pixel one. Turning the logits into pixels at the photo's own size is the caller's
(only the part that changes needs it).

What must stay true: the decoder is given points in the scaled frame, with the padding
point (label -1) SAM's decoder expects when no box is given; ``orig_im_size`` is the
working frame's size, so the decoder's own resize is the identity; the same photo and
points give the same logits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from .prompt_models import PromptModelSpec
from .session import create_session

__all__ = ["Embedding", "PromptModel", "working_size"]

#: A point: (x, y, label) in photo pixels, label 1 include, 0 exclude.
Point = tuple[float, float, int]


def working_size(width: int, height: int, side: int) -> tuple[int, int]:
    """The working frame (width, height): the photo's long side scaled to ``side``."""
    scale = side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


@dataclass(frozen=True)
class Embedding:
    """A photo as the encoder saw it: its features and the photo's size."""

    features: np.ndarray = field(repr=False)
    width: int = 0
    height: int = 0
    side: int = 1024

    @property
    def frame(self) -> tuple[int, int]:
        """The working frame's (width, height)."""
        return working_size(self.width, self.height, self.side)

    @property
    def scale(self) -> float:
        """Working-frame pixels per photo pixel."""
        return self.side / max(self.width, self.height)

    @property
    def nbytes(self) -> int:
        return int(self.features.nbytes)


class PromptModel:
    """The encoder and decoder sessions of one click model."""

    def __init__(
        self,
        spec: PromptModelSpec,
        encoder: Path,
        decoder: Path,
        providers: Sequence[str] = ("CPUExecutionProvider",),
        threads: int = 0,
    ) -> None:
        self.spec = spec
        advice = (
            "The click model's file may be damaged; delete it from the model cache to "
            "download it again (`bgremover models pull " + spec.name + "`)."
        )
        self._encoder, self.encoder_info = create_session(encoder, providers, threads, advice)
        self._decoder, self.decoder_info = create_session(decoder, providers, threads, advice)

    def encode(self, rgb: np.ndarray) -> Embedding:
        """Run the encoder on an RGB photo (H x W x 3 uint8)."""
        side = self.spec.input_side
        h, w = rgb.shape[:2]
        fw, fh = working_size(w, h, side)
        small = cv2.resize(
            rgb, (fw, fh), interpolation=cv2.INTER_AREA if fw < w else cv2.INTER_LINEAR
        )
        x = np.zeros((1, 3, side, side), np.float32)
        mean, std = np.asarray(self.spec.mean, np.float32), np.asarray(self.spec.std, np.float32)
        norm = (small.astype(np.float32) - mean) / std
        x[0, :, :fh, :fw] = norm.transpose(2, 0, 1)
        (features,) = self._encoder.run(None, {self._encoder.get_inputs()[0].name: x})[:1]
        return Embedding(np.ascontiguousarray(features, np.float32), w, h, side)

    def decode(
        self,
        embedding: Embedding,
        points: Sequence[Point] = (),
        box: tuple[float, float, float, float] | None = None,
        prior: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The mask's logits in the working frame (float32, fh x fw) and the decoder's
        low-resolution logits (``mask_side`` square, to pass back as ``prior``).

        ``points`` are in photo pixels; ``box`` is (x0, y0, x1, y1) in photo pixels."""
        if not points and box is None:
            raise ValueError("The click model needs at least one point or a box.")
        s = embedding.scale
        coords: list[tuple[float, float]] = [(x * s, y * s) for x, y, _ in points]
        labels: list[float] = [float(label) for _, _, label in points]
        if box is not None:
            x0, y0, x1, y1 = box
            coords += [(x0 * s, y0 * s), (x1 * s, y1 * s)]
            labels += [2.0, 3.0]
        else:
            coords.append((0.0, 0.0))
            labels.append(-1.0)
        side = self.spec.mask_side
        fw, fh = embedding.frame
        feeds: dict[str, Any] = {
            "image_embeddings": embedding.features,
            "point_coords": np.asarray([coords], np.float32),
            "point_labels": np.asarray([labels], np.float32),
            "mask_input": (
                np.zeros((1, 1, side, side), np.float32)
                if prior is None
                else np.asarray(prior, np.float32).reshape(1, 1, side, side)
            ),
            "has_mask_input": np.asarray([0.0 if prior is None else 1.0], np.float32),
            "orig_im_size": np.asarray([fh, fw], np.float32),
        }
        masks, _iou, low_res = self._decoder.run(None, feeds)
        return np.ascontiguousarray(masks[0, 0], np.float32), np.ascontiguousarray(
            low_res[0, 0], np.float32
        )
