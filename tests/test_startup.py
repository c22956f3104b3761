"""The app's start-up check: no display, or libraries Qt's platform plugin lacks, is said in
plain words (exit 2) instead of Qt's abort (exit 134), and a working start is never stopped."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bgremover import libraries
from bgremover.gui import startup

APP = "import sys; from bgremover.gui import main; sys.exit(main())"  # what bgremover-gui runs
DISPLAY_VARIABLES = ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "XDG_SESSION_TYPE")

# Real `ldd` output for Qt's xcb plugin (PySide6 6.11) on a minimal Debian 12, shortened.
LDD_OUTPUT = """\
\tlinux-vdso.so.1 (0x00007ffd5b3f2000)
\tlibQt6XcbQpa.so.6 => /venv/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f42f64e9000)
\tlibGL.so.1 => /lib/x86_64-linux-gnu/libGL.so.1 (0x00007f42f6459000)
\tlibxkbcommon.so.0 => /lib/x86_64-linux-gnu/libxkbcommon.so.0 (0x00007f42f6411000)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-cursor.so.0 => /lib/x86_64-linux-gnu/libxcb-cursor.so.0 (0x00007f42f63ff000)
\tlibxcb-icccm.so.4 => not found
\tlibglib-2.0.so.0 => not found
\tlibgthread-2.0.so.0 => not found
\t/lib64/ld-linux-x86-64.so.2 (0x00007f42f65b9000)
"""


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This environment without any display, Wayland socket or chosen Qt platform."""
    env = {k: v for k, v in os.environ.items() if k not in DISPLAY_VARIABLES}
    env["XDG_RUNTIME_DIR"] = str(tmp_path)  # no wayland-0 socket in it
    env.update(extra)
    return env


def entry_points() -> list[list[str]]:
    """`python -m bgremover` (no arguments: the app), and the installed `bgremover-gui`."""
    commands = [[sys.executable, "-m", "bgremover"]]
    script = Path(sys.executable).with_name("bgremover-gui")
    if script.exists():
        commands.append([str(script)])
    return commands


def unused_display() -> str:
    for number in range(911, 1000):
        if not Path(f"/tmp/.X11-unix/X{number}").exists() and not startup.x_server_reachable(
            f":{number}"
        ):
            return f":{number}"
    pytest.skip("no unused X display number")


def qt_xcb_plugin() -> Path:
    files = startup.plugin_files("xcb", {})
    if not files:
        pytest.skip("no Qt xcb plugin in this PySide6")
    return files[0]


def skip_unless_qt_xcb_loads() -> None:
    plugin = qt_xcb_plugin()
    missing = run_in_python(
        f"from bgremover.gui import startup; print(startup.missing_libraries({str(plugin)!r}))"
    )
    if missing != "[]":
        pytest.skip(f"Qt's xcb plugin lacks libraries here: {missing}")


def run_in_python(code: str) -> str:
    """Run `code` in a fresh interpreter (plugins it loads stay out of the test process)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def build_library(root: Path, name: str, needs: list[str]) -> Path:
    """A real shared object like a platform plugin, linked against libm (present) and the
    libraries `needs`, which no longer exist: built with gcc, then those deleted."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is needed to build the test library")
    gone = root / "gone"
    gone.mkdir()
    symbols = []
    for soname in needs:
        symbol = soname.split(".")[0].replace("-", "_")
        src = gone / f"{symbol}.c"
        src.write_text(f"int {symbol}(void) {{ return 1; }}\n")
        subprocess.run(
            [gcc, "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", gone / soname, src],
            check=True,
        )
        symbols.append(symbol)
    calls = " + ".join(f"{symbol}()" for symbol in symbols)
    src = root / "plugin.c"
    src.write_text(
        "#include <math.h>\n"
        + "".join(f"int {symbol}(void);\n" for symbol in symbols)
        + f"double plugin_entry(double x) {{ return sqrt(x) + {calls}; }}\n"
    )
    library = root / name
    library.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [gcc, "-shared", "-fPIC", "-o", library, src, "-Wl,--no-as-needed"]
        + [str(gone / soname) for soname in needs]
        + ["-lm"],
        check=True,
    )
    shutil.rmtree(gone)
    return library


