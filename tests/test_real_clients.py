"""Four real remove.bg clients, as published, against the real ``bgremover serve`` on
127.0.0.1: PyPI's ``removebg`` 0.04 and ``rembgpy`` 1.0.1, npm's ``removebg-wrapper``
1.0.3 and ``remove.bg`` 1.3.0. Only the URL each one calls is changed (the module
constant for the Python ones, the one HTTP call wrapped by a shim for the npm ones);
every call they offer is run as a user would run it, and what they write is compared,
pixel for pixel, with the command line's output for the same options.

The clients come from PyPI and npm during the test run, pinned (tests/clients/:
requirements.txt, package.json and package-lock.json), and are installed into the tests'
kept cache (``pip install --target``, apart from the project's environment, and ``npm ci``;
see ``conftest.kept_cache``), where later runs and clones find them. Without the registry
(or without npm) their tests skip, unless ``CI`` is set: there a failure to install fails.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import DATA, assert_masks_close, kept_cache
from conftest import cli as bgremover_cli

pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

# After the skips: test_serve needs httpx.
from test_serve import Server, running

CLIENTS = Path(__file__).resolve().parent / "clients"
CHELSEA = DATA / "skimage_chelsea.png"  # 451 x 300: under remove.bg's 0.25 MP sizes
ROCKET = DATA / "skimage_rocket.jpg"  # 640 x 427: over them, so "regular" scales it down
KEY = "client-test-key"
#: The URL every one of the four clients calls (checked: the shim and the patched
#: constant see it, so a client that changed its URL would be noticed).
REMOVE_BG_URL = "https://api.remove.bg/v1.0/removebg"
#: remove.bg's "preview"/"small"/"regular" output size, in pixels.
QUARTER_MP = 250_000
#: A size limit not to check (a crop or a shadow decides the output's size).
ANY_SIZE = -1
RUN_TIMEOUT = 300


# --- installing the clients ----------------------------------------------------------


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _reachable(url: str) -> bool:
    """Whether a registry answers at all (any HTTP status counts)."""
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=15).close()
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False
    return True


def _cache_root(config: pytest.Config, factory: pytest.TempPathFactory) -> Path:
    """The tests' kept cache (conftest.kept_cache), so a new clone finds them too."""
    root = kept_cache() / "clients"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only cache: this run's own
        return factory.mktemp("real-clients")
    return root


def _key(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:16]


def _not_installed(what: str, registry: str | None, log: str) -> None:
    """Skip (registry unreachable, CI not set) or fail, saying why."""
    if not _ci() and (registry is None or not _reachable(registry)):
        where = f"{registry} cannot be reached" if registry else "npm is not installed"
        pytest.skip(f"{what} could not be installed: {where} (CI is not set; under CI it fails)")
    pytest.fail(f"{what} could not be installed:\n{log}", pytrace=False)


