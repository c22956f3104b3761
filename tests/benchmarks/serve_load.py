"""Load on ``bgremover serve``, against the command line's batch on the same photos.

    python tests/benchmarks/serve_load.py FOLDER [FOLDER...] --requests 2000 --concurrency 16
    python tests/benchmarks/serve_load.py FOLDER... --requests 500 --concurrency 16 --faults
    python tests/benchmarks/serve_load.py FOLDER... [--limit N] [--quick]

Starts the server (a subprocess), warms it with each photo once, then sends the photos
round-robin (alternately to /api/remove and /v1.0/removebg, PNG cutouts) from an
asyncio httpx client with at most ``--concurrency`` requests at once. Prints
throughput, latency percentiles, status counts and the server's RSS at request 200
and at the end. Then times ``bgremover remove`` on the same photos (each photo
``--cli-copies`` times, so that its start-up is spread over many images) and prints
the server/CLI throughput ratio. Every 200 is checked: all answers for one photo are
the same bytes, and those decode to the CLI's output pixels for that photo.

``--faults`` mixes in, one request in five: truncated files (400), a 900-megapixel PNG
of a few KB (400, remove.bg's status), a 60 MB body (413), malformed multipart (400),
good photos uploaded slowly (200, checked like the others), a looping EPS (400: never
given to Ghostscript), a photo in a part without a file name (200, checked), the photo
given twice (400), a body trickled without the API key (403 within a few seconds) and an
upload trickled past the server's ``--timeout`` (408). The server then needs a key,
which every other request sends, and runs with ``--timeout`` ``--fault-timeout``.
Each fault is answered with its status within its limit, or counts as wrong.

``--strace`` runs the server under ``strace -f -e trace=connect`` and counts every
``connect()`` to anything but loopback or a unix socket (there must be none).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import hashlib
import io
import math
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import httpx
import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import budget  # noqa: E402
from tracing import contacts, is_local  # noqa: E402

from bgremover.files.imaging import walk_images  # noqa: E402
from bgremover.serve import DISCARD_SECONDS  # noqa: E402

KEY = "load-test-key"
LOOPING_EPS = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 64 64\n{ } loop\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def png_declaring(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    packer = zlib.compressobj(9)
    row = b"\0" * (1 + (width + 7) // 8)
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def start_server(args: argparse.Namespace, port: int, trace: Path | None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "bgremover", "serve", "--port", str(port), "-m", args.model]
    cmd += ["--queue", str(args.queue if args.queue is not None else args.concurrency)]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    if args.faults:
        cmd += ["--api-key", KEY, "--timeout", str(args.fault_timeout)]
    if trace is not None:
        cmd = [
            "strace",
            "-f",
            "--seccomp-bpf",
            "-qq",
            "-e",
            "trace=connect",
            "-o",
            str(trace),
            *cmd,
        ]
    proc = subprocess.Popen(cmd, cwd=ROOT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the server exited before it was ready")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not start within 180 s")


class _Pid:
    def __init__(self, pid: int) -> None:
        self.pid = pid

    def send_signal(self, sig: int) -> None:
        os.kill(self.pid, sig)


def server_pid(proc: subprocess.Popen, traced: bool):
    """What to signal to stop the server: the process, or under strace its one child
    (strace does not pass SIGTERM on; it exits when the server does)."""
    if not traced:
        return proc
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    return _Pid(int(children[0]))


def rss_of(text: str) -> int:
    for line in text.splitlines():
        if line.startswith("process_resident_memory_bytes "):
            return int(float(line.split()[1]))
    return -1


class Load:
    def __init__(self, args, photos: list[Path], url: str) -> None:
        self.args = args
        self.photos = photos
        self.data = [p.read_bytes() for p in photos]
        self.url = url
        self.statuses: collections.Counter = collections.Counter()
        self.latencies: list[float] = []
        self.hashes: dict[int, set[str]] = collections.defaultdict(set)
        self.samples: dict[int, bytes] = {}
        self.wrong: list[str] = []
        self.rss_200 = -1
        self.done = 0
        self.estimate: budget.Estimate | None = None
        bomb = png_declaring(30000, 30000)
        self.faults = [
            ("truncated", 400),
            ("bomb", 400),  # remove.bg's endpoint: 400 image_too_large
            ("huge body", 413),
            ("malformed multipart", 400),
            ("slow upload", 200),
            ("looping eps", 400),
            ("no file name", 200),
            ("image twice", 400),
            ("trickle without key", 403),
            ("past the timeout", 408),
        ]
        #: The seconds within which each fault must be answered (others: the timeout).
        self.within = {
            "looping eps": 10.0,
            "trickle without key": DISCARD_SECONDS + 5.0,
            "past the timeout": args.fault_timeout + 5.0,
        }
        self.bomb = bomb

    def plan(self, i: int) -> tuple[str, int, int]:
        """Request i: its kind, expected status and photo index."""
        photo = i % len(self.photos)
        if self.args.faults and i % 5 == 4:
            kind, status = self.faults[(i // 5) % len(self.faults)]
            return kind, status, photo
        return "good", 200, photo

    async def one(self, client: httpx.AsyncClient, i: int) -> None:
        kind, expected, photo = self.plan(i)
        data = self.data[photo]
        t0 = time.perf_counter()
        try:
            if kind == "good" and i % 2:
                r = await client.post(
                    "/v1.0/removebg",
                    files={"image_file": (self.photos[photo].name, data)},
                    data={"format": "png"},
                )
            elif kind == "good":
                r = await client.post("/api/remove", content=data)
            elif kind == "truncated":
                r = await client.post("/api/remove", content=data[: len(data) // 3])
            elif kind == "bomb":
                r = await client.post(
                    "/v1.0/removebg", files={"image_file": ("bomb.png", self.bomb)}
                )
            elif kind == "huge body":
                r = await client.post("/api/remove", content=b"\0" * 60_000_000)
            elif kind == "malformed multipart":
                r = await client.post(
                    "/v1.0/removebg",
                    content=b'--abc\r\nContent-Disposition: form-data; name="image_file"\r\n'
                    + data[:1000],
                    headers={"Content-Type": "multipart/form-data; boundary=abc"},
                )
            elif kind == "slow upload":  # the photo in 20 pieces over about a second

                async def slowly():
                    step = max(1, len(data) // 20)
                    for k in range(0, len(data), step):
                        await asyncio.sleep(0.05)
                        yield data[k : k + step]

                r = await client.post("/api/remove", content=slowly())
            elif kind == "looping eps":
                r = await client.post(
                    "/v1.0/removebg", files={"image_file": ("loop.eps", LOOPING_EPS)}
                )
            elif kind in ("no file name", "image twice"):
                name = self.photos[photo].name
                parts = [(b'name="image_file"', data), (b'name="format"', b"png")]
                if kind == "image twice":
                    parts.insert(0, (b'name="image_file"; filename="%s"' % name.encode(), data))
                body = b"".join(
                    b"--xyz\r\nContent-Disposition: form-data; %s\r\n\r\n%s\r\n" % part
                    for part in parts
                )
                r = await client.post(
                    "/v1.0/removebg",
                    content=body + b"--xyz--\r\n",
                    headers={"Content-Type": "multipart/form-data; boundary=xyz"},
                )
            elif kind == "trickle without key":
                r = None
                status = await self.trickle(with_key=False)
            else:  # past the timeout: the same trickle with the key
                r = None
                status = await self.trickle(with_key=True)
            if r is not None:
                status = r.status_code
        except httpx.HTTPError as exc:
            status = f"transport error ({type(exc).__name__})"
            r = None
        seconds = time.perf_counter() - t0
        self.latencies.append(seconds)
        self.statuses[status] += 1
        if status != expected and not (status == 429 and not self.args.faults):
            self.wrong.append(f"request {i} ({kind}): {status}, expected {expected}")
        elif seconds > self.within.get(kind, math.inf):
            self.wrong.append(f"request {i} ({kind}): answered after {seconds:.1f} s")
        if status == 200 and r is not None:
            self.hashes[photo].add(hashlib.sha256(r.content).hexdigest())
            self.samples.setdefault(photo, r.content)
        self.done += 1
        if self.estimate is not None:
            self.estimate.tick()
        if self.done == 200:
            self.rss_200 = rss_of((await client.get("/metrics")).text)

    async def trickle(self, with_key: bool) -> int | str:
        """A body of 5 MB announced and sent 100 bytes at a time: the answer's status."""
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        head = (
            "POST /v1.0/removebg HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n"
            "Content-Type: multipart/form-data; boundary=b\r\n"
            + (f"X-Api-Key: {KEY}\r\n" if with_key else "")
            + "\r\n"
        )
        writer.write(head.encode())
        answer = b""
        give_up = time.monotonic() + self.args.fault_timeout + 30
        try:
            while time.monotonic() < give_up:
                with contextlib.suppress(OSError):
                    writer.write(b"x" * 100)
                    await writer.drain()
                with contextlib.suppress(asyncio.TimeoutError):
                    answer = await asyncio.wait_for(reader.read(65536), 0.1)
                    break
        finally:
            writer.close()
        try:
            return int(answer.split(b" ", 2)[1])
        except (IndexError, ValueError):
            return f"no answer ({answer[:40]!r})"

    async def run(self, n: int) -> float:
        limits = httpx.Limits(max_connections=self.args.concurrency)
        headers = {"X-Api-Key": KEY} if self.args.faults else {}
        async with httpx.AsyncClient(
            base_url=self.url, timeout=300, limits=limits, headers=headers
        ) as client:
            for k in range(len(self.photos)):  # warm-up: each photo once
                await client.post("/api/remove", content=self.data[k])
            queue: asyncio.Queue = asyncio.Queue()
            for i in range(n):
                queue.put_nowait(i)

            async def worker():
                while not queue.empty():
                    await self.one(client, queue.get_nowait())

            t0 = time.perf_counter()
            self.estimate = budget.Estimate(
                n, "requests", first=self.args.concurrency, then=", then the CLI batch"
            )
            await asyncio.gather(*(worker() for _ in range(self.args.concurrency)))
            elapsed = time.perf_counter() - t0
            self.rss_end = rss_of((await client.get("/metrics")).text)
        return elapsed