@pytest.fixture(scope="module")
def broken_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An xcb plugin in a PySide6 folder of its own, lacking two libraries."""
    root = tmp_path_factory.mktemp("broken-plugin")
    plugin = build_library(
        root,
        "site/PySide6/Qt/plugins/platforms/libqxcb.so",
        ["libbgremover-test-a.so.1", "libbgremover-test-b.so.2"],
    )
    (root / "site" / "PySide6" / "__init__.py").write_text("")
    return plugin


# What users see, through the real entry points.


@pytest.mark.parametrize("command", entry_points(), ids=lambda c: Path(c[-1]).name)
def test_no_display_is_one_line_and_exit_2(tmp_path: Path, command: list[str]) -> None:
    proc = subprocess.run(command, env=clean_env(tmp_path), capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("bgremover-gui: no display")
    assert "DISPLAY" in lines[0]
    assert "bgremover remove" in lines[0]


def test_no_display_with_files_given(tmp_path: Path) -> None:
    image = Path(__file__).resolve().parent.parent / "assets" / "sample.jpg"
    proc = subprocess.run(
        [sys.executable, "-c", APP, str(image)],
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1
    assert "no display" in proc.stderr


def test_unreachable_x_display_is_one_line_not_an_abort(tmp_path: Path) -> None:
    skip_unless_qt_xcb_loads()
    display = unused_display()
    proc = subprocess.run(
        [sys.executable, "-m", "bgremover"],
        env=clean_env(tmp_path, DISPLAY=display),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [startup.unreachable_display_message(display)]
    assert "qt.qpa" not in proc.stderr


def test_missing_libraries_are_named_instead_of_qt_aborting(
    tmp_path: Path, broken_plugin: Path
) -> None:
    site = broken_plugin.parents[4]  # site/PySide6/Qt/plugins/platforms/libqxcb.so
    env = clean_env(tmp_path, DISPLAY=":0", PYTHONPATH=str(site))
    proc = subprocess.run(
        [sys.executable, "-m", "bgremover"], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 2, proc.stderr
    first, *rest = proc.stderr.splitlines()
    assert first.startswith("bgremover-gui: the app cannot start: Qt's X11 (xcb) platform")
    assert first.endswith(": libbgremover-test-a.so.1, libbgremover-test-b.so.2")
    assert "libm.so" not in proc.stderr  # present, so not reported
    assert any("no Debian package known" in line for line in rest)
    assert any("bgremover remove" in line for line in rest)
    assert "qt.qpa" not in proc.stderr


def test_a_loading_plugin_found_first_is_used(tmp_path: Path, broken_plugin: Path) -> None:
    """Qt tries QT_QPA_PLATFORM_PLUGIN_PATH first and then its own plugins: one broken
    copy does not stop a start that Qt's own plugin makes."""
    skip_unless_qt_xcb_loads()
    plugin = qt_xcb_plugin()
    env = {"QT_QPA_PLATFORM_PLUGIN_PATH": str(broken_plugin.parent)}
    out = run_in_python(
        "from bgremover.gui import startup\n"
        f"print(startup.plugin_files('xcb', {env!r}))\n"
        f"print(startup._plugin_missing('xcb', {env!r}))"
    )
    files, missing = out.splitlines()
    assert files.index(str(broken_plugin)) < files.index(str(plugin))
    assert missing == "[]"


