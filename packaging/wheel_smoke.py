"""Build the sdist and wheel, check them, and use the wheel the way a pip user would.

    python packaging/wheel_smoke.py [--dist DIR] [--image PHOTO] [--keep]

1. Builds the sdist and, from it, the wheel (``python -m build``), unless ``--dist``
   names a folder that already holds exactly one of each (the release workflow
   builds once and tests what it publishes);
2. ``twine check --strict`` on both;
3. checks that every file of the package in the source tree (git's list: the
   calibration photos, the app's icon, py.typed, every module) is in the wheel and
   the sdist, and that no model file is;
4. installs the wheel (not editable) into a new virtual environment and, from a
   folder outside the source tree, with an empty model cache:
   ``bgremover --version``; ``bgremover remove PHOTO`` in fp32 (the model is
   downloaded) and int8 (made from the calibration photos the wheel installed);
   ``bgremover-gui PHOTO --screenshot SHOT.png`` (Qt offscreen).

Needs ``build`` and ``twine`` in this interpreter, and network to PyPI (the wheel's
dependencies and the model's PyPI mirror). Exits non-zero with a message on the
first failure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import venv
import zipfile
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "packaging"))

from smoke_test import check_cutout  # noqa: E402


def fail(message: str) -> None:
    raise SystemExit(f"wheel smoke: {message}")


def step(title: str) -> None:
    print(f"-- {title}", flush=True)


def run(
    cmd: list[str], what: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        fail(f"{what} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    print(f"   {what}: ok in {time.perf_counter() - start:.1f} s", flush=True)
    return proc


def package_files() -> list[str]:
    """The package's files in the source tree, as paths relative to ROOT."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "bgremover"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\0")
        files = [f for f in listed if f]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout
        files = [
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / "bgremover").rglob("*")
            if p.is_file()
            and "__pycache__" not in p.parts
            and "bundled_models" not in p.parts
            and p.suffix != ".pyc"
        ]
    if not files:
        fail("found no package files in the source tree")
    return sorted(files)


def build(out: Path) -> tuple[Path, Path]:
    step("build the sdist, then the wheel from it")
    run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], "python -m build")
    return find_dists(out)


def find_dists(folder: Path) -> tuple[Path, Path]:
    sdists, wheels = sorted(folder.glob("*.tar.gz")), sorted(folder.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        fail(f"expected one sdist and one wheel in {folder}, found {sdists + wheels}")
    return sdists[0], wheels[0]


def check_contents(sdist: Path, wheel: Path, expected: list[str]) -> None:
    step("contents")
    with zipfile.ZipFile(wheel) as zf:
        in_wheel = set(zf.namelist())
    with tarfile.open(sdist) as tf:
        top = tf.getnames()[0].split("/")[0]
        in_sdist = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    problems = []
    for name in expected:
        if name not in in_wheel:
            problems.append(f"{name} is not in the wheel")
        if name not in in_sdist:
            problems.append(f"{name} is not in the sdist ({top})")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if name not in in_sdist:
            problems.append(f"{name} is not in the sdist")
    for name in sorted(in_wheel | in_sdist):
        if name.endswith((".onnx", ".pyc")):
            problems.append(f"{name} should not be shipped")
    if problems:
        fail("the distributions are incomplete:\n  " + "\n  ".join(problems))
    data = [n for n in expected if not n.endswith(".py")]
    print(
        f"   wheel: {len(in_wheel)} files, {wheel.stat().st_size / 1e6:.2f} MB; all "
        f"{len(expected)} package files in it and in the sdist, {len(data)} of them data:"
    )
    for name in data:
        print(f"     {name}")


def scripts_dir(env_dir: Path) -> Path:
    return env_dir / ("Scripts" if sys.platform == "win32" else "bin")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", type=Path, help="test the sdist and wheel in this folder")
    parser.add_argument("--image", type=Path, default=ROOT / "assets" / "sample.jpg")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="bgremover-wheel-smoke-"))
    try:
        sdist, wheel = find_dists(args.dist) if args.dist else build(work / "dist")
        print(f"   {sdist.name}, {wheel.name}")
        version = wheel.name.split("-")[1]

        step("twine check --strict")
        proc = run(
            [
                sys.executable,
                "-m",
                "twine",
                "--no-color",
                "check",
                "--strict",
                str(sdist),
                str(wheel),
            ],
            "twine check",
            {**os.environ, "COLUMNS": "200"},
        )
        print("   " + proc.stdout.strip().replace("\n", "\n   "))

        expected = package_files()
        check_contents(sdist, wheel, expected)

        step("install the wheel into a new virtual environment")
        env_dir = work / "venv"
        venv.EnvBuilder(with_pip=True).create(env_dir)
        bin_dir = scripts_dir(env_dir)
        python = bin_dir / ("python.exe" if sys.platform == "win32" else "python")
        run(
            [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(wheel)],
            "pip install (wheel and its dependencies)",
        )

        home, cwd = work / "home", work / "cwd"
        home.mkdir()
        cwd.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BGREMOVER_", "PYTHON"))}
        env.update(BGREMOVER_HOME=str(home), QT_QPA_PLATFORM="offscreen")
        env.pop("VIRTUAL_ENV", None)
        env["PATH"] = str(bin_dir) + os.pathsep + env.get("PATH", "")

        step("the installed package")
        where = run(
            [str(python), "-c", "import bgremover; print(bgremover.__file__)"],
            "import bgremover",
            env,
            cwd,
        ).stdout.strip()
        installed = Path(where).parent
        if installed == ROOT / "bgremover" or env_dir.resolve() not in installed.resolve().parents:
            fail(f"bgremover was imported from {installed}, not from the new environment")
        missing = [name for name in expected if not (installed.parent / name).is_file()]
        if missing:
            fail(f"not installed into {installed}: {missing}")
        print(f"   {installed}: all {len(expected)} package files installed")

        step("the programs, from a folder outside the source tree, with an empty cache")
        cli = bin_dir / ("bgremover.exe" if sys.platform == "win32" else "bgremover")
        gui = bin_dir / ("bgremover-gui.exe" if sys.platform == "win32" else "bgremover-gui")
        shown = run([str(cli), "--version"], "bgremover --version", env, cwd).stdout.strip()
        if shown != f"bgremover {version}":
            fail(f"bgremover --version says {shown!r}; the wheel is version {version}")
        print(f"   {shown}")

        image = args.image.resolve()
        for precision in ("fp32", "int8"):
            out = work / f"cut-{precision}.png"
            run(
                [str(cli), "remove", str(image), "-o", str(out), "--precision", precision],
                f"bgremover remove --precision {precision}"
                + (" (downloads u2netp)" if precision == "fp32" else " (calibrates)"),
                env,
                cwd,
            )
            check_cutout(out)
            print(f"   {out.name}: {out.stat().st_size} bytes, looks like a cutout")
        models = sorted(p.name for p in home.rglob("*.onnx"))
        print(f"   model cache now holds: {', '.join(models)}")

        shot = work / "shot.png"
        proc = run(
            [str(gui), str(image), "--screenshot", str(shot)],
            "bgremover-gui --screenshot",
            env,
            cwd,
        )
        if not shot.is_file() or Image.open(shot).size[0] < 640:
            fail(f"no usable screenshot at {shot}")
        print(f"   {shot.name}: {Image.open(shot).size} ({proc.stdout.strip()})")

        print(f"wheel smoke passed in {time.perf_counter() - began:.0f} s")
        return 0
    finally:
        if args.keep:
            print(f"files in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
