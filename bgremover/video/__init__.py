"""Clips through the same engine as photos: reading them (``clip``), writing the cutout
as VP9 WebM or ProRes 4444 with alpha, an MP4 on a background or PNG frames (``writer``),
and the pipelined pass between the two (``run``). Needs PyAV (the ``video`` extra)."""

__all__ = ["ClipDone", "remove_clip"]

from .run import ClipDone, remove_clip
