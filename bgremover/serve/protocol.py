"""HTTP/1.1 on uvicorn's h11 protocol, with a time limit on a request's headers.

uvicorn closes a kept-alive connection that sends nothing for a few seconds, but not one
that has begun a request and never ends its headers: such connections stayed open as
long as their client held them. Here a connection must finish a request's headers
within HEADER_SECONDS of its first byte (or of being opened); else it is answered 408
and closed. The body has limits of its own (:mod:`.app`).
"""

import asyncio
from typing import Any

#: Seconds a client has to send a request's headers (Apache's RequestReadTimeout and
#: nginx's client_header_timeout default to 20 and 60; a client on loopback or a LAN
#: needs well under one).
HEADER_SECONDS = 10.0
_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"


def header_timeout_protocol(seconds: float = HEADER_SECONDS) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol class with the header time limit (uvicorn and h11 are
    imported here, when the server starts)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimeout(H11Protocol):
        header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self.watch()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self.watch()

        def connection_lost(self, exc: Exception | None) -> None:
            self.unwatch()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            # Between requests uvicorn's keep-alive limit applies, until the next byte.
            super().on_response_complete()
            self.unwatch()

        def waiting_for_headers(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def watch(self) -> None:
            """Start the clock while a request's headers are awaited; stop it once they
            have come."""
            if not self.waiting_for_headers():
                self.unwatch()
            elif self.header_timer is None and self.timeout_keep_alive_task is None:
                self.header_timer = self.loop.call_later(seconds, self.too_slow)

        def unwatch(self) -> None:
            if self.header_timer is not None:
                self.header_timer.cancel()
                self.header_timer = None

        def too_slow(self) -> None:
            self.header_timer = None
            if self.waiting_for_headers() and not self.transport.is_closing():
                self.transport.write(_TIMEOUT)
                self.transport.close()

    return HeaderTimeout
