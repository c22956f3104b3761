"""How much slow clients delay a normal request to ``bgremover serve``, on loopback.

    python tests/benchmarks/slow_clients.py [--uploads 50] [--headers 200] [--runs 7]
        [--limit N] [--quick]

Starts the server (a subprocess, u2netp, its default workers and queue), then times a
normal request (a 451x300 photo to /api/remove) ``--runs`` times with nobody else
connected, and ``--runs`` times while ``--uploads`` connections hold an upload open
(headers and 60 bytes of a 1 MB body, then nothing) and ``--headers`` connections never
end their headers. The two sets of runs are interleaved, and the attackers are opened
again before each run, so that each timed request meets all of them. Prints each run,
the medians and the delay (the difference of the medians), and how each attacking
connection ended (the status the server answered, and after how many seconds).

Bounded: each attacked run lasts until its request is answered (seconds), and the
attackers are then closed; the whole command takes about a minute at the defaults,
most of it waiting for the server to cut the attackers off at the end.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import socket
import statistics
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

import budget  # noqa: E402
from test_serve import CHELSEA, running  # noqa: E402
from test_serve_hostile import slow_headers, slow_upload  # noqa: E402


def timed_request(url: str, data: bytes) -> float:
    start = time.perf_counter()
    with httpx.Client(base_url=url, timeout=120) as c:
        response = c.post("/api/remove", content=data)
    assert response.status_code == 200, response.text
    return time.perf_counter() - start


def ending(sock: socket.socket, start: float, limit: float) -> str:
    """The status the server answered on ``sock`` (or "closed"/"open"), and when."""
    sock.settimeout(max(0.1, limit - (time.monotonic() - start)))
    with contextlib.suppress(OSError):
        data = sock.recv(65536)
        status = data.split(b"\r\n", 1)[0].decode(errors="replace")[9:12] if data else "closed"
        return f"{status} at {round(time.monotonic() - start):d} s"
    return "still open"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uploads", type=int, default=50)
    parser.add_argument("--headers", type=int, default=200)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--end-wait", type=float, default=90.0, help="seconds to wait for the cut-offs"
    )
    budget.add_arguments(parser, "runs (caps --runs)", {"limit": 2})
    args = budget.parse_args(parser, argv)
    if args.limit:
        args.runs = min(args.runs, args.limit)
    data = CHELSEA.read_bytes()
    with running() as server:
        timed_request(server.url, data)  # warm
        quiet, attacked = [], []
        sockets: list[socket.socket] = []
        then = f", then up to {args.end_wait:g} s (--end-wait) for the cut-offs"
        estimate = budget.Estimate(args.runs, "runs", then=then)
        for run in range(args.runs):
            quiet.append(timed_request(server.url, data))
            for sock in sockets:
                sock.close()
            opened = time.monotonic()
            sockets = [slow_upload(server.port) for _ in range(args.uploads)]
            sockets += [slow_headers(server.port) for _ in range(args.headers)]
            attacked.append(timed_request(server.url, data))
            print(f"run {run + 1}: alone {quiet[-1]:.3f} s, with {len(sockets)} slow clients "
                  f"{attacked[-1]:.3f} s", flush=True)  # fmt: skip
            estimate.tick()
        endings = collections.Counter(ending(s, opened, args.end_wait) for s in sockets)
        for sock in sockets:
            sock.close()
    alone, under = statistics.median(quiet), statistics.median(attacked)
    print(f"median alone {alone:.3f} s, with {args.uploads} slow uploads and {args.headers} "
          f"slow headers {under:.3f} s: delay {under - alone:+.3f} s")  # fmt: skip
    for what, count in sorted(endings.items()):
        print(f"  {count} slow connections: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
