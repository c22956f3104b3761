"""The engine's side: the shared Remover, its worker threads, the admission count and the
batch's pixel budget (:mod:`~bgremover.engine.budget`); one request's image read, cut out,
composed and encoded off the event loop."""

import contextlib
import io
import math
import os
import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine.budget import PixelBudget
from ..errors import ImageReadError
from .api_error import ApiError
from .multipart import body_params
from .params import CONTENT_TYPES, export_values, options_for, roi_box


@dataclass(frozen=True)
class Request:
    """What the engine needs of one request: the image bytes and its parameters."""

    data: bytes
    params: Mapping[str, str]
    default_format: str


def foreground_box(
    alpha: np.ndarray, options: Any, width: int, height: int
) -> tuple[int, int, int, int]:
    """Where the foreground lies on the ``width`` x ``height`` output of ``options``:
    left, top, width, height (remove.bg's ``foreground_*``; zeros when there is none).
    Cropped, it is the subject's box (its leftovers are cleared); else the box of all
    the alpha that shows."""
    from ..export.compose import layout
    from ..mask.subject import find_subject, visible_box

    subject = find_subject(alpha) if options.crop else None
    box = subject.box if subject is not None else visible_box(alpha)
    if box is None:
        return 0, 0, 0, 0
    lay = layout(alpha, options, subject)
    left, top = lay.to_output(box[0], box[1])
    right, bottom = lay.to_output(box[2], box[3])
    x0, y0 = max(0, math.floor(left)), max(0, math.floor(top))
    x1, y1 = min(width, math.ceil(right)), min(height, math.ceil(bottom))
    return x0, y0, max(0, x1 - x0), max(0, y1 - y0)


@dataclass
class Output:
    body: bytes
    media_type: str
    width: int
    height: int
    #: The subject's box on the output: left, top, width, height (all 0 when none).
    foreground: tuple[int, int, int, int]
    #: What made the mask: "int8", or "fp32" (asked for, or where the int8 guard ran it).
    precision: str = "fp32"
    #: Why the cutout may be wrong (``Result.doubts``); () when nothing points to it.
    doubts: tuple[str, ...] = ()
    #: The models that made the mask (a combined model's that it ran).
    models: tuple[str, ...] = ()
    #: remove.bg's foreground type the request asked for (it runs as "auto").
    kind: str = "auto"


def zipped(pixels: np.ndarray, options: Any, metadata: Any) -> bytes:
    """remove.bg's ZIP of an output: ``color.jpg``, its colour (JPEG at the options'
    quality, with the photo's profile), and ``alpha.png``, its alpha (255 where it is
    opaque). Both are compressed already, so the ZIP stores them as they are."""
    import zipfile

    from ..export.output import FORMATS

    rgb = np.ascontiguousarray(pixels[..., :3])
    if pixels.shape[2] == 4:
        alpha = np.ascontiguousarray(pixels[..., 3])
    else:
        alpha = np.full(pixels.shape[:2], 255, np.uint8)
    colour, mask = io.BytesIO(), io.BytesIO()
    FORMATS["jpeg"].encode(colour, rgb, FORMATS["jpeg"], None, options, metadata)
    FORMATS["png"].encode(mask, alpha, FORMATS["png"])
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("color.jpg", colour.getvalue())
        archive.writestr("alpha.png", mask.getvalue())
    return out.getvalue()


