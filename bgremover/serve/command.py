"""``bgremover serve``: the options checked, the model loaded, uvicorn run until SIGTERM
with the drain on the first signal."""

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

from ..errors import UsageError
from .app import State, create_app
from .config import Settings, api_key_for, memory_megapixels, url_of
from .pool import Engine
from .protocol import header_timeout_protocol


def cmd_serve(args: Any) -> int:
    """``bgremover serve``: check the options, load the model, serve until SIGTERM."""
    try:
        import fastapi  # noqa: F401
        import python_multipart  # noqa: F401
        import uvicorn
    except ImportError as exc:
        raise UsageError(
            f"bgremover serve needs FastAPI and uvicorn, which are not installed ({exc}).",
            fix="Install them with: pip install 'bgremover[serve]'",
        ) from None
    from ..engine.batch import default_finishers
    from ..engine.budget import DEFAULT_PIXELS_IN_FLIGHT
    from ..engine.pipeline import EngineConfig, Remover
    from ..files.imaging import MAX_MEGAPIXELS_ENV, default_max_megapixels

    api_key = api_key_for(args.host, args.api_key)
    if args.max_body_mb <= 0 or args.timeout <= 0 or args.queue < 0:
        raise UsageError("--max-body-mb and --timeout are above 0, --queue is 0 or more.")
    workers = args.workers or default_finishers() + 1
    config = EngineConfig(
        args.model, args.precision, args.providers, args.threads, args.refine,
        int8_guard=args.int8_guard,
    )  # fmt: skip
    remover = Remover.from_config(config)
    info = remover.load()  # a model that cannot load fails here, before listening
    max_mp = args.max_megapixels
    if max_mp is None:
        max_mp = (
            default_max_megapixels() if MAX_MEGAPIXELS_ENV in os.environ else memory_megapixels()
        )
    engine = Engine(remover, workers, args.queue, max_mp, DEFAULT_PIXELS_IN_FLIGHT)
    settings = Settings(
        api_key,
        int(args.max_body_mb * 1e6),
        float(args.timeout),
        remover.spec.name,
        remover.precision,
        tuple(info.active),
    )
    state = State(engine, settings)
    app = create_app(state)

    class Server(uvicorn.Server):
        """uvicorn's server, that turns requests away with 503 once told to stop and
        exits 0 after draining (uvicorn re-raises the signal otherwise)."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            if state.draining:  # a second signal: stop listening now
                super().handle_exit(sig, frame)
                return
            # Keep listening while the admitted requests finish, so that requests that
            # arrive meanwhile get 503 with Retry-After instead of a refused connection.
            state.draining = True
            threading.Thread(
                target=self.drain, args=(sig, frame), name="bgremover-drain", daemon=True
            ).start()

        def drain(self, sig: int, frame: Any) -> None:
            deadline = time.monotonic() + settings.timeout * 1.5 + 5  # upload, then work
            while state.busy and time.monotonic() < deadline:
                time.sleep(0.05)
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            signals = (signal.SIGINT, signal.SIGTERM)
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in signals}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    uv_config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=int(settings.timeout * 1.5) + 5,
        http=header_timeout_protocol(),
        lifespan="off",
    )
    server = Server(uv_config)
    print(
        f"bgremover: serving {remover.spec.name} ({remover.precision}, "
        f"{', '.join(info.active)}) on {url_of(args.host, args.port)} with {engine.workers} "
        f"workers, {args.queue} waiting at most, images up to {max_mp:g} megapixels"
        + ("; API key required" if api_key else ""),
        flush=True,
    )
    try:
        server.run()
    finally:
        engine.pool.shutdown(wait=True, cancel_futures=True)
    if not server.started:
        raise UsageError(
            f"Could not listen on {args.host}:{args.port} (see the message above).",
            fix="Choose another --port, or stop the program that uses it.",
        )
    print("bgremover: stopped", flush=True)
    return 0
