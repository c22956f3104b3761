"""A clip through the engine, in one pipelined pass: a thread decodes ahead, another runs
the model on each frame, a third finishes it as a photo's result is finished (the mask,
refinement, composing; the same Remover: its session, int8 and guard, providers), and the
file is encoded behind them. The queues between them are short, so memory stays the
same whatever the clip's length."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..errors import ImageReadError, UsageError
from ..export.compose import ComposeOptions
from ..export.output import SourceRecord
from ..files.imaging import from_array
from .clip import ClipFrame, ClipInfo, probe, read_frames
from .steady import Steady
from .writer import frame_folder, video_format, write_clip

if TYPE_CHECKING:
    from ..engine.pipeline import Remover

T = TypeVar("T")

#: Frames held between two stages: enough to keep each busy, few enough that a 4K
#: clip's three queues hold about 220 MB (RGB frames, the frame and its model input,
#: RGBA cutouts: 2 of each).
DEPTH = 2
#: What became of a clip's sound in a folder of PNG frames, which cannot hold it.
LEFT_OUT = "left out"
#: An MP4 has no transparency: the subject goes on white unless a background is given.
MP4_BACKGROUND = (255, 255, 255, 255)


@dataclass(frozen=True)
class ClipDone:
    """A clip written: how many frames, in how long, and what became of its audio."""

    source: Path
    target: Path
    frames: int
    seconds: float
    #: "copied", "encoded", LEFT_OUT (PNG frames hold no sound), or None (none asked
    #: for, or the clip has none).
    audio: str | None

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0


class _Stopped(Exception):
    """The consumer stopped reading (an error or a cancel downstream)."""


def ahead(items: Iterable[T], depth: int = DEPTH) -> Iterator[T]:
    """``items``, made on a thread of their own up to ``depth`` ahead of the reader. An
    error in making them is raised to the reader; a reader that stops stops the thread."""
    box: queue.Queue[tuple[str, object]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: tuple[str, object]) -> None:
        while not stop.is_set():
            try:
                box.put(entry, timeout=0.1)
                return
            except queue.Full:
                continue
        raise _Stopped

    def make() -> None:
        try:
            for item in items:
                put(("item", item))
            put(("end", None))
        except _Stopped:
            return
        except BaseException as exc:  # handed to the reader, raised there
            with contextlib.suppress(_Stopped):
                put(("error", exc))

    thread = threading.Thread(target=make, name="bgremover-clip", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = box.get()
            if kind == "end":
                return
            if kind == "error":
                assert isinstance(value, BaseException)
                raise value
            yield value  # type: ignore[misc]
    finally:
        stop.set()
        thread.join()


def clip_options(options: ComposeOptions | None, alpha: bool) -> ComposeOptions:
    """The export options for a clip's frames: every frame keeps the clip's size (no
    crop, canvas or scaling), and a file without alpha gets a background."""
    options = options or ComposeOptions()
    if options.reshapes:
        raise UsageError(
            "Crop, canvas and a size limit change each frame's size, and a clip's frames "
            "must all keep one size.",
            fix="Leave out --crop, --canvas and --max-size for clips.",
        )
    if options.mask_only:
        return options
    if not alpha and not options.opaque:
        return replace(options, background=MP4_BACKGROUND)
    return options


def broke_off(info: ClipInfo, frames: int, last_pts: int | None) -> bool:
    """Whether decoding ended well before the end the clip states: fewer frames than its
    count, or (where it states no count) its last frame over a second before its end."""
    if info.frames:
        return frames < info.frames * 0.98
    if info.duration is None or last_pts is None:
        return False
    return float(last_pts * info.time_base) < info.duration - 1.0


def clip_source(
    remover: Remover,
    source: Path,
    target: Path,
    options: ComposeOptions,
    *,
    audio: bool,
    steady: bool,
) -> SourceRecord:
    """The record an output of ``source`` at ``target`` carries: the clip, and every
    setting that changes the output (the engine's and the export options, as a photo's
    record has them, then the kind of file, the steady rule and the audio)."""
    kind = target.suffix.lower().lstrip(".") or "png frames"
    words = f"{kind} clip{', steady' if steady else ''}{', with audio' if audio else ''}"
    return SourceRecord.of(source, remover.output_settings(options, words))


def remove_clip(
    remover: Remover,
    source: Path,
    target: Path,
    options: ComposeOptions | None = None,
    *,
    audio: bool = True,
    steady: bool = False,
    max_megapixels: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    record: SourceRecord | None = None,
) -> ClipDone:
    """Cut the subject out of every frame of ``source`` into ``target``: a ``.webm``
    (VP9 with alpha), ``.mov`` (ProRes 4444 with alpha), ``.mp4`` (on the options'
    background, white by default) or, without a suffix, a folder of PNG frames.
    Each frame's mask is its own, as a photo's would be; with ``steady``, it is kept
    steady from frame to frame (:mod:`.steady`).
    ``progress(done, total)`` hears of each frame (total 0 where the clip does not say).
    ``record`` is what the output records (:func:`clip_source`'s, when the caller has it)."""
    start = time.perf_counter()
    info = probe(source, max_megapixels)
    fmt = video_format(target)
    options = clip_options(options, alpha=fmt is None or fmt.alpha)
    if record is None:
        record = clip_source(remover, source, target, options, audio=audio, steady=steady)
    steadier = Steady() if steady else None
    count: list[int] = [0]
    last: list[int | None] = [None]

    def inferred(frames: Iterator[ClipFrame]) -> Iterator[tuple[ClipFrame, Any, Any, Any]]:
        for frame in frames:
            loaded = from_array(frame.rgb)
            batch, _ = remover.prepare(loaded)
            yield (frame, loaded, *remover.infer_checked(batch))

    def cutouts(
        stream: Iterator[tuple[ClipFrame, Any, Any, Any]],
    ) -> Iterator[tuple[np.ndarray, int | None]]:
        for frame, loaded, raw, found in stream:
            result = remover.finish(loaded, raw, {}, None, found)
            if steadier is not None:
                result = replace(result, alpha=steadier(frame.rgb, result.alpha))
            pixels = result.compose_array(options)
            if fmt is not None and pixels.ndim == 2:  # a mask, as grey video
                pixels = np.repeat(pixels[..., None], 3, axis=2)
            yield pixels, frame.pts
            count[0] += 1
            last[0] = frame.pts
            if progress is not None:
                progress(count[0], info.frames)
        if broke_off(info, count[0], last[0]):
            # FFmpeg stops quietly at a cut-off end; nothing is written then.
            raise ImageReadError(
                f"{source}: the video breaks off after frame {count[0]} (damaged or cut "
                "short: the file states more).",
                fix="Check that the file plays to its end; re-export it if it does not.",
            )

    # Four threads: decoding, the model, finishing (mask, refinement, composing), encoding.
    made = ahead(cutouts(ahead(inferred(ahead(read_frames(source))))))
    how = None
    if fmt is None:
        from PIL import Image

        with frame_folder(target, record) as work:
            for index, (pixels, _) in enumerate(made):
                Image.fromarray(pixels).save(work / f"{index:06d}.png", compress_level=1)
        how = LEFT_OUT if audio and info.audio else None
    else:
        how = write_clip(target, fmt, info, made, audio, record)
    return ClipDone(source, target, count[0], time.perf_counter() - start, how)