def test_the_app_starts_on_a_real_x_server(tmp_path: Path) -> None:
    """With an X server and the libraries present the check lets Qt start: the scripted
    screenshot mode runs (with no images it exits 1, saying so)."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("Xvfb is needed for a real X server")
    skip_unless_qt_xcb_loads()
    read, write = os.pipe()
    server = subprocess.Popen(
        [xvfb, "-displayfd", str(write), "-nolisten", "tcp", "-screen", "0", "800x600x24"],
        pass_fds=[write],
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    try:
        with os.fdopen(read) as ready:
            number = ready.readline().strip()  # written once the server accepts clients
        assert number, "Xvfb did not start"
        shot = tmp_path / "shot.png"
        env = clean_env(tmp_path, DISPLAY=f":{number}", HOME=str(tmp_path))
        env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
        proc = subprocess.run(
            [sys.executable, "-c", APP, "--screenshot", str(shot)],
            env=env,
            capture_output=True,
            text=True,
        )
    finally:
        server.terminate()
        server.wait()
    assert "nothing to process" in proc.stderr, proc.stderr
    assert proc.returncode == 1
    assert shot.stat().st_size > 0


# The parts, on real inputs.


def test_parse_ldd_lists_each_missing_library_once_in_order() -> None:
    assert libraries.parse_ldd(LDD_OUTPUT) == [
        "libxcb-icccm.so.4",
        "libxcb-keysyms.so.1",
        "libglib-2.0.so.0",
        "libgthread-2.0.so.0",
    ]
    assert libraries.parse_ldd("\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x7f)\n") == []


def test_missing_libraries_of_a_real_shared_object(broken_plugin: Path) -> None:
    if shutil.which("ldd") is None:
        pytest.skip("ldd is needed")
    out = subprocess.run(["ldd", broken_plugin], capture_output=True, text=True).stdout
    assert libraries.parse_ldd(out) == ["libbgremover-test-a.so.1", "libbgremover-test-b.so.2"]
    # dlopen names only the first; ldd then lists them all.
    assert startup.missing_libraries(broken_plugin) == [
        "libbgremover-test-a.so.1",
        "libbgremover-test-b.so.2",
    ]


def test_qt_plugin_that_loads_has_nothing_missing() -> None:
    plugin = qt_xcb_plugin()
    if shutil.which("ldd") is None:
        pytest.skip("ldd is needed")
    out = subprocess.run(["ldd", plugin], capture_output=True, text=True).stdout
    expected = libraries.parse_ldd(out)
    got = run_in_python(
        f"from bgremover.gui import startup; print(startup.missing_libraries({str(plugin)!r}))"
    )
    assert got == repr(expected)


def test_a_plugin_that_does_not_find_qt_itself_is_not_judged(tmp_path: Path) -> None:
    """Qt's own libraries are loaded before Qt loads its plugin, wherever a bundle puts them."""
    plugin = build_library(tmp_path, "libqxcb.so", ["libQt6BgremoverTest.so.6"])
    assert startup.missing_libraries(plugin) is None


def test_a_file_that_is_no_library_is_not_judged(tmp_path: Path) -> None:
    bogus = tmp_path / "libqxcb.so"
    bogus.write_bytes(b"not an ELF file")
    assert startup.missing_libraries(bogus) is None


def test_debian_packages_for_the_libraries_qt_needs() -> None:
    packages, unknown = startup.debian_packages(
        ["libxcb-icccm.so.4", "libglib-2.0.so.0", "libgthread-2.0.so.0", "libfoo.so.9"]
    )
    assert packages == ["libxcb-icccm4", "libglib2.0-0"]
    assert unknown == ["libfoo.so.9"]


def test_every_system_library_qt_links_has_a_debian_package() -> None:
    """The table covers what PySide6's Qt libraries, its modules and its xcb and Wayland
    plugins link from the system (a new one after a PySide6 upgrade fails here)."""
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf is needed")
    pyside = qt_xcb_plugin().parents[3]
    names = ["QtCore.abi3.so", "QtGui.abi3.so", "QtWidgets.abi3.so"]
    names += [f"Qt/lib/libQt6{m}.so.6" for m in ("Core", "Gui", "Widgets", "DBus", "XcbQpa")]
    names += ["Qt/lib/libQt6WaylandClient.so.6"]
    names += ["Qt/plugins/platforms/libqxcb.so", "Qt/plugins/platforms/libqwayland.so"]
    files = [pyside / name for name in names if (pyside / name).exists()]
    needed = set()
    for file in files:
        out = subprocess.run([readelf, "-d", file], capture_output=True, text=True).stdout
        needed |= set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out))
    assert needed
    system = {n for n in needed if not n.startswith(startup.QT_OWN)}
    # Every Debian system has these: glibc, the C++ runtime, zlib and zstd (required).
    base = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1"}
    base |= {"libstdc++.so.6", "libgcc_s.so.1", "libz.so.1", "libzstd.so.1"}
    system = {n for n in system - base if not n.startswith("ld-linux")}
    assert system - set(startup.DEBIAN_PACKAGES) == set()


