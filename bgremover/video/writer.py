"""Writing a clip's cutout: VP9 WebM with alpha, ProRes 4444 with alpha, an MP4 of the
subject on a background, or a folder of PNG frames; each written atomically.

The video files keep the source's timestamps (each frame's ``pts`` in the source's time
base, so a variable frame rate stays variable) and its audio: copied as it is where the
container holds its codec, otherwise encoded again in the container's own (Opus in WebM,
AAC in MOV and MP4). Colours are written as BT.709, limited range, and tagged so.
Audio is interleaved with the video as it goes, so memory does not grow with the clip.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..errors import UsageError
from ..export.output import (
    DONE,
    MISSING,
    OTHER_PHOTO,
    STALE,
    UNVERIFIED,
    Existing,
    SourceRecord,
)
from ..files.atomic import TEMP_SUFFIX, replace_with_retry, write_atomically
from .clip import ClipInfo, open_clip

#: The tag of a video file that holds its record (the clip and the settings it was made
#: with), and the file of a folder of frames that does.
RECORD_TAG = "comment"
FOLDER_RECORD = ".bgremover-record.json"
#: Seconds of audio written ahead of the video (the muxer interleaves within this).
AUDIO_AHEAD = 0.5


@dataclass(frozen=True)
class VideoFormat:
    """One kind of video file bgremover writes."""

    #: The FFmpeg muxer.
    muxer: str
    codec: str
    pix_fmt: str
    #: Whether it keeps the cutout's transparency (else the subject is on a background).
    alpha: bool
    options: dict[str, str] = field(default_factory=dict)
    #: Audio codecs the container holds as they are (copied without loss).
    audio_codecs: tuple[str, ...] = ()
    #: What other audio is encoded as.
    audio_encoder: str = "aac"
    #: Whether the frame size must be even (4:2:0 colour): an odd side is padded by one.
    even: bool = True


#: The video files, by suffix.
FORMATS: dict[str, VideoFormat] = {
    # Chrome, Firefox, DaVinci Resolve and After Effects (with the WebM plug-in) read its
    # alpha; row-mt and cpu-used 4 make libvpx use both cores at a good speed.
    ".webm": VideoFormat(
        "webm", "libvpx-vp9", "yuva420p", True,
        {"crf": "30", "b": "0", "row-mt": "1", "deadline": "good", "cpu-used": "4"},
        audio_codecs=("opus", "vorbis"), audio_encoder="libopus",
    ),
    # ProRes 4444: the editors' own format with alpha (Final Cut, Premiere, Resolve).
    ".mov": VideoFormat(
        "mov", "prores_ks", "yuva444p10le", True, {"profile": "4444"},
        audio_codecs=("aac", "pcm_s16le", "pcm_s24le", "alac", "mp3"), even=False,
    ),
    ".mp4": VideoFormat(
        "mp4", "libx264", "yuv420p", False, {"crf": "18", "preset": "medium"},
        audio_codecs=("aac", "mp3", "opus", "ac3"),
    ),
}  # fmt: skip


def video_format(target: Path) -> VideoFormat | None:
    """The video format ``target``'s suffix names; None for a folder of PNG frames."""
    suffix = target.suffix.lower()
    if not suffix:
        return None
    if suffix not in FORMATS:
        raise UsageError(
            f"{target}: bgremover does not write {suffix} video.",
            fix=f"Name the output {', '.join(FORMATS)}, or a folder (PNG frames).",
        )
    return FORMATS[suffix]


def _even(frame: np.ndarray) -> np.ndarray:
    """``frame`` with its edge repeated to an even width and height (4:2:0 colour)."""
    h, w = frame.shape[:2]
    pad = ((0, h % 2), (0, w % 2)) + ((0, 0),) * (frame.ndim - 2)
    return np.pad(frame, pad, mode="edge") if h % 2 or w % 2 else frame


def write_clip(
    target: Path,
    fmt: VideoFormat,
    info: ClipInfo,
    frames: Iterator[tuple[np.ndarray, int | None]],
    audio: bool = True,
    record: SourceRecord | None = None,
) -> str | None:
    """Write every frame ``frames`` yields (RGBA or RGB uint8, with its source ``pts``)
    into ``target``, atomically: the file appears, whole, only when all went well.
    With ``audio``, the source's audio goes along; ``record`` (the clip and the settings
    it was made with) goes into the file's comment tag. Returns what became of the
    audio: "copied", "encoded", or None (none)."""
    done: list[str | None] = [None]

    def fill(handle: BinaryIO) -> None:
        done[0] = _encode(handle, fmt, info, frames, audio, record)

    write_atomically(target, fill)
    return done[0]


