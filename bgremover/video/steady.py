"""A clip's mask kept steady from frame to frame, where the picture is.

Cut out frame by frame, a mask flickers: the model's answer at an edge or an unsure
region changes a little with every frame's noise and compression. Here each frame's
alpha is blended with the previous frame's *result*, moved along with the picture
(dense optical flow, OpenCV's DIS, on a small grey copy), and only where the move
explains the picture: a pixel whose moved previous frame does not match the new one
(something appeared, moved unlike its surroundings, was uncovered) takes the new alpha.
A cut (most of the frame unexplained) starts again from the new frame's alpha alone.
The state is one small grey frame and one alpha: memory does not grow with the clip.

tests/benchmarks/video_steady.py measures the rule against frame-by-frame cutouts on
clips whose true alpha is known, choosing its constants on the clips of one half of the
photos and scoring them on the other half.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The grey copy the flow is computed on: at most this many pixels on its long side.
FLOW_SIDE = 384


@dataclass(frozen=True)
class SteadyRule:
    """How much of the previous result a frame keeps, and when it keeps none. The
    defaults are the benchmark's choice on the first clips it scored (see
    tests/benchmarks/video_steady.py); they do not yet meet the goal, so a clip is cut
    out frame by frame unless the rule is asked for."""

    #: Share of the moved previous alpha kept where the move explains the picture fully.
    keep: float = 0.5
    #: Changes of alpha up to this (0-255) are held back where the move explains the
    #: picture: a pixel's alpha follows the new frame's only by what exceeds it (a soft
    #: dead band), so small back-and-forth answers stay still and real changes pass.
    hold: float = 0.0
    #: Grey-level difference (0-255) between the frame and the moved previous one at
    #: which a pixel's share falls to 0.6 of the most (a Gaussian fall-off).
    tolerance: float = 8.0
    #: Mean grey-level difference over the frame above which it is a cut: start again.
    cut: float = 16.0


class Steady:
    """Feed each frame's RGB and alpha in order; get the steadied alpha back."""

    def __init__(self, rule: SteadyRule | None = None) -> None:
        import cv2

        self.rule = rule or SteadyRule()
        self._flow = cv2.DISOpticalFlow.create(cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST)
        self._grey: np.ndarray | None = None
        self._alpha: np.ndarray | None = None
        self._rows: np.ndarray | None = None
        self._cols: np.ndarray | None = None
        #: How many frames started again (the first one and each cut).
        self.resets = 0

    def __call__(self, rgb: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """The steadied alpha of the next frame (``rgb``, its own ``alpha``: uint8)."""
        return self.step(small_grey(rgb), alpha)

    def step(self, grey: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """:meth:`__call__` given the frame's :func:`small_grey` copy."""
        import cv2

        previous, before = self._grey, self._alpha
        self._grey = grey
        if previous is None or before is None or previous.shape != grey.shape:
            return self._start(alpha)
        # Where each pixel of this frame was in the previous one (flow from this frame).
        h, w = grey.shape
        flow = self._flow.calc(grey, previous, np.zeros((h, w, 2), np.float32))
        grid = np.mgrid[0:h, 0:w].astype(np.float32)
        moved = cv2.remap(
            previous, grid[1] + flow[..., 0], grid[0] + flow[..., 1], cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_REPLICATE,
        )  # fmt: skip
        miss = np.abs(grey.astype(np.float32) - moved.astype(np.float32))
        if float(miss.mean()) > self.rule.cut:
            return self._start(alpha)
        weight = np.exp(-0.5 * (miss / self.rule.tolerance) ** 2)
        height, width = alpha.shape
        scale = np.array([width / w, height / h], np.float32)
        motion = cv2.resize(flow, (width, height), interpolation=cv2.INTER_LINEAR) * scale
        rows, cols = self._grid(height, width)
        carried = cv2.remap(
            before, cols + motion[..., 0], rows + motion[..., 1], cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_REPLICATE,
        )  # fmt: skip
        explained = cv2.resize(weight, (width, height), interpolation=cv2.INTER_LINEAR)
        new = alpha.astype(np.float32)
        change = new - carried
        held = carried + np.sign(change) * np.maximum(np.abs(change) - self.rule.hold, 0)
        held += self.rule.keep * (carried - held)
        out = new + explained * (held - new)
        self._alpha = out
        return np.clip(np.rint(out), 0, 255).astype(np.uint8)

    def _grid(self, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Each pixel's row and column (float32), made once per frame size."""
        if self._rows is None or self._rows.shape != (height, width):
            rows, cols = np.mgrid[0:height, 0:width].astype(np.float32)
            self._rows, self._cols = rows, cols
        assert self._cols is not None
        return self._rows, self._cols

    def _start(self, alpha: np.ndarray) -> np.ndarray:
        self.resets += 1
        self._alpha = alpha.astype(np.float32)
        return alpha


def small_grey(rgb: np.ndarray) -> np.ndarray:
    """The grey copy of a frame the flow is computed on (at most FLOW_SIDE pixels)."""
    import cv2

    h, w = rgb.shape[:2]
    scale = FLOW_SIDE / max(h, w)
    if scale < 1:
        size = (max(1, round(w * scale)), max(1, round(h * scale)))
        rgb = cv2.resize(rgb[..., :3], size, interpolation=cv2.INTER_AREA)
    return cv2.cvtColor(np.ascontiguousarray(rgb[..., :3]), cv2.COLOR_RGB2GRAY)
