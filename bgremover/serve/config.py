"""The server's settings and limits: the API key rule, the URL it is reached at, the
request limits' defaults and the megapixel limit that fits the machine's memory."""

import ipaddress
import math
import os
from dataclasses import dataclass

from ..errors import UsageError

API_KEY_ENV = "BGREMOVER_API_KEY"
DEFAULT_MAX_BODY_MB = 25.0  # remove.bg takes files up to 22 MB
DEFAULT_TIMEOUT = 120.0


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_of(host: str, port: int) -> str:
    """The URL clients use for ``host`` and ``port`` (an IPv6 address in brackets)."""
    try:
        ipv6 = ipaddress.ip_address(host.strip("[]")).version == 6
    except ValueError:
        ipv6 = False
    return f"http://[{host.strip('[]')}]:{port}" if ipv6 else f"http://{host}:{port}"


#: The server's memory per pixel of the image being worked on, at its peak (decode, mask,
#: refinement, composition and encoding), above the idle server's: 10.6 bytes measured
#: on a 60-megapixel PNG, 10.7 on a 245-megapixel one (2.6 GB over 0.4 GB idle). The
#: pixel budget lets only one image over DEFAULT_PIXELS_IN_FLIGHT be worked on at a
#: time, so an image at the megapixel limit is the worst case (tests/test_serve.py).
BYTES_PER_PIXEL = 11
#: The share of the machine's memory the worst-case image may take.
MEMORY_SHARE = 0.5


def memory_megapixels(total: int | None = None) -> float:
    """The default megapixel limit: the imaging default (250), lowered so that one image
    at the limit fits in MEMORY_SHARE of the machine's memory (``total`` bytes; read
    from the system when None, the imaging default where it cannot be read)."""
    from ..files.imaging import DEFAULT_MAX_MEGAPIXELS

    if total is None:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):
            return DEFAULT_MAX_MEGAPIXELS
    fits = MEMORY_SHARE * total / BYTES_PER_PIXEL / 1e6
    return float(min(DEFAULT_MAX_MEGAPIXELS, max(1, math.floor(fits))))


def api_key_for(host: str, given: str | None) -> str | None:
    """The key clients must send: ``given``, else $BGREMOVER_API_KEY; required off loopback."""
    key = given if given is not None else os.environ.get(API_KEY_ENV)
    key = key or None
    if key is None and not is_loopback(host):
        raise UsageError(
            f"Refusing to listen on {host} without an API key: anyone who can reach this "
            "machine could use it.",
            fix=f"Give --api-key KEY (or set {API_KEY_ENV}); clients send it as the "
            "X-Api-Key header. Or listen on 127.0.0.1 only.",
        )
    return key


@dataclass
class Settings:
    api_key: str | None
    max_body: int
    timeout: float
    model: str
    precision: str
    providers: tuple[str, ...]