def cli_batch(args, photos: list[Path], out: Path) -> tuple[float, int]:
    """``bgremover remove`` on every photo, ``--cli-copies`` times (links): seconds, images."""
    src = out / "in"
    for copy in range(args.cli_copies):
        folder = src / f"copy{copy}"
        folder.mkdir(parents=True)
        for k, p in enumerate(photos):
            (folder / f"{k:03d}_{p.name}").symlink_to(p.resolve())
    cmd = [sys.executable, "-m", "bgremover", "remove", str(src), "-o", str(out / "out")]
    cmd += ["-m", args.model, "-q"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT)
    return time.perf_counter() - t0, len(photos) * args.cli_copies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--queue", type=int, default=None, help="server --queue (default: concurrency)"
    )
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--model", default="u2netp")
    parser.add_argument("--faults", action="store_true")
    parser.add_argument(
        "--fault-timeout", type=float, default=30.0, help="server --timeout with --faults"
    )
    parser.add_argument("--strace", action="store_true", help="count outbound connect() calls")
    parser.add_argument("--cli-copies", type=int, default=4)
    budget.add_arguments(parser, "requests (caps --requests)", {"limit": 50, "cli_copies": 1})
    args = budget.parse_args(parser)
    if args.limit:
        args.requests = min(args.requests, args.limit)

    photos = [p for folder in args.folders for p in walk_images(folder)]
    if not photos:
        raise SystemExit("no photos in the folders given")
    print(f"{len(photos)} photos, {args.requests} requests, concurrency {args.concurrency}"
          + (", with faults" if args.faults else ""))  # fmt: skip
    # The model is fetched first, untraced: a download the user asks for is the one
    # connection bgremover makes, and the count is of what the server does on its own.
    subprocess.run([sys.executable, "-m", "bgremover", "models", "pull", args.model], check=True)
    port = free_port()
    trace = Path(tempfile.mkdtemp(prefix="serve-load-trace-")) / "connect.log"
    proc = start_server(args, port, trace if args.strace else None)
    try:
        load = Load(args, photos, f"http://127.0.0.1:{port}")
        elapsed = asyncio.run(load.run(args.requests))
    finally:
        server_pid(proc, traced=args.strace).send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
    good = load.statuses[200]
    lat = sorted(load.latencies)

    def pct(q: float) -> float:
        return lat[min(len(lat) - 1, int(q * len(lat)))]

    print(f"server: {good} images in {elapsed:.1f} s = {good / elapsed:.2f} images/s")
    print(f"latency p50 {pct(0.5):.3f} s, p95 {pct(0.95):.3f} s, p99 {pct(0.99):.3f} s, "
          f"mean {statistics.mean(lat):.3f} s")  # fmt: skip
    print("statuses:", dict(sorted(load.statuses.items(), key=str)))
    growth = (load.rss_end - load.rss_200) / 1e6
    print(f"server RSS at request 200: {load.rss_200 / 1e6:.1f} MB, at the end: "
          f"{load.rss_end / 1e6:.1f} MB (growth {growth:+.1f} MB); exit code {code}")  # fmt: skip

    if args.strace:
        outbound = [c for c in contacts(trace) if not is_local(c)]
        print(f"connect() calls to anything but loopback or unix sockets: {len(outbound)}")
        load.wrong += [f"outbound: {c.line.strip()}" for c in outbound]

    with tempfile.TemporaryDirectory(prefix="serve-load-") as tmp:
        seconds, images = cli_batch(args, photos, Path(tmp))
        cli_rate = images / seconds
        print(f"CLI batch: {images} images in {seconds:.1f} s = {cli_rate:.2f} images/s "
              "(process start and model load included)")  # fmt: skip
        print(f"server/CLI throughput: {good / elapsed / cli_rate:.2f}x")
        outputs = {p.name.split("_", 1)[0]: p for p in (Path(tmp) / "out").rglob("*.png")
                   if p.parent.name == "copy0"}  # fmt: skip
        mismatched = 0
        for k, content in sorted(load.samples.items()):
            if len(load.hashes[k]) != 1:
                load.wrong.append(f"{photos[k].name}: {len(load.hashes[k])} different answers")
            expected = np.asarray(Image.open(outputs[f"{k:03d}"]))
            got = np.asarray(Image.open(io.BytesIO(content)))
            if got.shape != expected.shape or not np.array_equal(got, expected):
                mismatched += 1
                load.wrong.append(f"{photos[k].name}: pixels differ from the CLI's output")
        print(f"checked: {good} good answers for {len(load.samples)} photos, "
              f"{mismatched} differ from the CLI's pixels")  # fmt: skip
    for line in load.wrong[:20]:
        print("WRONG:", line)
    print(f"{len(load.wrong)} wrong answers" if load.wrong else "every answer as expected")
    return 1 if load.wrong or code != 0 else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
