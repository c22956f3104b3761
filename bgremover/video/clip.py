"""Reading a clip with PyAV (FFmpeg): what it holds, and its frames as RGB arrays.

Frames come out as the clip is shown: turned by its rotation (a phone's portrait clip is
stored on its side, with a display matrix), and converted to RGB with the clip's own
colour matrix and range (BT.601 or BT.709, limited or full). A clip that says neither is
read as players read it: BT.709 from 720 lines up, BT.601 below, limited range.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ImageReadError


@dataclass(frozen=True)
class ClipInfo:
    """What a clip holds, read before its first frame is decoded."""

    path: Path
    #: The frame size as shown (rotation applied).
    width: int
    height: int
    #: The average frame rate (None where the container does not say).
    rate: Fraction | None
    #: The video stream's time base: each frame's ``pts`` counts in it.
    time_base: Fraction
    #: The frame count the container states (0: not stated; decode to know).
    frames: int
    #: Seconds, as the container states (None: not stated).
    duration: float | None
    #: Degrees the stored frames are turned counter-clockwise to be shown.
    rotation: int
    #: The audio stream's codec name, None without audio.
    audio: str | None


@dataclass(frozen=True)
class ClipFrame:
    """One decoded frame: its place in the clip and its RGB pixels (h, w, 3 uint8)."""

    index: int
    pts: int | None
    rgb: np.ndarray


def _unreadable(path: Path, why: str, technical: str = "") -> ImageReadError:
    return ImageReadError(
        f"{path}: {why}",
        fix="Check that the file is a complete video (it plays in a video player); "
        "re-export it as MP4 (H.264) or WebM if it does.",
        technical=technical,
    )


def open_clip(path: Path) -> Any:
    """The clip opened for reading (an ``av`` container); a clear error where it cannot be."""
    import av

    try:
        container = av.open(str(path), metadata_errors="ignore")
    except FileNotFoundError:
        raise ImageReadError(f"{path}: no such file.") from None
    except (av.FFmpegError, OSError, UnicodeDecodeError) as exc:
        raise _unreadable(path, "not a video bgremover can read.", f"FFmpeg: {exc}") from None
    if not container.streams.video:
        container.close()
        raise _unreadable(path, "holds no video stream (sound only, or no media at all).")
    stream = container.streams.video[0]
    if stream.codec_context is None or stream.codec_context.codec is None:
        container.close()
        raise _unreadable(path, "its video codec is one this build of FFmpeg cannot decode.")
    return container


def probe(path: Path, max_megapixels: float | None = None) -> ClipInfo:
    """What ``path`` holds; a clip whose frames are over ``max_megapixels`` is refused
    (the same pixel budget as a photo's)."""
    with open_clip(path) as container:
        stream = container.streams.video[0]
        rotation = _stream_rotation(container, stream)
        width, height = stream.codec_context.width, stream.codec_context.height
        if rotation % 180:
            width, height = height, width
        if width <= 0 or height <= 0:
            raise _unreadable(path, "its video stream states no frame size.")
        if max_megapixels is not None and width * height > max_megapixels * 1e6:
            raise ImageReadError(
                f"{path}: its frames are {width}x{height}, {width * height / 1e6:.1f} "
                f"megapixels, over the limit of {max_megapixels:g}.",
                fix="Raise the limit with --max-megapixels, or scale the clip down first.",
                app_fix="Scale the clip down first, or raise the pixel limit in Settings.",
            )
        duration = (
            float(stream.duration * stream.time_base)
            if stream.duration is not None and stream.time_base is not None
            else (container.duration / 1e6 if container.duration else None)
        )
        audio = container.streams.audio[0].codec_context.name if container.streams.audio else None
        return ClipInfo(
            path=path,
            width=width,
            height=height,
            rate=stream.average_rate,
            time_base=stream.time_base or Fraction(1, 90000),
            frames=stream.frames or 0,
            duration=duration,
            rotation=rotation,
            audio=audio,
        )


def _stream_rotation(container: Any, stream: Any) -> int:
    """The rotation of the first frame (its display matrix), a multiple of 90 degrees."""
    for frame in container.decode(stream):
        container.seek(0)
        return _quarter(frame.rotation)
    return 0


def _quarter(degrees: float) -> int:
    return round(degrees / 90) % 4 * 90


def _colour(frame: Any) -> dict[str, Any]:
    """How ``frame`` is turned into RGB: its own matrix and range, or players' guess."""
    from av.video.reformatter import ColorRange, Colorspace

    space = frame.colorspace
    if space in (Colorspace.ITU709, Colorspace.ITU601, Colorspace.SMPTE170M, Colorspace.BT2020):
        source = space
    else:
        source = Colorspace.ITU709 if frame.height >= 720 else Colorspace.ITU601
    full = frame.color_range == ColorRange.JPEG or frame.format.name.startswith("yuvj")
    return {
        "src_colorspace": source,
        "src_color_range": ColorRange.JPEG if full else ColorRange.MPEG,
        "dst_color_range": ColorRange.JPEG,
    }


def rgb_of(frame: Any) -> np.ndarray:
    """A decoded frame as RGB (h, w, 3 uint8), turned as the clip is shown."""
    rgb = frame.to_ndarray(format="rgb24", **_colour(frame))
    turns = _quarter(frame.rotation) // 90
    return np.ascontiguousarray(np.rot90(rgb, turns)) if turns else rgb


def read_frames(path: Path) -> Iterator[ClipFrame]:
    """Every frame of ``path``'s first video stream, in order, decoded as they are asked
    for (one at a time: memory does not grow with the clip). A clip that breaks off
    (truncated, damaged) raises ImageReadError naming the frame; one with no frame at
    all raises it too."""
    import av

    index = 0
    with open_clip(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        try:
            for frame in container.decode(stream):
                yield ClipFrame(index, frame.pts, rgb_of(frame))
                index += 1
        except av.FFmpegError as exc:
            raise _unreadable(
                path,
                f"the video breaks off after frame {index} (damaged or cut short).",
                f"FFmpeg: {exc}",
            ) from None
    if index == 0:
        raise _unreadable(path, "holds no video frame that can be decoded (empty, or damaged).")
