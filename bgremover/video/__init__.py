"""Clips through the same engine as photos: reading them (clip), the mask kept steady
from frame to frame (steady), writing the cutout as VP9 WebM or ProRes 4444 with alpha,
an MP4 on a background or PNG frames (writer), the pipelined pass between (run), and
which inputs of a batch are clips and where their outputs go (plan), and the clips of
``bgremover remove``'s batch and its options (batch, flags)."""

__all__ = ["batch", "clip", "flags", "plan", "run", "steady", "writer"]
