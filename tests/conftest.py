"""Shared fixtures: a tiny synthetic ONNX model, the real u2netp (fp32 and int8), real
photos, a loopback model server, and a model cache of the test session's own."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

if TYPE_CHECKING:
    from bgremover.network.models import ModelSpec

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# Tests never touch the user's own model cache: every model the session needs (u2netp
# from its mirror, the int8 version made from it) goes into a folder of the session's
# own, which subprocesses (CLI and app runs) inherit through the environment.
_HOME = Path(tempfile.mkdtemp(prefix="bgremover-test-home-"))
os.environ["BGREMOVER_HOME"] = str(_HOME)
#: Where what the tests obtain or make at a cost (models and their int8 versions, the real
#: API clients) is kept between runs and clones, never in the user's own cache:
#: $BGREMOVER_TEST_CACHE, else the platform's cache folder's ``bgremover-tests``.
TEST_CACHE_ENV = "BGREMOVER_TEST_CACHE"


def kept_cache() -> Path:
    env = os.environ.get(TEST_CACHE_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("bgremover-tests", appauthor=False))


def _keepable(models: Path) -> dict[str, ModelSpec | None]:
    """The model files in ``models`` worth keeping between runs, by name: the registry's
    downloads (verified by their pinned hash when kept) and the int8 models made from
    them, under the name the store gives them today (fp32 hash, recipe and its version,
    ONNX Runtime's version, weight range), so a file made under another key is never
    used. The session's home starts with them, as it would after a first run."""
    from bgremover.network.models import REGISTRY
    from bgremover.network.prompt_models import PROMPT_MODELS
    from bgremover.network.quantize import RECIPES, int8_path
    from bgremover.network.store import ModelStore

    store = ModelStore(models.parent)
    specs = [s for s in REGISTRY.values() if not s.members and s.local_path is None]
    files = [f for p in PROMPT_MODELS.values() for f in p.files]
    keep: dict[str, ModelSpec | None] = {}
    for spec in [*specs, *files]:
        fp32 = models / spec.filename
        if not fp32.is_file():
            continue
        keep[spec.filename] = spec
        if spec in files:
            continue
        for recipe in RECIPES:
            keep[int8_path(store, spec, fp32, recipe).name] = None
    return keep


def _copy_models(source: Path, target: Path, verify: bool) -> None:
    """Copy the keepable models of ``source`` that ``target`` lacks (atomically)."""
    from bgremover.network.store import ModelStore

    if not source.is_dir():
        return
    keep = _keepable(source)
    target.mkdir(parents=True, exist_ok=True)
    store = ModelStore(source.parent)
    for name, spec in keep.items():
        path, there = source / name, target / name
        if not path.is_file() or there.is_file():
            continue
        if verify and spec is not None and not store.verify(spec, path, remember=False):
            continue
        part = there.with_name(f".{name}.{os.getpid()}.part")
        shutil.copyfile(path, part)
        os.replace(part, there)


@contextlib.contextmanager
def kept_models(name: str) -> Iterator[None]:
    """Obtain or make a model (``name`` for the lock) once per machine, not once per worker.

    Under ``-n`` each worker has a home of its own; without this, two workers that need
    the same model (IS-Net's int8 in test_best and test_gui_best, u2netp's int8 in most
    workers) each made it at the same time, on the same two cores. Here the first worker
    holds the kept cache's lock for ``name`` while it makes the model and keeps it at
    once; the next one waits, then finds it kept and copies it in.
    """
    from filelock import FileLock

    kept = kept_cache() / "models"
    try:
        kept.mkdir(parents=True, exist_ok=True)
        lock: contextlib.AbstractContextManager[object] = FileLock(kept / f".{name}.lock")
    except OSError:  # a read-only cache: this run makes its own
        lock = contextlib.nullcontext()
    with lock:
        with contextlib.suppress(OSError):
            _copy_models(kept, _HOME / "models", verify=False)
        yield
        with contextlib.suppress(OSError):
            _copy_models(_HOME / "models", kept, verify=True)


def kept_best() -> Path:
    """Best's models in the session's home, each obtained or made once per machine:
    IS-Net's file under its own lock (test_families needs it alone), then the int8 model
    Best runs it as under Best's. Returns the first model's path."""
    from bgremover import Remover
    from bgremover.network.store import ModelStore

    with kept_models("isnet-imgly"):
        ModelStore().ensure("isnet-imgly")
    with kept_models("best"):
        return Remover("best").model_path()


def pytest_configure(config: pytest.Config) -> None:
    """The session's home starts with the models an earlier run kept: the tests pay for
    a download or an int8 build once per machine, not once per run."""
    with contextlib.suppress(OSError):
        _copy_models(kept_cache() / "models", _HOME / "models", verify=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        help="the quick tier: leave out the tests marked slow or model (CONTRIBUTING.md)",
    )


#: ``-m "not slow"`` leaves out what needs Ray, a real X server, the real API clients or
#: strace, IS-Net or an int8 build (modules and fixtures below), and the tests marked
#: ``slow`` for the seconds they take of their own.
SLOW_MODULES = frozenset(
    {"test_distributed", "test_privacy", "test_real_clients", "test_startup", "test_best"}
)
SLOW_FIXTURES = frozenset({"u2netp_int8_path", "python_clients", "npm_clients"})
#: A test that asks for the real model is marked ``model``, whether or not it says so.
MODEL_FIXTURES = frozenset({"u2netp_path"})
#: Run first, in this order (``-n``; the rest keep their order, pyproject.toml's
#: ``--no-loadscope-reorder``): the files that hold IS-Net beside u2netp (a 2 GB peak of
#: their own, on top of the 1-2 GB of caches a worker holds by the end) and the longest
#: files, so that no worker is left with one when the other has finished. test_gui_best
#: comes after two other long files: with nothing kept yet, test_best makes Best's int8
#: IS-Net (kept_best), and the other worker works on those meanwhile instead of waiting.
FIRST_MODULES = (
    "test_best",
    "test_families",
    "test_distributed",
    "test_gui_best",
    "test_privacy",
    "test_serve_hostile",
    "test_real_clients",
)


def _module_name(item: pytest.Item) -> str:
    module = getattr(item, "module", None)
    return module.__name__ if module is not None else ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks what is slow or needs the real model; ``--quick`` leaves out both."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if _module_name(item) in SLOW_MODULES or SLOW_FIXTURES & fixtures:
            item.add_marker(pytest.mark.slow)
        if MODEL_FIXTURES & fixtures:
            item.add_marker(pytest.mark.model)
    first = {name: rank for rank, name in enumerate(FIRST_MODULES)}
    items.sort(key=lambda item: first.get(_module_name(item), len(first)))
    if config.getoption("quick"):
        kept, left = [], []
        for item in items:
            quick = not (item.get_closest_marker("slow") or item.get_closest_marker("model"))
            (kept if quick else left).append(item)
        config.hook.pytest_deselected(items=left)
        items[:] = kept


def pytest_unconfigure(config: pytest.Config) -> None:
    with contextlib.suppress(OSError):
        _copy_models(_HOME / "models", kept_cache() / "models", verify=True)
    shutil.rmtree(_HOME, ignore_errors=True)


#: This process's resident memory after the last clean-up (see pytest_runtest_teardown).
_RSS_AFTER_CLEANUP = [0]
#: Growth in a test that calls for a clean-up after it.
_RSS_GROWTH = 150 * 2**20


def _rss() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return 0


def _delete_later_now() -> None:
    """Deletes the Qt objects whose deleteLater() is pending, where an app exists."""
    if "PySide6" in sys.modules:
        from PySide6.QtCore import QCoreApplication, QEvent

        if QCoreApplication.instance() is not None:
            QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """What a test or a module held is handed back when it ends, not when the suite does.

    Widgets: pytest-qt closes them and asks Qt to delete them later (``deleteLater``), but
    only an event loop deletes them, and ``processEvents`` does not; with the reference
    cycles between a window and its controllers, each MainWindow (its photos, results and
    model sessions, about 270 MB) stayed for the rest of the session. After pytest-qt's
    teardown, the deletions asked for are carried out.

    Then, after a test that showed widgets or grew this process by more than 150 MB, and
    at the end of each module (its module-scoped fixtures, such as servers and Removers,
    are finished by then): reference cycles are collected and the freed heap is handed
    back to the system, which glibc otherwise keeps (a GB after a 1024 px model), so that
    the suite's peak is one test's, not the sum of what the tests before it left behind.
    """
    had_widgets = bool(getattr(item, "qt_widgets", None))
    yield
    module_ends = nextitem is None or getattr(nextitem, "module", None) is not getattr(
        item, "module", None
    )
    if had_widgets or module_ends or _rss() - _RSS_AFTER_CLEANUP[0] > _RSS_GROWTH:
        if had_widgets:
            _delete_later_now()
        gc.collect()
        if had_widgets:
            _delete_later_now()  # what the collected wrappers' deleteLater() posted
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                ctypes.CDLL("libc.so.6").malloc_trim(0)
        _RSS_AFTER_CLEANUP[0] = _rss()


ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
SAMPLE = ROOT / "assets" / "sample.jpg"


def real_photos() -> list[Path]:
    """Public-domain photos shipped with the tests (see tests/data/SOURCES.md)."""
    return [SAMPLE, *sorted(p for p in DATA.iterdir() if p.suffix in (".jpg", ".png"))]


def build_tiny_model(
    path: Path, size: int = 32, dynamic: bool = False, padding_bytes: int = 0
) -> Path:
    """A U²-Net-shaped stand-in: (1,3,S,S) -> (1,1,S,S), brighter pixels -> foreground.

    Output = sigmoid(4 * mean over channels), the mean computed by a 1x1 convolution
    (so that quantization has a Conv to work on); two side outputs like U²-Net's.
    ``padding_bytes`` adds an unused weight, so that a download of it takes a while.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    dim = "S" if dynamic else size
    inp = helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 3, dim, dim])
    outs = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 1, dim, dim])
        for name in ("d0", "d1", "d2")
    ]
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [], [4.0])
    weight = helper.make_tensor("w", TensorProto.FLOAT, [1, 3, 1, 1], [1 / 3] * 3)
    bias = helper.make_tensor("b", TensorProto.FLOAT, [1], [0.0])
    nodes = [
        helper.make_node("Conv", ["input.1", "w", "b"], ["m"], kernel_shape=[1, 1]),
        helper.make_node("Mul", ["m", "scale"], ["ms"]),
        helper.make_node("Sigmoid", ["ms"], ["d0"]),
        helper.make_node("Identity", ["d0"], ["d1"]),
        helper.make_node("Identity", ["d0"], ["d2"]),
    ]
    weights = [scale, weight, bias]
    if padding_bytes:
        padding = np.full(padding_bytes // 4, 0.5, np.float32)
        weights.append(numpy_helper.from_array(padding, "padding"))
    graph = helper.make_graph(nodes, "tiny_u2net", [inp], outs, initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny.onnx")


@pytest.fixture(scope="session")
def u2netp_path() -> Path:
    """The real u2netp, obtained and hash-verified through the project's model store."""
    from bgremover.network.store import ModelStore

    with kept_models("u2netp"):
        return ModelStore().ensure("u2netp")


@pytest.fixture(scope="session")
def u2netp_int8_path(u2netp_path: Path) -> Path:
    """u2netp's int8 model (default recipe), made once per test session, before the tests
    that need it, instead of by whichever of them comes first."""
    from bgremover.network.models import REGISTRY
    from bgremover.network.quantize import ensure_int8
    from bgremover.network.store import ModelStore

    with kept_models("u2netp-int8"):
        return ensure_int8(REGISTRY["u2netp"], ModelStore(), fp32_path=u2netp_path)


@pytest.fixture()
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, u2netp_path: Path) -> Path:
    """A model cache of the test's own holding only u2netp's fp32 file (no int8 yet)."""
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    shutil.copy(u2netp_path, home / "models" / u2netp_path.name)
    monkeypatch.setenv("BGREMOVER_HOME", str(home))
    return home


