"""Smoke-test a built bundle the way a new user meets it: offline, with an empty cache.

    python packaging/smoke_test.py [BUNDLE_DIR] [--image PHOTO]

BUNDLE_DIR defaults to packaging/dist/bgremover. The bundle's programs run with a
fresh home folder (so no model cache) and without network: on Linux inside a new
network namespace (`unshare -n`, needs root or user namespaces), elsewhere with
proxies pointing at a closed local port. Checks:
  1. `bgremover remove PHOTO -o OUT.png` writes a sensible cutout (fp32 and int8),
     from the models inside the bundle, and nothing is downloaded into the cache;
  2. `bgremover remove PHOTO --edits EDITS.json` replays touch-up edits (a Remove click,
     an Add click, an edge-aware erase and a box: GrabCut, k-means, distance transforms
     and the model on a crop, so every OpenCV function the edits use is in the bundle)
     and changes the cutout where they were made;
  3. `bgremover-gui PHOTO --screenshot SHOT.png` starts (offscreen on Linux) and
     writes a screenshot; the time from launch to screenshot is printed.
Exits non-zero with a message on the first failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent


def program(bundle: Path, name: str) -> Path:
    exe = bundle / (name + (".exe" if sys.platform == "win32" else ""))
    if not exe.is_file():
        raise SystemExit(f"smoke test: {exe} not found; build the bundle first")
    return exe


def offline_prefix() -> list[str]:
    """A command prefix that takes the network away, where the platform allows it."""
    if sys.platform.startswith("linux") and shutil.which("unshare"):
        probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
        if probe.returncode == 0:
            return ["unshare", "-n"]
        probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True)
        if probe.returncode == 0:
            return ["unshare", "-rn"]
    return []


def run(cmd: list[str], env: dict[str, str], what: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"smoke test: {what} failed (exit {proc.returncode}):\n"
                         f"{proc.stdout}\n{proc.stderr}")  # fmt: skip
    return proc


def check_cutout(path: Path) -> None:
    img = Image.open(path)
    if img.mode != "RGBA":
        raise SystemExit(f"smoke test: {path} is {img.mode}, expected RGBA")
    alpha = np.asarray(img.getchannel("A"))
    h, w = alpha.shape
    centre = alpha[h // 3 : 2 * h // 3, w // 3 : 2 * w // 3].mean()
    opaque, clear = (alpha > 250).mean(), (alpha < 5).mean()
    if centre < 200 or opaque < 0.1 or clear < 0.05:
        raise SystemExit(
            f"smoke test: {path} does not look like a cutout "
            f"(centre alpha {centre:.0f}, {opaque:.0%} opaque, {clear:.0%} clear)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("bundle", nargs="?", type=Path, default=ROOT / "packaging/dist/bgremover")
    parser.add_argument("--image", type=Path, default=ROOT / "assets" / "sample.jpg")
    args = parser.parse_args()
    cli, gui = program(args.bundle, "bgremover"), program(args.bundle, "bgremover-gui")
    prefix = offline_prefix()
    work = Path(tempfile.mkdtemp(prefix="bgremover-smoke-"))
    home = work / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BGREMOVER_", "XDG_"))}
    env.update(
        HOME=str(home),
        USERPROFILE=str(home),
        LOCALAPPDATA=str(home / "AppData"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
    )
    if sys.platform.startswith("linux"):
        env.setdefault("QT_QPA_PLATFORM", "offscreen")  # no screen needed
    if not prefix:  # no namespace: make every download fail fast instead
        env.update(HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9",
                   PIP_NO_INDEX="1")  # fmt: skip
    print(
        f"network: {'removed with ' + ' '.join(prefix) if prefix else 'proxied to a closed port'}"
    )

    out = work / "cut.png"
    run([*prefix, str(cli), "--version"], env, "bgremover --version")
    start = time.perf_counter()
    run([*prefix, str(cli), "remove", str(args.image), "-o", str(out)], env, "bundled CLI (fp32)")
    print(f"CLI fp32 cutout: {out.stat().st_size} bytes in {time.perf_counter() - start:.1f} s")
    check_cutout(out)
    out8 = work / "cut8.png"
    start = time.perf_counter()
    run([*prefix, str(cli), "remove", str(args.image), "-o", str(out8), "--precision", "int8"],
        env, "bundled CLI (int8)")  # fmt: skip
    print(f"CLI int8 cutout: {out8.stat().st_size} bytes in {time.perf_counter() - start:.1f} s")
    check_cutout(out8)
    cached = [p for p in home.rglob("*.onnx")]
    if cached:
        raise SystemExit(f"smoke test: models were written to the user cache: {cached}")

    # Touch-up edits as the app exports them, replayed by the bundled CLI.
    w, h = Image.open(args.image).size
    edits = work / "edits.json"
    ops = [
        {"tool": "remove", "points": [[w * 0.08, h * 0.08]]},
        {"tool": "add", "points": [[w * 0.5, h * 0.55]]},
        {"tool": "erase", "points": [[w * 0.9, h * 0.9], [w * 0.8, h * 0.95]],
         "radius": h / 20, "hardness": 0.8, "edge_aware": True},
        {"tool": "box", "points": [[w * 0.2, h * 0.1], [w * 0.8, h * 0.9]]},
        {"tool": "erase", "points": [[w * 0.5, h * 0.5]], "radius": h / 30},
    ]  # fmt: skip
    edits.write_text(json.dumps({"format": "bgremover-edits", "version": 1, "size": [w, h],
                                 "operations": ops}), encoding="utf-8")  # fmt: skip
    edited = work / "edited.png"
    run([*prefix, str(cli), "remove", str(args.image), "-o", str(edited), "--edits", str(edits)],
        env, "bundled CLI (touch-up edits)")  # fmt: skip
    check_cutout(edited)
    before = np.asarray(Image.open(out).getchannel("A"))
    after = np.asarray(Image.open(edited).getchannel("A"))
    centre = (int(h * 0.5), int(w * 0.5))  # inside the subject, erased by the last stroke
    if before[centre] < 200 or after[centre] != 0 or np.array_equal(before, after):
        raise SystemExit("smoke test: the touch-up edits did not change the cutout as made")
    print(f"CLI touch-up replay: {(before != after).mean():.1%} of the pixels changed")

    shot = work / "shot.png"
    start = time.perf_counter()
    proc = run([*prefix, str(gui), str(args.image), "--screenshot", str(shot)], env, "bundled app")
    wall = time.perf_counter() - start
    if not shot.is_file() or Image.open(shot).size[0] < 640:
        raise SystemExit(f"smoke test: no usable screenshot at {shot}")
    print(f"app: screenshot {shot} {Image.open(shot).size}, launch to screenshot {wall:.1f} s "
          f"(app's own count: {proc.stdout.strip()})")  # fmt: skip
    print(f"smoke test passed; files in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
