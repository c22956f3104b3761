"""Reading ``strace -f`` logs: every address a run's processes connected or sent to, and
which of those cannot leave this machine. Used by the privacy tests and by the server's
load benchmark (``--strace``)."""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: Where the families that never leave this machine are named in strace's output.
LOCAL_FAMILIES = frozenset({"AF_UNIX", "AF_LOCAL", "AF_NETLINK", "AF_UNSPEC"})

_CALL = re.compile(r"^(?P<pid>\d+)\s+(?P<call>connect|sendto|sendmsg|sendmmsg)\((?P<args>.*)$")
_SOCKADDR = re.compile(r"\{sa_family=(?P<family>AF_\w+)(?P<rest>[^{}]*)\}")
_PORT = re.compile(r"sin6?_port=htons\((?P<port>\d+)\)")
_ADDRESS = re.compile(r'inet_addr\("(?P<v4>[^"]+)"\)|inet_pton\(AF_INET6, "(?P<v6>[^"]+)"')


@dataclass(frozen=True)
class Contact:
    """One system call that named an address to connect or send to."""

    pid: int
    call: str
    family: str
    address: str | None
    port: int | None
    line: str

    @property
    def where(self) -> str:
        return f"{self.family} {self.address}:{self.port}" if self.address else self.family


def contacts(log: Path | str) -> list[Contact]:
    """Every address named in a strace log (``-f``, one process or thread per line prefix),
    given as its file or its text.

    A call strace split in two (``<unfinished ...>``, then ``<... resumed>``) names its
    address in the first half. Sends without an address go where the socket's connect()
    went, which is listed already.
    """
    text = log.read_text(errors="replace") if isinstance(log, Path) else log
    found = []
    for line in text.splitlines():
        match = _CALL.match(line)
        if match is None:
            continue
        for sockaddr in _SOCKADDR.finditer(match["args"]):
            port = _PORT.search(sockaddr["rest"])
            address = _ADDRESS.search(sockaddr["rest"])
            found.append(
                Contact(
                    pid=int(match["pid"]),
                    call=match["call"],
                    family=sockaddr["family"],
                    address=(address["v4"] or address["v6"]) if address else None,
                    port=int(port["port"]) if port else None,
                    line=line,
                )
            )
    return found


def is_local(contact: Contact) -> bool:
    """True for what cannot leave this machine and is no DNS lookup."""
    if contact.family in LOCAL_FAMILIES:
        return True
    if contact.family not in ("AF_INET", "AF_INET6") or contact.address is None:
        return False
    if contact.port == 53:
        return False  # a DNS query, even to a resolver on loopback
    ip = ipaddress.ip_address(contact.address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def describe(found: Sequence[Contact]) -> str:
    counts = Counter(c.where for c in found)
    summary = ", ".join(f"{where} x{n}" for where, n in counts.most_common())
    lines = "\n".join(c.line[:240] for c in found[:12])
    return f"{len(found)} calls ({summary}):\n{lines}"