class Engine:
    """The shared Remover, its worker threads and the admission count."""

    def __init__(
        self,
        remover: Any,
        workers: int,
        queue: int,
        max_megapixels: float,
        pixels_in_flight: int,
    ) -> None:
        self.remover = remover
        self.workers = max(1, workers)
        self.capacity = self.workers + max(0, queue)
        self.max_megapixels = max_megapixels
        self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="bgremover-serve")
        self.infer_lock = threading.Lock()
        self.budget = PixelBudget(pixels_in_flight)
        self.lock = threading.Lock()
        self.admitted = 0
        self.running = 0

    def admit(self) -> bool:
        with self.lock:
            if self.admitted >= self.capacity:
                return False
            self.admitted += 1
            return True

    def release(self) -> None:
        with self.lock:
            self.admitted -= 1

    @property
    def free(self) -> int:
        """Requests that would be admitted now."""
        with self.lock:
            return max(0, self.capacity - self.admitted)

    @property
    def busy(self) -> bool:
        """Whether any admitted request is still being read or processed."""
        with self.lock:
            return self.admitted > 0

    @property
    def queue_depth(self) -> int:
        with self.lock:
            return max(0, self.admitted - self.running)

    def submit(self, request: Request, content_type: str | None, limit: int) -> Future:
        return self.pool.submit(self._run, request, content_type, limit)

    def _run(self, request: Request, content_type: str | None, limit: int) -> Output:
        with self.lock:
            self.running += 1
        try:
            return self.process(request, content_type, limit)
        finally:
            with self.lock:
                self.running -= 1

    def process(self, request: Request, content_type: str | None, limit: int) -> Output:
        """Read, cut out, compose and encode one request's image (on a worker thread)."""
        data, params = request.data, dict(request.params)
        if content_type is not None:
            data, fields = body_params(data, content_type, limit)
            params.update(fields)
        if not data:
            export_values(params, 1, 1)  # an image_url, or unknown parameters: say so
            raise ApiError(400, "The image is empty (0 bytes).", "invalid_file")
        width, height = self.dimensions(data)
        options, fmt = options_for(params, width, height, request.default_format)
        roi = roi_box(params["roi"], width, height) if params.get("roi", "").strip() else None
        made = self.output_pixels(width, height, options)
        with self.budget.hold(max(width * height, made)):
            loaded = self.read(data)
            batch, prep = self.remover.prepare(loaded)
            with self.infer_lock:
                raw, found = self.remover.infer_checked(batch)
            del batch
            result = self.remover.finish(loaded, raw, {"preprocess": prep}, guard=found)
            from ..export.compose import compose_array
            from ..export.output import FORMATS

            alpha = result.alpha
            if roi is not None:  # remove.bg: nothing outside the region is foreground
                x0, y0, x1, y1 = roi
                alpha = np.zeros_like(alpha)
                alpha[y0:y1, x0:x1] = result.alpha[y0:y1, x0:x1]
            pixels = compose_array(result.image.rgb, alpha, options)
            foreground = foreground_box(alpha, options, pixels.shape[1], pixels.shape[0])
            metadata = result.image.metadata
            precision, doubts, models = result.precision, result.doubts, result.models
            del result, loaded, raw
            if fmt == "zip":
                body = zipped(pixels, options, metadata)
            else:
                out = io.BytesIO()
                FORMATS[fmt].encode(out, pixels, FORMATS[fmt], None, options, metadata)
                body = out.getvalue()
            height_out, width_out = pixels.shape[:2]
        kind = params.get("type", "auto").strip().lower() or "auto"
        return Output(
            body, CONTENT_TYPES[fmt], width_out, height_out, foreground, precision, doubts,
            models, kind,
        )  # fmt: skip

    def dimensions(self, data: bytes) -> tuple[int, int]:
        """The image's size from its header, refusing images over the megapixel limit."""
        from ..files.imaging import MAX_MEGAPIXELS_ENV, probe

        try:
            # The allow-listed decoders only, chosen by the signature: an EPS or a PDF is
            # refused here, never handed to a plugin that would run Ghostscript.
            _, width, height = probe(data, name="the uploaded image")
        except ImageReadError as exc:
            raise ApiError(400, exc.message, "invalid_file", exc.fix) from None
        megapixels = width * height / 1e6
        if megapixels > self.max_megapixels:
            raise ApiError(
                413,
                f"The image is {width}×{height}, {megapixels:.3g} megapixels: over this "
                f"server's limit of {self.max_megapixels:g} megapixels, which protects "
                "against decompression bombs.",
                "image_too_large",
                "Send a smaller image; a server operator can raise the limit with "
                f"--max-megapixels or {MAX_MEGAPIXELS_ENV}.",
            )
        return width, height

    def output_pixels(self, width: int, height: int, options: Any) -> int:
        """The most pixels the output of ``options`` can have for this photo, refused
        with 400 before any work when over the megapixel limit (the limit on inputs
        holds for every image the server makes: a small photo with a large margin
        would otherwise take the machine's memory)."""
        from ..errors import UsageError
        from ..export.compose import check_output_size, largest_output

        pixels = largest_output(width, height, options)
        try:
            check_output_size(pixels, self.max_megapixels)
        except UsageError as exc:
            raise ApiError(
                400,
                exc.message,
                "output_too_large",
                "Send a smaller crop_margin or size, or a smaller image.",
            ) from None
        return pixels

    def read(self, data: bytes):
        """Decode as the command line does (the same reader, through a file)."""
        import tempfile

        from ..files.imaging import read_image

        fd, name = tempfile.mkstemp(prefix="bgremover-serve-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            try:
                return read_image(name, self.max_megapixels)
            except ImageReadError as exc:
                message = exc.message.replace(name, "the uploaded image")
                raise ApiError(400, message, "invalid_file", exc.fix) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(name)