class ModelServer:
    """A loopback HTTP server over a folder that counts requests and can send slowly."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests: Counter[str] = Counter()
        #: Seconds to wait after each 64 KiB sent (0: as fast as it goes).
        self.delay = 0.0
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests[self.path] += 1
                super().do_GET()

            def copyfile(self, source, outputfile) -> None:
                try:
                    while chunk := source.read(65536):
                        outputfile.write(chunk)
                        if server.delay:
                            time.sleep(server.delay)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped the download (a cancel): nothing to report

            def log_message(self, *args) -> None:
                pass

        handler = functools.partial(Handler, directory=str(root))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        # A short poll: shutdown() waits for the serving loop to look, by default every 0.5 s.
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def model_server(tmp_path: Path) -> Iterator[ModelServer]:
    root = tmp_path / "served"
    root.mkdir()
    server = ModelServer(root)
    yield server
    server.close()


def served_model(server, name: str, blob: bytes | None):
    """A registry entry for ``name`` served by ``server`` (``blob`` None: the file is missing,
    so every download fails), for a test to install into the registry."""
    import hashlib
    from dataclasses import replace

    from bgremover.network.models import DEFAULT_MODEL, REGISTRY
    from bgremover.network.sources import Source

    if blob is not None:
        (server.root / f"{name}.onnx").write_bytes(blob)
    return replace(
        REGISTRY[DEFAULT_MODEL],
        name=name,
        filename=f"{name}.onnx",
        sources=(Source("url", f"{server.url}{name}.onnx"),),
        sha256=hashlib.sha256(blob or b"").hexdigest(),
        md5=None,
        bytes=len(blob or b"x"),
        bytes_exact=True,
    )


@pytest.fixture()
def server(model_server: ModelServer) -> tuple[str, Path]:
    """(base URL, folder) of a loopback HTTP server."""
    return model_server.url, model_server.root


@pytest.fixture(scope="session")
def u2netp_remover(u2netp_path: Path):
    from bgremover import Remover

    remover = Remover("u2netp", providers="cpu")
    remover.load()
    return remover


@pytest.fixture()
def rgb_gradient() -> np.ndarray:
    """A 48 x 64 RGB image: dark left, bright right."""
    ramp = np.linspace(0, 255, 64, dtype=np.float64)
    img = np.repeat(ramp[None, :, None], 48, axis=0).repeat(3, axis=2)
    return img.astype(np.uint8)


def _cli_env(env: dict[str, str] | None, home: Path | None) -> dict[str, str]:
    return {**(env or {}), **({"BGREMOVER_HOME": str(home)} if home is not None else {})}


def _checked(proc: subprocess.CompletedProcess[str], check: bool):
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    check: bool = False,
    home: Path | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m bgremover ARGS` in a subprocess; returns CompletedProcess.

    For tests whose point is the process: what a fresh interpreter imports or sends,
    signals and kills, a run another process watches. Elsewhere :func:`cli` gives the
    same result without starting Python again. ``env`` is added to this process's
    environment; ``home`` is the model cache (``BGREMOVER_HOME``).
    """
    proc = subprocess.run(
        [sys.executable, "-m", "bgremover", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **_cli_env(env, home)},
        timeout=timeout,
    )
    return _checked(proc, check)