def test_message_for_missing_libraries_gives_the_apt_line() -> None:
    text = startup.missing_libraries_message("xcb", ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"])
    lines = text.splitlines()
    assert lines[0] == (
        "bgremover-gui: the app cannot start: Qt's X11 (xcb) platform plugin needs libraries "
        "this system lacks: libxcb-icccm.so.4, libxcb-keysyms.so.1"
    )
    # As root (a container) there is often no sudo; as anyone else apt needs it. The
    # package lists come first (a fresh container has none), and -y asks nothing.
    sudo = "" if os.geteuid() == 0 else "sudo "
    assert startup.apt_sudo() == sudo
    assert lines[1] == (
        f"  On Debian or Ubuntu install them with: {sudo}apt-get update && "
        f"{sudo}apt-get install -y libxcb-icccm4 libxcb-keysyms1"
    )
    assert "On other systems" in lines[2]


def test_which_platforms_qt_tries() -> None:
    assert startup.qt_platforms({}) == ["xcb"]
    assert startup.qt_platforms({"QT_QPA_PLATFORM": ""}) == ["xcb"]
    assert startup.qt_platforms({"WAYLAND_DISPLAY": "wayland-0"}) == ["wayland", "xcb"]
    assert startup.qt_platforms({"XDG_SESSION_TYPE": "wayland"}) == ["wayland", "xcb"]
    assert startup.qt_platforms({"XDG_SESSION_TYPE": "x11"}) == ["xcb"]
    assert startup.qt_platforms({"QT_QPA_PLATFORM": "xcb:nograb;wayland"}) == ["xcb", "wayland"]
    for other in ("offscreen", "minimal", "vnc", "eglfs", "wayland-egl", "xcb;offscreen"):
        assert startup.qt_platforms({"QT_QPA_PLATFORM": other}) is None


def test_nothing_to_say_where_it_is_not_ours_to_judge(tmp_path: Path) -> None:
    assert startup.check({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    assert startup.check({}, "darwin") is None
    assert startup.check({}, "win32") is None
    no_display = {"XDG_RUNTIME_DIR": str(tmp_path)}
    assert startup.check(no_display, "linux") == startup.no_display_message()
    assert startup.check({**no_display, "QT_QPA_PLATFORM": "wayland"}, "linux") == (
        startup.no_display_message()
    )


def test_wayland_display_from_the_variable_or_the_default_socket(tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    assert not startup.has_display("wayland", env)
    assert startup.has_display("wayland", {**env, "WAYLAND_DISPLAY": "wayland-1"})
    (tmp_path / "wayland-0").touch()  # where the Wayland client looks by default
    assert startup.has_display("wayland", env)
    assert not startup.has_display("xcb", env)
    assert startup.has_display("xcb", {"DISPLAY": ":0"})


def test_x_server_reachable_only_judges_local_displays() -> None:
    assert startup.x_server_reachable("localhost:10.0") is None
    assert startup.x_server_reachable("") is None
    assert startup.x_server_reachable(unused_display()) is False


def test_readme_apt_line_installs_what_the_app_would_ask_for() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Install and run", 1)[1].split("\n## ", 1)[0]
    line = re.search(r"\$\(command -v sudo\) apt-get install -y ([^`]+?)\n```", section, re.S)
    assert line is not None
    documented = set(line.group(1).replace("\\\n", " ").split())
    wayland = {"libwayland-client0", "libwayland-cursor0", "libwayland-egl1"}
    assert documented == {"python3-venv"} | (set(startup.DEBIAN_PACKAGES.values()) - wayland)


def test_the_readme_line_is_the_one_ci_runs_and_the_apps_form() -> None:
    """The line CI runs (packaging/setup_line.py prints it for .ci/run and the workflows)
    is the README's, in the form of the app's hint, for root and for sudo alike."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "packaging"))
    try:
        from setup_line import setup_line
    finally:
        sys.path.pop(0)
    line = setup_line()
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert "## Install and run" in readme.split(line, 1)[0]  # the line of "Install and run"
    words = line.replace("\\\n", " ").split()
    packages = words[words.index("-y") + 1 :]
    assert " ".join(words) == startup.apt_line(packages, "$(command -v sudo) ")
    assert packages[0] == "python3-venv" and len(set(packages)) == len(packages)
