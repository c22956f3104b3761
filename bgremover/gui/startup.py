"""Before Qt starts on Linux: is there a display, and can Qt's platform plugin load?

Where either is missing Qt aborts (exit 134) with a hint that names libxcb-cursor0
whatever is actually missing. :func:`check` finds out first, in a few milliseconds, and
returns what to tell the user instead. It never stands in the way of a start it cannot
judge: an unusual platform, a plugin it cannot find or a failure it does not recognise
all leave the decision to Qt. Nothing here imports Qt or ONNX Runtime.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import re
import socket
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .. import libraries

#: The libraries that PySide6's Qt, its X11 (xcb) and its Wayland platform plugins load
#: from the system, and the Debian / Ubuntu package of each (`ldd` on the plugins in a
#: minimal Debian 12, `dpkg -S` for the packages).
DEBIAN_PACKAGES: dict[str, str] = {
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb.so.1": "libxcb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libwayland-client.so.0": "libwayland-client0",
    "libwayland-cursor.so.0": "libwayland-cursor0",
    "libwayland-egl.so.1": "libwayland-egl1",
}

PLATFORM_NAMES = {"xcb": "X11 (xcb)", "wayland": "Wayland"}
QT_OWN = ("libQt6", "libicu", "libpyside6", "libshiboken6")  # shipped with PySide6
CLI_HINT = "on a server, use the command line: bgremover remove PHOTOS -o OUTPUT"

_LOCAL_DISPLAY = re.compile(r"^(?:unix)?:(\d+)(?:\.\d+)?$")


def debian_packages(sonames: Iterable[str]) -> tuple[list[str], list[str]]:
    """The Debian packages that provide `sonames` (each once), and the sonames without one."""
    packages: dict[str, None] = {}
    unknown = []
    for name in sonames:
        if name in DEBIAN_PACKAGES:
            packages[DEBIAN_PACKAGES[name]] = None
        else:
            unknown.append(name)
    return list(packages), unknown


def qt_platforms(env: Mapping[str, str]) -> list[str] | None:
    """The platform plugins Qt will try, in its order; None where that is not xcb/Wayland.

    Qt 6 takes QT_QPA_PLATFORM when it is set (a ``;``-separated list, each name with
    optional ``:arguments``); otherwise xcb, with wayland first when WAYLAND_DISPLAY is set
    or XDG_SESSION_TYPE is wayland. It moves on to the next name when one fails.
    """
    chosen = env.get("QT_QPA_PLATFORM", "")
    if chosen:
        names = [part.split(":", 1)[0].strip() for part in chosen.split(";") if part.strip()]
        if not names or any(name not in PLATFORM_NAMES for name in names):
            return None  # offscreen, minimal, vnc, eglfs...: not ours to judge
        return list(dict.fromkeys(names))
    if env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE") == "wayland":
        return ["wayland", "xcb"]
    return ["xcb"]


def has_display(platform: str, env: Mapping[str, str]) -> bool:
    if platform == "xcb":
        return bool(env.get("DISPLAY"))
    if env.get("WAYLAND_DISPLAY"):
        return True
    runtime = env.get("XDG_RUNTIME_DIR")  # where the Wayland client looks by default
    return runtime is not None and runtime != "" and Path(runtime, "wayland-0").exists()


def _pyside_dirs() -> list[Path]:
    dirs = []
    try:
        spec = importlib.util.find_spec("PySide6")  # finds it without importing it
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        dirs += [Path(p) for p in spec.submodule_search_locations]
    bundle = getattr(sys, "_MEIPASS", None)  # a PyInstaller bundle
    if getattr(sys, "frozen", False) and bundle:
        dirs.append(Path(bundle, "PySide6"))
    return dirs


def plugin_files(platform: str, env: Mapping[str, str]) -> list[Path]:
    """The files Qt may load for `platform`, in the order it looks for them."""
    name = f"libq{platform}.so"
    dirs = []
    if env.get("QT_QPA_PLATFORM_PLUGIN_PATH"):
        dirs.append(Path(env["QT_QPA_PLATFORM_PLUGIN_PATH"]))
    dirs += [Path(p, "platforms") for p in env.get("QT_PLUGIN_PATH", "").split(os.pathsep) if p]
    dirs += [d / "Qt" / "plugins" / "platforms" for d in _pyside_dirs()]
    files = [d / name for d in dirs]
    return list(dict.fromkeys(f for f in files if f.is_file()))


def missing_libraries(library: Path) -> list[str] | None:
    """The system libraries Qt's plugin ``library`` lacks ([] when it loads; None when it
    fails for another reason, or lacks Qt's own libraries, which are in memory by the
    time Qt loads the plugin)."""
    return libraries.missing_libraries(library, QT_OWN)


def x_server_reachable(display: str) -> bool | None:
    """Whether an X server listens on a local `display` (":0"); None: cannot tell."""
    match = _LOCAL_DISPLAY.match(display)
    if match is None:
        return None  # a remote or unusual display: Qt will say
    number = int(match.group(1))
    path = f"/tmp/.X11-unix/X{number}"
    attempts: list[tuple[socket.AddressFamily, str | tuple[str, int]]] = [
        (socket.AF_UNIX, "\0" + path),  # the abstract socket Linux X servers also offer
        (socket.AF_UNIX, path),
        (socket.AF_INET, ("127.0.0.1", 6000 + number)),
    ]
    for family, address in attempts:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)  # all local: a refusal is immediate
            try:
                sock.connect(address)
                return True
            except (TimeoutError, InterruptedError):
                return True  # there, only slow to accept
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTDIR):
                    return None
    return False


def no_display_message() -> str:
    return (
        "bgremover-gui: no display to open the window on (neither DISPLAY nor "
        f"WAYLAND_DISPLAY is set). The app needs a desktop session; {CLI_HINT}"
    )


def unreachable_display_message(display: str) -> str:
    return (
        f"bgremover-gui: no X server answers on display {display} (from DISPLAY). "
        f"Start the app from a desktop session; {CLI_HINT}"
    )


def apt_sudo() -> str:
    """What goes before each ``apt-get`` for this user: root has no ``sudo`` in most
    containers (the README's line says ``$(command -v sudo) `` for both)."""
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    return "" if as_root else "sudo "


def apt_line(packages: Iterable[str], sudo: str) -> str:
    """The line that installs ``packages`` on a fresh Debian or Ubuntu, in the README's
    form: the package lists fetched first (a fresh container has none), then the install
    with no question asked (``-y``); ``sudo`` goes before each ``apt-get``."""
    return f"{sudo}apt-get update && {sudo}apt-get install -y {' '.join(packages)}"


def missing_libraries_message(platform: str, missing: Sequence[str]) -> str:
    packages, unknown = debian_packages(missing)
    lines = [
        f"bgremover-gui: the app cannot start: Qt's {PLATFORM_NAMES[platform]} platform "
        f"plugin needs libraries this system lacks: {', '.join(missing)}"
    ]
    if packages:
        lines.append(f"  On Debian or Ubuntu install them with: {apt_line(packages, apt_sudo())}")
    if unknown:
        lines.append(f"  (no Debian package known for {', '.join(unknown)})")
    lines.append(
        "  On other systems install the packages that contain these library files. "
        "The command line (bgremover remove) does not need them."
    )
    return "\n".join(lines)


def check(env: Mapping[str, str] | None = None, platform: str = sys.platform) -> str | None:
    """What stops the app's window from opening, in words for the user; None: nothing known."""
    if not platform.startswith("linux"):
        return None
    env = os.environ if env is None else env
    candidates = qt_platforms(env)
    if candidates is None:
        return None
    usable = [p for p in candidates if has_display(p, env)]
    if not usable:
        return no_display_message()
    failures: dict[str, list[str]] = {}
    for i, name in enumerate(usable):
        missing = _plugin_missing(name, env)
        if missing:
            failures[name] = missing
            continue  # Qt tries the next platform
        # It loads, or we cannot tell. A local X display nobody listens on is the other
        # way xcb aborts, unless Qt still has another platform to try.
        if name == "xcb" and i == len(usable) - 1:
            display = env.get("DISPLAY", "")
            if x_server_reachable(display) is False:
                return unreachable_display_message(display)
        return None
    name = "xcb" if "xcb" in failures else next(iter(failures))
    return missing_libraries_message(name, failures[name])


def _plugin_missing(platform: str, env: Mapping[str, str]) -> list[str] | None:
    """What the files Qt may load for `platform` lack: the first file's list when none
    loads; [] or None when one loads or there is nothing to judge."""
    first: list[str] | None = None
    for file in plugin_files(platform, env):
        missing = missing_libraries(file)
        if not missing:
            return missing
        first = first or missing
    return first