def cli(
    *args: str,
    env: dict[str, str] | None = None,
    check: bool = False,
    home: Path | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`bgremover ARGS` run in this process: ``bgremover.cli.main(ARGS)``, its exit status,
    stdout and stderr returned as :func:`run_cli` returns them.

    For tests of what the command says, writes and exits with, where the process boundary
    is not what is checked. What a fresh process would start with, the call gets, and
    what the command changes in this process is put back afterwards, so that calls do not
    leak into each other or into the test: the environment (``env`` and ``home`` added for
    the call only), the working directory, ``sys.argv`` and the standard streams, the root
    logger's handlers and level (``logging.basicConfig`` acts as in a fresh process, on
    this call's stderr), every logger's level, handlers writing to stderr (they write to
    this call's), the warnings filters (Python's defaults, shown on this call's stderr),
    the signal handlers and the model registry. Output written by C code to the file
    descriptors themselves is not captured (use :func:`run_cli` for that). An exception
    that escapes ``main`` is raised here (in a subprocess it would be a traceback on
    stderr and exit status 1).
    """
    import io
    import logging
    import signal
    import warnings

    from bgremover import cli as cli_module
    from bgremover.network import models

    def stream(text: str = "") -> io.TextIOWrapper:
        return io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8", write_through=True)

    out, err, stdin = stream(), stream(), stream(input or "")
    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    root = logging.getLogger()
    saved_root_handlers = root.handlers[:]
    loggers = [root, *(lg for lg in logging.root.manager.loggerDict.values()
                       if isinstance(lg, logging.Logger))]  # fmt: skip
    saved_levels = {lg: lg.level for lg in loggers}
    old_stderrs = {id(sys.stderr), id(sys.__stderr__)}
    to_stderr = [
        h
        for lg in loggers
        for h in lg.handlers
        if isinstance(h, logging.StreamHandler)
        and not isinstance(h, logging.FileHandler)
        and id(h.stream) in old_stderrs
    ]
    saved_handler_streams = {h: h.stream for h in to_stderr}
    signals = [s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP) if s is not None]
    saved_signals = {s: signal.getsignal(s) for s in signals}
    saved_registry = dict(models.REGISTRY)

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        err.write(warnings.formatwarning(message, category, filename, lineno, line))

    try:
        os.environ.update(_cli_env(env, home))
        sys.argv = ["bgremover", *args]
        sys.stdin, sys.stdout, sys.stderr = stdin, out, err
        root.handlers = []
        for handler in to_stderr:
            handler.setStream(err)
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category in (
                ("ignore", DeprecationWarning),
                ("ignore", PendingDeprecationWarning),
                ("ignore", ImportWarning),
                ("ignore", ResourceWarning),
            ):
                warnings.simplefilter(action, category)
            warnings.showwarning = show
            try:
                code = cli_module.main(list(args))
            except SystemExit as exc:  # argparse: --help, a usage error
                if isinstance(exc.code, str):
                    err.write(exc.code + "\n")
                    code = 1
                else:
                    code = exc.code or 0
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        root.handlers = saved_root_handlers
        for logger, level in saved_levels.items():
            logger.setLevel(level)
        for handler, old in saved_handler_streams.items():
            handler.setStream(old)
        for lg in logging.root.manager.loggerDict.values():  # handlers made during the call
            for h in getattr(lg, "handlers", []):
                if isinstance(h, logging.StreamHandler) and h.stream in (out, err):
                    h.setStream(saved_streams[2])
        for s, handler in saved_signals.items():
            signal.signal(s, handler)
        models.REGISTRY.clear()
        models.REGISTRY.update(saved_registry)

    def text(captured: io.TextIOWrapper) -> str:  # newlines read as subprocess's text=True does
        captured.flush()
        return io.TextIOWrapper(io.BytesIO(captured.buffer.getvalue()), encoding="utf-8").read()

    proc = subprocess.CompletedProcess(["bgremover", *args], code, text(out), text(err))
    return _checked(proc, check)


def offline_env(tmp_path: Path) -> dict[str, str]:
    """An empty model cache and no network, for runs that must stop before a model is
    looked for: a refusal "up front" never says the model could not be obtained."""
    return {
        "BGREMOVER_HOME": str(tmp_path / "empty-home"),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": "",
    }


def run_gui(*args: str, timeout: int = 600):
    """Run `bgremover-gui ARGS` offscreen in a subprocess with isolated settings."""
    import tempfile

    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": tempfile.mkdtemp()}
    code = "import sys; from bgremover.gui import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


# --- the app, offscreen --------------------------------------------------------------


@pytest.fixture()
def isolated_settings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The app's settings in a folder of the test's own (never the user's)."""
    from PySide6.QtCore import QSettings

    folder = tmp_path_factory.mktemp("qsettings")
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    return folder


def make_window(qtbot):
    """A shown MainWindow that the test closes (stopping its threads) when it ends,
    without the question about unsaved cutouts (the quit tests ask it)."""
    from bgremover.gui.window import MainWindow

    win = MainWindow()
    win.confirm_quit = False
    qtbot.addWidget(win)
    win.show()
    return win


@pytest.fixture()
def window(qtbot, u2netp_path, isolated_settings):
    return make_window(qtbot)


def drop_files(window, paths: list[Path]) -> None:
    """What a drag and drop of files onto the window delivers."""
    from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
    from PySide6.QtGui import QDropEvent

    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    event = QDropEvent(
        QPointF(100, 100),
        Qt.DropAction.CopyAction,
        data,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    window.dropEvent(event)


def row_data(window, row: int, role):
    return window.queue.data(window.queue.index(row), role)


def row_text(window, row: int) -> str:
    from PySide6.QtCore import Qt

    return row_data(window, row, Qt.ItemDataRole.DisplayRole)


def row_icon(window, row: int):
    from PySide6.QtCore import Qt

    return row_data(window, row, Qt.ItemDataRole.DecorationRole)


def row_tooltip(window, row: int) -> str:
    from PySide6.QtCore import Qt

    return row_data(window, row, Qt.ItemDataRole.ToolTipRole)


def is_job(kind: str):
    """A pytest-qt signal check: a JobEnd of this kind."""
    return lambda end: end.kind == kind


class cpu_load:
    """Keep ``n`` CPU cores busy (separate processes, as other programs would)."""

    def __init__(self, n: int = 2) -> None:
        self.n = n
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> cpu_load:
        self.procs = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.n)
        ]
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()


# --- comparing images ----------------------------------------------------------------


def assert_masks_close(
    actual: np.ndarray,
    expected: np.ndarray,
    where: Path,
    name: str,
    max_mean_abs: float = 0.0,
    min_iou: float = 1.0,
) -> None:
    """Compare two uint8 masks (or images) with tolerances; on failure leave them for a human.

    A failing comparison writes ``NAME-actual.png``, ``NAME-expected.png`` and
    ``NAME-diff.png`` (|difference| as a heatmap) into ``where`` and names them in the
    assertion message.
    """
    from bgremover.compare.report import heatmap, mask_difference
    from bgremover.mask.metrics import iou, mean_abs_diff

    problems = []
    if actual.shape != expected.shape:
        problems.append(f"shape {actual.shape} != {expected.shape}")
    else:
        mean = mean_abs_diff(actual, expected)
        if mean > max_mean_abs:
            problems.append(f"mean |Δ| {mean:.5f} > {max_mean_abs:.5f}")
        if actual.ndim == 2:
            agreement = iou(actual, expected)
            if agreement < min_iou:
                problems.append(f"IoU {agreement:.4f} < {min_iou:.4f}")
    if not problems:
        return
    from PIL import Image

    where.mkdir(parents=True, exist_ok=True)
    files = []
    for label, pixels in (("actual", actual), ("expected", expected)):
        path = where / f"{name}-{label}.png"
        Image.fromarray(pixels).save(path)
        files.append(path)
    if actual.shape == expected.shape:
        diff = mask_difference(actual, expected)
        path = where / f"{name}-diff.png"
        Image.fromarray(heatmap(diff if diff.ndim == 2 else diff.max(axis=2))).save(path)
        files.append(path)
    raise AssertionError(f"{name}: {'; '.join(problems)}; see {', '.join(map(str, files))}")


@pytest.fixture()
def tiny_registered(monkeypatch: pytest.MonkeyPatch, fresh_home: Path) -> str:
    """A registry model "tinymodel" (the tiny synthetic model), cached in the test's home."""
    from dataclasses import replace

    from bgremover.network import models

    path = build_tiny_model(fresh_home / "models" / "tinymodel.onnx")
    spec = replace(
        models.REGISTRY["u2netp"],
        name="tinymodel",
        filename="tinymodel.onnx",
        sources=(),
        sha256=None,
        md5=None,
        bytes=path.stat().st_size,
        description="A tiny stand-in model.",
    )
    monkeypatch.setitem(models.REGISTRY, spec.name, spec)
    return spec.name