def _encode(
    handle: BinaryIO,
    fmt: VideoFormat,
    info: ClipInfo,
    frames: Iterator[tuple[np.ndarray, int | None]],
    want_audio: bool,
    record: SourceRecord | None,
) -> str | None:
    import av
    from av.video.reformatter import ColorRange, Colorspace

    with av.open(handle, "w", format=fmt.muxer) as out:
        if record is not None:
            out.metadata[RECORD_TAG] = record.to_text()
        stream = out.add_stream(fmt.codec, rate=info.rate or Fraction(25), options=fmt.options)
        stream.width = info.width + (info.width % 2 if fmt.even else 0)
        stream.height = info.height + (info.height % 2 if fmt.even else 0)
        stream.pix_fmt = fmt.pix_fmt
        stream.time_base = stream.codec_context.time_base = info.time_base
        stream.codec_context.colorspace = Colorspace.ITU709
        stream.codec_context.color_range = ColorRange.MPEG
        audio = _AudioCopy(out, info, fmt) if want_audio and info.audio else None
        for index, (pixels, pts) in enumerate(frames):
            image = np.ascontiguousarray(_even(pixels) if fmt.even else pixels)
            frame = av.VideoFrame.from_ndarray(
                image, format="rgba" if image.shape[2] == 4 else "rgb24"
            ).reformat(
                format=fmt.pix_fmt,
                src_colorspace=Colorspace.ITU709,
                dst_colorspace=Colorspace.ITU709,
                src_color_range=ColorRange.JPEG,
                dst_color_range=ColorRange.MPEG,
            )
            frame.pts = pts if pts is not None else index
            frame.time_base = info.time_base
            if audio is not None:
                audio.until(float(frame.pts * info.time_base))
            out.mux(stream.encode(frame))
        out.mux(stream.encode())
        if audio is None:
            return None
        audio.until(None)
        return audio.how


class _AudioCopy:
    """The source's first audio stream into ``out``: its packets as they are where the
    container holds the codec, else decoded and encoded again; fed up to a time as the
    video goes, so both stay interleaved."""

    def __init__(self, out: Any, info: ClipInfo, fmt: VideoFormat) -> None:
        self.source = open_clip(info.path)
        self.input = self.source.streams.audio[0]
        self.copy = self.input.codec_context.name in fmt.audio_codecs
        if self.copy:
            self.stream = out.add_stream_from_template(self.input)
        else:
            rate = 48000 if fmt.audio_encoder == "libopus" else (self.input.rate or 48000)
            self.stream = out.add_stream(fmt.audio_encoder, rate=rate)
            layout = self.input.codec_context.layout
            if layout is not None and layout.nb_channels <= 2:
                self.stream.layout = layout.name
        self.out = out
        self.how = "copied" if self.copy else "encoded"
        self._packets: Iterator[Any] | None = self.source.demux(self.input)
        self._pending: Any = None

    def until(self, seconds: float | None) -> None:
        """Write the audio up to ``seconds``; None: all that is left, then close."""
        while self._packets is not None:
            packet = self._pending or next(self._packets, None)
            self._pending = None
            if packet is None:
                self._packets = None
                break
            if packet.size == 0:  # the demuxer's end marker
                continue
            at = float(packet.pts * packet.time_base) if packet.pts is not None else 0.0
            if seconds is not None and at > seconds + AUDIO_AHEAD:
                self._pending = packet
                return
            if self.copy:
                packet.stream = self.stream
                self.out.mux(packet)
            else:
                for frame in packet.decode():
                    frame.pts = None  # the encoder counts its own samples
                    self.out.mux(self.stream.encode(frame))
        if seconds is None:
            if not self.copy:
                self.out.mux(self.stream.encode(None))
            self.source.close()


@contextlib.contextmanager
def frame_folder(target: Path, record: SourceRecord | None = None) -> Iterator[Path]:
    """A folder of PNG frames made whole or not at all: its frames go into a temporary
    folder beside ``target``, which takes ``target``'s place (an earlier folder there is
    deleted then) when the block ends without error; ``record`` goes into a file of it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    work = target.parent / f".{target.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
    old = work.with_name(work.name.replace(TEMP_SUFFIX, f".old{TEMP_SUFFIX}"))
    work.mkdir()
    try:
        yield work
        if record is not None:
            (work / FOLDER_RECORD).write_text(record.to_text(), encoding="utf-8")
        if target.is_dir():
            os.replace(target, old)
        replace_with_retry(work, target)
    finally:
        for folder in (work, old):
            if folder.exists():
                shutil.rmtree(folder, ignore_errors=True)


def clip_record(target: Path) -> SourceRecord | None:
    """The record an output of bgremover's at ``target`` holds (None: none, or no output)."""
    if target.is_dir():
        try:
            return SourceRecord.from_text((target / FOLDER_RECORD).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            return None
    import av

    try:
        with av.open(str(target), metadata_errors="ignore") as container:
            tags = {k.lower(): v for k, v in container.metadata.items()}
    except (av.FFmpegError, OSError):
        return None
    text = tags.get(RECORD_TAG)
    return SourceRecord.from_text(text) if text else None


def existing_clip(target: Path, source: SourceRecord) -> Existing:
    """What stands at ``target`` for the clip ``source`` records, as for a photo's output
    (:func:`~bgremover.export.output.existing_output`): MISSING, DONE (this clip with
    these settings), STALE (this clip, other settings: made again), OTHER_PHOTO (made from
    another clip) or UNVERIFIED (not bgremover's); the last two are replaced only when
    asked (``--overwrite``). A video file or folder is only ever there whole."""
    if not target.exists():
        return Existing(MISSING)
    record = clip_record(target)
    if record is None:
        return Existing(UNVERIFIED)
    if not record.same_photo(source):
        return Existing(OTHER_PHOTO, record)
    wanted, made = source.settings, record.settings
    if wanted is not None and (made is None or made.digest != wanted.digest):
        return Existing(STALE, record)
    return Existing(DONE, record)