def _install(target: Path, command: list[str], prepare=None) -> str | None:
    """Run ``command`` (with ``{dir}`` as a fresh folder) unless ``target`` is complete;
    the folder becomes ``target`` only when it succeeded. Returns the log of a failure."""
    if (target / ".complete").is_file():
        return None
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    if prepare:
        prepare(partial)
    try:
        proc = subprocess.run(
            [part.replace("{dir}", str(partial)) for part in command],
            cwd=partial,
            capture_output=True,
            text=True,
            timeout=900,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(partial, ignore_errors=True)
        return f"{' '.join(command)}: {exc}"
    if proc.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        return f"{' '.join(command)}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    (partial / ".complete").write_text(" ".join(command) + "\n", encoding="utf-8")
    try:
        partial.rename(target)
    except OSError:  # another run put it there first
        shutil.rmtree(partial, ignore_errors=True)
    return None


@pytest.fixture(scope="module")
def python_clients(request: pytest.FixtureRequest, tmp_path_factory) -> Path:
    """A folder holding removebg and rembgpy (and the requests they run on), for PYTHONPATH."""
    requirements = CLIENTS / "requirements.txt"
    version = f"{sys.version_info[0]}.{sys.version_info[1]} {platform.machine()} {sys.platform}"
    key = _key(requirements.read_bytes(), version.encode())
    target = _cache_root(request.config, tmp_path_factory) / f"python-{key}"
    command = [sys.executable, "-m", "pip", "install", "--target", "{dir}", "--no-input"]
    command += ["--disable-pip-version-check", "--no-warn-script-location"]
    failure = _install(target, [*command, "-r", str(requirements)])
    if failure:
        index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/")
        _not_installed("The PyPI clients (removebg, rembgpy)", index, failure)
    return target


@pytest.fixture(scope="module")
def npm_clients(request: pytest.FixtureRequest, tmp_path_factory) -> Path:
    """A folder whose node_modules holds remove.bg and removebg-wrapper, as locked."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        _not_installed("The npm clients (remove.bg, removebg-wrapper)", None, "no npm/node")
    manifest, lock = CLIENTS / "package.json", CLIENTS / "package-lock.json"
    key = _key(manifest.read_bytes(), lock.read_bytes())
    target = _cache_root(request.config, tmp_path_factory) / f"npm-{key}"

    def prepare(folder: Path) -> None:
        shutil.copy(manifest, folder / "package.json")
        shutil.copy(lock, folder / "package-lock.json")

    command = [npm, "ci", "--prefix", "{dir}", "--ignore-scripts", "--no-audit", "--no-fund"]
    failure = _install(target, command, prepare)
    if failure:
        registry = subprocess.run(
            [npm, "config", "get", "registry"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
        _not_installed(
            "The npm clients (remove.bg, removebg-wrapper)",
            registry or "https://registry.npmjs.org/",
            failure,
        )
    return target


# --- the server, and what the command line makes -------------------------------------


@pytest.fixture(scope="module")
def server(u2netp_path: Path) -> Iterator[Server]:
    with running("--api-key", KEY) as s:
        yield s


class Cli:
    """``bgremover remove PHOTO -o OUT [OPTIONS]`` (in this process), each once per module:
    the outputs the clients' answers are compared with."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.made: dict[tuple, Path] = {}

    def output(self, photo: Path, *options: str, ext: str = "png") -> Path:
        key = (photo, options, ext)
        if key not in self.made:
            out = self.folder / f"cli-{len(self.made)}.{ext}"
            bgremover_cli(
                "remove", str(photo), "-o", str(out), "-m", "u2netp", "-q", *options, check=True
            )
            self.made[key] = out
        return self.made[key]


@pytest.fixture(scope="module")
def cli(u2netp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Cli:
    return Cli(tmp_path_factory.mktemp("cli-outputs"))


def assert_same_image(actual: Path | bytes, expected: Path, where: Path, name: str) -> None:
    """The same format, mode and pixels (decoded) as the command line's output."""
    with Image.open(actual if isinstance(actual, Path) else io.BytesIO(actual)) as got:
        got_format, got_mode, got_pixels = got.format, got.mode, np.asarray(got)
    with Image.open(expected) as want:
        want_format, want_mode, want_pixels = want.format, want.mode, np.asarray(want)
    assert (got_format, got_mode) == (want_format, want_mode), f"{name}: format and mode"
    assert_masks_close(got_pixels, want_pixels, where, name)


def image_size(source: Path | bytes) -> tuple[int, int]:
    with Image.open(source if isinstance(source, Path) else io.BytesIO(source)) as img:
        return img.size


def limited_options(photo: Path, limit: int | None, output: Path | bytes) -> tuple[str, ...]:
    """The command line's ``--max-size`` for remove.bg's size limit (in pixels) on
    ``photo``, after checking that ``output`` obeys it: at most ``limit`` pixels, its long
    side within a pixel of the most the limit allows (remove.bg's sizes are pixel counts,
    the rounding of the short side is the server's)."""
    width, height = image_size(photo)
    got = image_size(output)
    if limit == ANY_SIZE:
        return ()
    if limit is None or width * height <= limit:
        assert got == (width, height), f"{got}: the photo's own size was expected"
        return ()
    assert got[0] * got[1] <= limit, f"{got} holds more than {limit} pixels"
    ideal = math.floor(max(width, height) * math.sqrt(limit / (width * height)))
    assert ideal - 1 <= max(got) <= ideal, f"{got}: long side {ideal} expected (±1)"
    assert abs(got[0] / got[1] - width / height) < 0.01, f"{got}: not the photo's shape"
    return ("--max-size", str(max(got)))


# --- running a client ----------------------------------------------------------------

PYTHON_DRIVER = """\
import base64, importlib, json, sys
import requests

spec = json.load(open(sys.argv[1], encoding="utf-8"))
module = importlib.import_module(spec["module"])
report = {"file": module.__file__, "requests": requests.__file__}
report["original_url"] = getattr(module, spec["constant"])
setattr(module, spec["constant"], spec["url"])
client = getattr(module, spec["class"])(spec["key"], spec["log"])
args = []
for arg in spec["args"]:
    if isinstance(arg, dict):  # the base64 of a file, as bytes or as text
        data = base64.b64encode(open(arg["b64_of"], "rb").read())
        arg = data.decode("ascii") if arg["as"] == "str" else data
    args.append(arg)
try:
    report["returned"] = getattr(client, spec["method"])(*args, **spec["kwargs"])
except requests.HTTPError as exc:
    report["status"] = exc.response.status_code
    report["body"] = exc.response.text
json.dump(report, open(spec["report"], "w", encoding="utf-8"))
"""

NODE_SHIM = """\
// One call of an npm remove.bg client, its one HTTP call pointed at the test's server.
const fs = require("fs");
const { createRequire } = require("module");
const [prefix, serverUrl, clientName, callFile, reportFile] = process.argv.slice(2);
const entry = require.resolve(clientName, { paths: [prefix] });
const clientRequire = createRequire(entry);  // what the client's own require() finds
const report = { entry, urls: [] };
const pointed = (url) => { report.urls.push(url); return serverUrl; };
if (clientName === "removebg-wrapper") {
  const request = clientRequire("request");
  const post = request.post;
  request.post = (options, callback) => post({ ...options, url: pointed(options.url) }, callback);
} else {
  const unirest = clientRequire("unirest");
  const post = unirest.post;
  unirest.post = (url, ...rest) => post(pointed(url), ...rest);
}
process.on("exit", () => fs.writeFileSync(reportFile, JSON.stringify(report)));
const call = JSON.parse(fs.readFileSync(callFile, "utf8"));
const client = require(entry);
Promise.resolve(client[call.method](...call.args)).then(
  (result) => { report.result = result === undefined ? null : result; },
  (error) => { report.error = error === undefined ? null : error; process.exitCode = 3; },
);
"""


def _loopback_env() -> dict[str, str]:
    """The environment with no proxy in the way of 127.0.0.1."""
    env = dict(os.environ)
    for name in ("NO_PROXY", "no_proxy"):
        env[name] = ",".join(filter(None, [env.get(name, ""), "127.0.0.1", "localhost"]))
    return env


def run_python_client(
    clients: Path,
    server: Server,
    where: Path,
    module: str,
    constant: str,
    cls: str,
    method: str,
    *args,
    **kwargs,
) -> dict:
    spec = {
        "module": module,
        "constant": constant,
        "class": cls,
        "method": method,
        "args": list(args),
        "kwargs": kwargs,
        "url": f"{server.url}/v1.0/removebg",
        "key": KEY,
        "log": str(where / "client-errors.log"),
        "report": str(where / "report.json"),
    }
    (where / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    env = {**_loopback_env(), "PYTHONPATH": str(clients), "PYTHONNOUSERSITE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", PYTHON_DRIVER, str(where / "spec.json")],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert proc.returncode == 0, f"{module}.{method}: exit {proc.returncode}\n{proc.stderr}"
    report = json.loads((where / "report.json").read_text(encoding="utf-8"))
    assert report["original_url"] == REMOVE_BG_URL
    for name in ("file", "requests"):  # the pinned copies, not the venv's
        assert Path(report[name]).resolve().is_relative_to(clients.resolve()), report[name]
    return report


def run_npm_client(clients: Path, server: Server, where: Path, name: str, method: str, *args):
    (where / "call.json").write_text(json.dumps({"method": method, "args": args}), "utf-8")
    (where / "shim.js").write_text(NODE_SHIM, encoding="utf-8")
    proc = subprocess.run(
        [
            shutil.which("node") or "node",
            str(where / "shim.js"),
            str(clients),
            f"{server.url}/v1.0/removebg",
            name,
            str(where / "call.json"),
            str(where / "report.json"),
        ],
        cwd=where,
        env=_loopback_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    report_file = where / "report.json"
    report = json.loads(report_file.read_text("utf-8")) if report_file.is_file() else {}
    report.update(returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)
    assert Path(report.get("entry", clients)).resolve().is_relative_to(clients.resolve())
    assert report.get("urls") == [REMOVE_BG_URL], report
    return report


def copy_photo(photo: Path, where: Path) -> Path:
    """The photo in the test's own folder (removebg writes its output next to it)."""
    return Path(shutil.copy(photo, where / photo.name))


def assert_refused(status: int, body: str) -> None:
    """A 400 with remove.bg's error body: what a client shows its user."""
    assert status == 400, body
    errors = json.loads(body)["errors"]
    assert errors and errors[0]["title"], body


# --- PyPI: removebg 0.04 -------------------------------------------------------------

REMOVEBG = ("removebg.removebg", "API_ENDPOINT", "RemoveBg")


def removebg(clients, server, where, method, *args, **kwargs) -> dict:
    return run_python_client(clients, server, where, *REMOVEBG, method, *args, **kwargs)


@pytest.mark.model
@pytest.mark.parametrize(
    ("photo", "kwargs", "options", "ext", "limit"),
    [
        # size defaults to "regular" (0.25 MP): the Chelsea photo is under it
        (CHELSEA, {}, (), "png", QUARTER_MP),
        # a colour: no transparency left, so format "auto" is JPEG; the rocket is scaled
        (ROCKET, {"bg_color": "81d4fa"}, ("-b", "#81d4fa"), "jpg", QUARTER_MP),
        (ROCKET, {"size": "full"}, (), "png", None),
        (ROCKET, {"size": "hd"}, (), "png", 4_000_000),
    ],
    ids=["default", "bg_color", "size-full", "size-hd"],
)
def test_removebg_file(
    python_clients, server, cli, tmp_path, photo, kwargs, options, ext, limit
) -> None:
    source = copy_photo(photo, tmp_path)
    report = removebg(
        python_clients, server, tmp_path, "remove_background_from_img_file", str(source), **kwargs
    )
    assert "status" not in report, report
    written = Path(f"{source}_no_bg.png")  # the client's own naming: next to the photo
    assert written.is_file(), list(tmp_path.iterdir())
    size_options = limited_options(photo, limit, written)
    expected = cli.output(photo, *options, *size_options, ext=ext)
    assert_same_image(written, expected, tmp_path, "removebg-file")


@pytest.mark.model
@pytest.mark.parametrize(
    ("photo", "kwargs", "options", "ext"),
    [
        (CHELSEA, {}, (), "png"),
        (CHELSEA, {"bg_color": "green"}, ("-b", "green"), "jpg"),
    ],
    ids=["default", "bg_color-name"],
)
def test_removebg_base64(python_clients, server, cli, tmp_path, photo, kwargs, options, ext):
    out = tmp_path / "no-bg.png"
    report = removebg(
        python_clients,
        server,
        tmp_path,
        "remove_background_from_base64_img",
        {"b64_of": str(photo), "as": "str"},
        new_file_name=str(out),
        **kwargs,
    )
    assert "status" not in report, report
    assert out.is_file()
    assert_same_image(out, cli.output(photo, *options, ext=ext), tmp_path, "removebg-b64")


@pytest.mark.model
def test_removebg_url_is_refused_in_removebg_s_words(python_clients, server, tmp_path) -> None:
    """This server fetches no URL: the client gets remove.bg's 400 (requests' HTTPError)."""
    report = removebg(
        python_clients,
        server,
        tmp_path,
        "remove_background_from_img_url",
        "https://example.com/photo.jpg",
        new_file_name=str(tmp_path / "no-bg.png"),
    )
    assert_refused(report.get("status"), report.get("body", ""))
    assert not (tmp_path / "no-bg.png").exists()


# --- PyPI: rembgpy 1.0.1 -------------------------------------------------------------
#
# Every call sends remove.bg's defaults for the parameters bgremover has no use for
# (type=auto, type_level=none, roi=0 0 100% 100%, scale=original, position=original,
# semitransparency=true) and crop=false, add_shadow=false, format=auto, channels=rgba.
# Its file upload (remove_img) is shadowed by its URL call of the same name.

REMBGPY = ("rembgpy.bg", "base_url", "RemBg")


@pytest.mark.model
@pytest.mark.parametrize(
    ("photo", "kwargs", "options", "ext", "limit"),
    [
        (CHELSEA, {}, (), "png", QUARTER_MP),
        (ROCKET, {"bg": "81d4fa", "bg_type": "color"}, ("-b", "#81d4fa"), "jpg", QUARTER_MP),
        (ROCKET, {"size": "preview"}, (), "png", QUARTER_MP),
        (ROCKET, {"size": "full"}, (), "png", None),
        (CHELSEA, {"format": "jpg"}, ("-b", "white"), "jpg", None),  # remove.bg: white
        (CHELSEA, {"format": "png", "bg": "fff", "bg_type": "color"}, ("-b", "#fff"), "png", None),
        (CHELSEA, {"channels": "alpha"}, ("--mask-only",), "png", None),
        (CHELSEA, {"crop": "10px"}, ("--crop", "10"), "png", ANY_SIZE),
        (CHELSEA, {"shadow": True}, ("--shadow",), "png", ANY_SIZE),
    ],
    ids=[
        "default",
        "bg_color",
        "size-preview",
        "size-full",
        "format-jpg",
        "format-png-bg_color",
        "channels-alpha",
        "crop-margin",
        "shadow",
    ],
)
def test_rembgpy_base64(
    python_clients, server, cli, tmp_path, photo, kwargs, options, ext, limit
) -> None:
    out = tmp_path / "removed-bg.png"
    report = run_python_client(
        python_clients,
        server,
        tmp_path,
        *REMBGPY,
        "remove_b64",
        {"b64_of": str(photo), "as": "bytes"},  # as its README: base64.b64encode's bytes
        nfn=str(out),
        **kwargs,
    )
    assert "status" not in report, report
    assert report["returned"] == "[*] Process finished."
    assert out.is_file()
    size_options = limited_options(photo, limit, out)
    expected = cli.output(photo, *options, *size_options, ext=ext)
    assert_same_image(out, expected, tmp_path, "rembgpy-b64")


@pytest.mark.model
def test_rembgpy_remove_img_sends_a_url_and_is_refused(python_clients, server, tmp_path) -> None:
    """remove_img(path) sends image_url=path (the shadowing): refused, as remove.bg
    refuses a URL it cannot fetch; the client raises instead of writing a file."""
    out = tmp_path / "removed-bg.png"
    report = run_python_client(
        python_clients,
        server,
        tmp_path,
        *REMBGPY,
        "remove_img",
        str(copy_photo(CHELSEA, tmp_path)),
        nfn=str(out),
    )
    assert_refused(report.get("status"), report.get("body", ""))
    assert not out.exists()


# --- npm: removebg-wrapper 1.0.3 -----------------------------------------------------


@pytest.mark.model
def test_removebg_wrapper_file(npm_clients, server, cli, tmp_path) -> None:
    """rbFromImageFile: multipart image_file and size=auto; writes ./output.png."""
    report = run_npm_client(
        npm_clients, server, tmp_path, "removebg-wrapper", "rbFromImageFile", str(ROCKET), KEY
    )
    assert report["returncode"] == 0 and not report["stderr"], report
    written = tmp_path / "output.png"
    assert written.is_file(), report
    assert image_size(written) == image_size(ROCKET)  # auto: the photo's own size
    assert_same_image(written, cli.output(ROCKET), tmp_path, "wrapper-file")


@pytest.mark.model
def test_removebg_wrapper_url_is_refused(npm_clients, server, tmp_path) -> None:
    report = run_npm_client(
        npm_clients,
        server,
        tmp_path,
        "removebg-wrapper",
        "rbFromImageUrl",
        "https://example.com/photo.jpg",
        KEY,
    )
    # Its only report of a failure: console.error('Error:', status, body).
    assert report["stderr"].startswith("Error: 400 "), report
    assert_refused(400, report["stderr"].removeprefix("Error: 400 ").strip())
    assert not (tmp_path / "output-2.png").exists()


# --- npm: remove.bg 1.3.0 ------------------------------------------------------------
#
# Sends Accept: application/json and reads {"data": {"result_b64": ...}}; its base64
# and URL calls send JSON bodies (crop and add_shadow as JSON booleans); size defaults
# to "preview"; it never sends a format (its own option is dropped).


def remove_bg(npm_clients, server, where, method, **options) -> dict:
    return run_npm_client(
        npm_clients, server, where, "remove.bg", method, {"apiKey": KEY, **options}
    )


def check_result(report: dict, out: Path) -> bytes:
    """The image of a resolved call: result.base64img, which it also wrote to out."""
    assert report["returncode"] == 0 and "error" not in report, report
    image = base64.b64decode(report["result"]["base64img"])
    assert out.read_bytes() == image
    return image


@pytest.mark.model
@pytest.mark.parametrize(
    ("photo", "options", "cli_options", "ext", "limit"),
    [
        (CHELSEA, {}, (), "png", QUARTER_MP),
        (ROCKET, {"bg_color": "81d4fa"}, ("-b", "#81d4fa"), "jpg", QUARTER_MP),
        (ROCKET, {"size": "full", "crop": True}, ("--crop",), "png", ANY_SIZE),
    ],
    ids=["default", "bg_color", "size-full-crop"],
)
def test_remove_bg_file(
    npm_clients, server, cli, tmp_path, photo, options, cli_options, ext, limit
):
    out = tmp_path / "out.img"
    report = remove_bg(
        npm_clients,
        server,
        tmp_path,
        "removeBackgroundFromImageFile",
        path=str(photo),
        outputFile=str(out),
        **options,
    )
    image = check_result(report, out)
    size_options = limited_options(photo, limit, image)
    expected = cli.output(photo, *cli_options, *size_options, ext=ext)
    assert_same_image(image, expected, tmp_path, "remove.bg-file")


@pytest.mark.model
@pytest.mark.parametrize(
    ("photo", "options", "cli_options", "ext", "limit"),
    [
        (CHELSEA, {}, (), "png", QUARTER_MP),
        (ROCKET, {}, (), "png", QUARTER_MP),  # preview: 0.25 MP
        (ROCKET, {"size": "full"}, (), "png", None),
        (CHELSEA, {"bg_color": "green"}, ("-b", "green"), "jpg", None),
        # a see-through colour leaves transparency: format "auto" stays PNG
        (CHELSEA, {"bg_color": "81d4fa80"}, ("-b", "#81d4fa80"), "png", None),
        (CHELSEA, {"crop": True, "crop_margin": "10%"}, ("--crop", "10%"), "png", ANY_SIZE),
        (CHELSEA, {"add_shadow": True}, ("--shadow",), "png", ANY_SIZE),
        (CHELSEA, {"channels": "alpha"}, ("--mask-only",), "png", None),
    ],
    ids=[
        "default",
        "size-preview",
        "size-full",
        "bg_color-name",
        "bg_color-alpha",
        "crop-margin",
        "add_shadow",
        "channels-alpha",
    ],
)
def test_remove_bg_base64(
    npm_clients, server, cli, tmp_path, photo, options, cli_options, ext, limit
) -> None:
    out = tmp_path / "out.img"
    report = remove_bg(
        npm_clients,
        server,
        tmp_path,
        "removeBackgroundFromImageBase64",
        base64img=base64.b64encode(photo.read_bytes()).decode("ascii"),
        outputFile=str(out),
        **options,
    )
    image = check_result(report, out)
    size_options = limited_options(photo, limit, image)
    expected = cli.output(photo, *cli_options, *size_options, ext=ext)
    assert_same_image(image, expected, tmp_path, "remove.bg-b64")


@pytest.mark.model
def test_remove_bg_reports_remove_bg_s_headers(npm_clients, server, tmp_path) -> None:
    """What the client reads of the answer's headers: the result's size (X-Width,
    X-Height), the credits charged and the rate limit, as remove.bg sends them."""
    out = tmp_path / "out.png"
    report = remove_bg(
        npm_clients,
        server,
        tmp_path,
        "removeBackgroundFromImageFile",
        path=str(CHELSEA),
        outputFile=str(out),
    )
    image = check_result(report, out)
    result = report["result"]
    width, height = image_size(image)
    assert (result.get("resultWidth"), result.get("resultHeight")) == (str(width), str(height))
    for name in ("creditsCharged", "rateLimit", "rateLimitRemaining", "rateLimitReset"):
        assert float(result.get(name) or "nan") >= 0, (name, result)


@pytest.mark.model
def test_remove_bg_url_is_refused(npm_clients, server, tmp_path) -> None:
    """The promise rejects with remove.bg's errors array (no URL is fetched)."""
    report = remove_bg(
        npm_clients,
        server,
        tmp_path,
        "removeBackgroundFromImageUrl",
        url="https://example.com/a.jpg",
    )
    assert report["returncode"] == 3, report
    errors = report.get("error")
    assert isinstance(errors, list) and errors and errors[0].get("title"), report
