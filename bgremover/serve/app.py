"""The FastAPI app: the endpoints, the API key check, admission, the body read in chunks
under the size and time limits, and remove.bg's answers and errors."""

import asyncio
import base64
import contextlib
import hmac
import logging
import time
from collections.abc import Mapping
from typing import Any

from ..errors import BgRemoverError, ImageReadError, UsageError
from .api_error import ApiError, removebg_status, too_large
from .config import Settings
from .pool import Engine, Output, Request
from .prometheus import Metrics

log = logging.getLogger("bgremover.serve")


class State:
    def __init__(self, engine: Engine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings
        self.metrics = Metrics()
        self.draining = False
        self.uploads = Uploads(UPLOAD_BODIES * settings.max_body)

    @property
    def busy(self) -> bool:
        """Whether a request is being received or processed (the drain waits for both)."""
        return self.engine.busy or self.uploads.count > 0


#: What is read and dropped of a refused request's body before answering, so that a
#: client still sending reads the answer instead of a reset connection: at most this
#: many bytes, for at most this many seconds (a client that trickles its body is answered
#: all the same), then the answer and the connection closed.
DISCARD_LIMIT = 256 * 1024 * 1024  # a client sending fast is read to its end
DISCARD_SECONDS = 2.0
REMOVEBG = "/v1.0/removebg"
#: A body is read before the request takes a processing slot, so a slow upload holds
#: none. It must keep up at least MIN_UPLOAD_RATE bytes a second on average once
#: UPLOAD_GRACE seconds have passed, and end within the upload deadline (half the
#: processing time limit); else it is answered 408 and its connection closed.
MIN_UPLOAD_RATE = 16 * 1024
UPLOAD_GRACE = 5.0
#: The bodies being received at once may hold at most this many times the body limit
#: in memory between them; past it an upload is answered 429 (the server is busy).
UPLOAD_BODIES = 8


class Uploads:
    """The bodies being received: how many, and the bytes they hold (event loop only)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self.count = 0


class Body:
    """A request's body as read so far: whether reading began and whether it ended."""

    def __init__(self, request: Any) -> None:
        self.request = request
        self.started = False
        self.complete = False

    async def chunk(self, timeout: float | None = None) -> bytes:
        """The next part of the body (b"" at its end), waiting at most ``timeout``
        seconds (asyncio.TimeoutError). A client gone is ClientDisconnect."""
        from starlette.requests import ClientDisconnect

        if self.complete:
            return b""
        message = await asyncio.wait_for(self.request.receive(), timeout)
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        self.started = True
        if not message.get("more_body", False):
            self.complete = True
        return bytes(message.get("body", b""))

    async def read(self, limit: int, seconds: float, uploads: Uploads) -> bytes:
        """The body, under the size limit (413 as soon as it passes ``limit`` bytes),
        the rate rule and the deadline (408: see MIN_UPLOAD_RATE), with the bytes
        counted in ``uploads`` while it is read (429 past their limit)."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        parts: list[bytes] = []
        size = 0
        uploads.count += 1
        try:
            while not self.complete:
                # The time by which more must have come: the rate rule's, or the deadline.
                due = start + min(seconds, max(UPLOAD_GRACE, size / MIN_UPLOAD_RATE))
                try:
                    chunk = await self.chunk(max(0.0, due - loop.time()))
                except asyncio.TimeoutError:
                    raise self.too_slow(seconds, loop.time() - start >= seconds) from None
                size += len(chunk)
                if size > limit:
                    raise too_large(limit)
                if uploads.held + len(chunk) > uploads.limit:
                    raise ApiError(
                        429,
                        "The server is busy receiving other uploads.",
                        "rate_limit_exceeded",
                        "Retry after the number of seconds in Retry-After.",
                        {"Retry-After": "1"},
                    )
                uploads.held += len(chunk)
                parts.append(chunk)
            return b"".join(parts)
        finally:
            uploads.count -= 1
            uploads.held -= sum(map(len, parts))

    @staticmethod
    def too_slow(seconds: float, deadline: bool) -> ApiError:
        why = (
            f"took longer than this server's limit of {seconds:g} seconds"
            if deadline
            else f"came slower than {MIN_UPLOAD_RATE // 1024} KB a second"
        )
        return ApiError(
            408,
            f"The upload {why}.",
            "request_timeout",
            "Send the file over a faster connection, or a smaller file.",
        )

    async def discard(self) -> None:
        """Read what the client is still sending, within DISCARD_LIMIT and DISCARD_SECONDS.

        Nothing is read of a client that waits for ``100 Continue`` before sending: it
        gets the answer instead of the go-ahead."""
        from starlette.requests import ClientDisconnect

        if self.complete:
            return
        if not self.started and "100-continue" in self.request.headers.get("expect", "").lower():
            return

        async def drain() -> None:
            seen = 0
            while not self.complete and seen <= DISCARD_LIMIT:
                seen += len(await self.chunk())

        with contextlib.suppress(asyncio.TimeoutError, ClientDisconnect):
            await asyncio.wait_for(drain(), DISCARD_SECONDS)


def create_app(state: State):
    from fastapi import FastAPI
    from fastapi import Request as HttpRequest
    from fastapi.responses import JSONResponse, PlainTextResponse, Response
    from starlette.exceptions import HTTPException
    from starlette.requests import ClientDisconnect

    app = FastAPI(title="bgremover", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.bgremover = state
    settings, engine, metrics = state.settings, state.engine, state.metrics

    def error_response(exc: ApiError) -> Response:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(HTTPException)
    async def http_error(request: HttpRequest, exc: HTTPException) -> Response:
        """Unknown paths and methods, in remove.bg's errors shape like every other answer."""
        title = {404: "Not found.", 405: "Method not allowed."}.get(exc.status_code, exc.detail)
        return error_response(
            ApiError(
                exc.status_code,
                f"{title} ({request.method} {request.url.path})",
                "not_found" if exc.status_code == 404 else "method_not_allowed",
                f"This server answers POST {REMOVEBG}, POST /api/remove, GET /healthz and "
                "GET /metrics.",
                getattr(exc, "headers", None),
            )
        )

    def check_key(request: HttpRequest) -> None:
        if settings.api_key is None:
            return
        given = request.headers.get("x-api-key")
        if given is None:
            raise ApiError(
                401, "Missing API key.", "auth_failed", "Send the key in the X-Api-Key header."
            )
        if not hmac.compare_digest(given.encode(), settings.api_key.encode()):
            raise ApiError(401, "Invalid API key.", "auth_failed", "Check the X-Api-Key header.")

    def busy() -> ApiError:
        return ApiError(
            429,
            f"The server is busy: {engine.capacity} requests are being processed or waiting.",
            "rate_limit_exceeded",
            "Retry after the number of seconds in Retry-After.",
            {"Retry-After": "1"},
        )

    def rate_headers() -> dict[str, str]:
        """remove.bg's rate-limit headers, for this server's limit: requests at once."""
        return {
            "X-RateLimit-Limit": str(engine.capacity),
            "X-RateLimit-Remaining": str(engine.free),
            "X-RateLimit-Reset": str(int(time.time()) + 1),
        }

    def answer(output: Output, wants_json: bool) -> Response:
        left, top, width, height = output.foreground
        headers = {
            "X-Type": "other",
            "X-Width": str(output.width),
            "X-Height": str(output.height),
            "X-Foreground-Top": str(top),
            "X-Foreground-Left": str(left),
            "X-Foreground-Width": str(width),
            "X-Foreground-Height": str(height),
            "X-Credits-Charged": "0",
            "X-Precision": output.precision,
            # "none", or why the cutout may be wrong (Result.doubts), "; " between reasons.
            "X-Cutout-Doubt": "; ".join(output.doubts) or "none",
            "X-Models": ",".join(output.models),
            **rate_headers(),
        }
        if output.kind != "auto":  # remove.bg's types all run as auto here: say so
            headers["X-Type-Applied"] = "auto"
        if not wants_json:
            return Response(output.body, media_type=output.media_type, headers=headers)
        data = {
            "result_b64": base64.b64encode(output.body).decode("ascii"),
            "foreground_top": top,
            "foreground_left": left,
            "foreground_width": width,
            "foreground_height": height,
        }
        return JSONResponse({"data": data}, headers=headers)

    async def handle(
        request: HttpRequest, endpoint: str, params: Mapping[str, str], default_format: str
    ) -> Response:
        start = time.perf_counter()
        status = 500
        admitted = False
        body = Body(request)
        with metrics.lock:
            metrics.in_flight += 1
        try:
            try:
                check_key(request)
                if state.draining:
                    raise ApiError(
                        503,
                        "The server is shutting down.",
                        "shutting_down",
                        "Retry in a moment (against another instance or after restart).",
                        {"Retry-After": "5"},
                    )
                declared = request.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > settings.max_body:
                    raise too_large(settings.max_body)  # before reading (or a 100 Continue)
                if engine.free == 0:  # refused before its body is read, as it would be after
                    raise busy()
                # The body first: a slow upload holds no processing slot.
                data = await body.read(settings.max_body, settings.timeout / 2, state.uploads)
                if not engine.admit():
                    raise busy()
                admitted = True
                deadline = time.perf_counter() + settings.timeout
                form = request.headers.get("content-type", "") if endpoint == REMOVEBG else None
                future = engine.submit(
                    Request(data, params, default_format), form, settings.max_body
                )
                del data
                future.add_done_callback(lambda _: engine.release())
                admitted = False  # released when the work ends, whatever the client does
                try:
                    output = await asyncio.wait_for(
                        asyncio.shield(asyncio.wrap_future(future)),
                        max(0.0, deadline - time.perf_counter()),
                    )
                except asyncio.TimeoutError:
                    future.cancel()
                    raise ApiError(
                        503,
                        f"The image took longer than this server's limit of "
                        f"{settings.timeout:g} seconds.",
                        "timeout",
                        "Send a smaller image, or retry when the server is less busy.",
                        {"Retry-After": "5"},
                    ) from None
                status = 200
                accept = request.headers.get("accept", "").lower()
                return answer(output, endpoint == REMOVEBG and "application/json" in accept)
            except ApiError as exc:
                if endpoint == REMOVEBG:
                    exc = removebg_status(exc)
                status = exc.status
                await body.discard()
                response = error_response(exc)
                response.headers.update(rate_headers())
                if not body.complete:
                    response.headers["Connection"] = "close"  # the rest is not read
                return response
            except BgRemoverError as exc:
                status = 400 if isinstance(exc, (ImageReadError, UsageError)) else 500
                return error_response(ApiError(status, exc.message, "processing_failed", exc.fix))
            except ClientDisconnect:
                status = 499  # the client went away; nobody reads the answer
                return Response(status_code=400)
        except Exception:
            log.exception("Unexpected error on %s", endpoint)
            status = 500
            return error_response(
                ApiError(
                    500,
                    "Unexpected server error; it is logged.",
                    "internal_error",
                    "Please report it with the server's log.",
                )
            )
        finally:
            if admitted:
                engine.release()
            with metrics.lock:
                metrics.in_flight -= 1
            metrics.observe(endpoint, status, time.perf_counter() - start)

    @app.post(REMOVEBG)
    async def removebg(request: HttpRequest) -> Response:
        query = dict(request.query_params)
        return await handle(request, REMOVEBG, query, "auto")

    @app.post("/api/remove")
    async def remove(request: HttpRequest) -> Response:
        params = dict(request.query_params)
        if "format" not in params:
            params["format"] = "png"
        return await handle(request, "/api/remove", params, "png")

    @app.get("/v1.0/account")
    async def account(request: HttpRequest) -> Response:
        """remove.bg's account and credits: none here, said in remove.bg's errors shape."""
        try:
            check_key(request)
        except ApiError as exc:
            return error_response(removebg_status(exc))
        return error_response(
            ApiError(
                404,
                "This server has no accounts or credits: every request is free.",
                "not_supported",
                "bgremover serve runs on your own machine; X-Credits-Charged is always 0.",
            )
        )

    @app.get("/healthz")
    async def healthz() -> Response:
        body = {
            "status": "shutting down" if state.draining else "ok",
            "model": settings.model,
            "precision": settings.precision,
            "providers": list(settings.providers),
            "workers": engine.workers,
            "queue": engine.capacity - engine.workers,
        }
        return JSONResponse(body, status_code=503 if state.draining else 200)

    @app.get("/metrics")
    async def metrics_endpoint(request: HttpRequest) -> Response:
        try:
            check_key(request)
        except ApiError as exc:
            return error_response(exc)
        return PlainTextResponse(
            metrics.text(engine), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    return app
