"""Build the desktop bundle for this platform with PyInstaller.

    python packaging/build.py [--skip-int8]

1. Obtains the default model through the project's model store (hash-verified) and
   makes its int8 version with the default recipe, then copies both into
   bgremover/bundled_models/, which the spec ships: the app needs no network on
   first launch.
2. Runs PyInstaller on packaging/bgremover.spec (onedir): packaging/dist/bgremover/
   (and bgremover.app on macOS), then removes the staging copy of the models.
   The bundle takes the OpenCV installed where it is built: packaging/opencv_minimal.py
   --install replaces the PyPI wheel with a build of the three modules bgremover calls
   (the release bundles do; about 130 MB less). Without it, a note says so.
3. Writes packaging/dist/size-report.txt (and prints it): every file of the bundle
   attributed to the package, Qt part or system library it comes from, with the
   bundle's size on disk; on Linux it also packs packaging/dist/bgremover-VERSION-linux-
   ARCH.tar.gz, the release archive, and reports its size (--no-archive skips it).
"""

from __future__ import annotations

import argparse
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bgremover import __version__  # noqa: E402
from bgremover.network.models import DEFAULT_MODEL, REGISTRY  # noqa: E402
from bgremover.network.store import BUNDLED_DIR, ModelStore  # noqa: E402

sys.path.insert(0, str(ROOT / "packaging"))
from bundle_size import make_tar_gz, report  # noqa: E402


def bundle_models(with_int8: bool) -> None:
    store = ModelStore()
    spec = REGISTRY[DEFAULT_MODEL]
    shutil.rmtree(BUNDLED_DIR, ignore_errors=True)
    fp32 = store.ensure(spec)  # downloads if needed; verified against the pinned sha256
    if BUNDLED_DIR in fp32.parents:
        raise SystemExit("the model store resolved to the bundle folder itself")
    BUNDLED_DIR.mkdir()
    shutil.copy2(fp32, BUNDLED_DIR / spec.filename)
    if not store.verify(spec, BUNDLED_DIR / spec.filename, remember=False):
        raise SystemExit("the bundled model copy does not match its pinned hash")
    if with_int8:
        from bgremover.network.quantize import DEFAULT_RECIPE, ensure_int8

        int8 = ensure_int8(spec, store, DEFAULT_RECIPE, fp32_path=fp32)
        shutil.copy2(int8, BUNDLED_DIR / int8.name)
    for f in sorted(BUNDLED_DIR.iterdir()):
        print(f"bundled model: {f.name} ({f.stat().st_size / 1e6:.1f} MB)")


def opencv_note() -> str:
    """Which OpenCV goes into the bundle."""
    from importlib.metadata import version

    installed = version("opencv-python-headless")
    if installed.endswith("+minimal"):
        return f"OpenCV {installed}: core, imgproc and imgcodecs only"
    return (
        f"OpenCV {installed} from PyPI, with every module and FFmpeg (about 130 MB more "
        "than needed): run `python packaging/opencv_minimal.py --install` first to ship "
        "only what bgremover calls"
    )


def windows_version_file(path: Path) -> None:
    """The VERSIONINFO resource of the Windows executables."""
    nums = [int(x) for x in __version__.split(".")[:3]] + [0]
    text = f"""VSVersionInfo(
  ffi=FixedFileInfo(filevers={tuple(nums)}, prodvers={tuple(nums)}),
  kids=[
    StringFileInfo([StringTable('040904B0', [
      StringStruct('CompanyName', 'bgremover'),
      StringStruct('FileDescription', 'bgremover background remover'),
      StringStruct('FileVersion', '{__version__}'),
      StringStruct('ProductName', 'bgremover'),
      StringStruct('ProductVersion', '{__version__}')])]),
    VarFileInfo([VarStruct('Translation', [1033, 1200])])
  ]
)
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--skip-int8", action="store_true", help="bundle only the fp32 model")
    parser.add_argument("--no-archive", action="store_true", help="do not pack the .tar.gz")
    args = parser.parse_args()
    started = time.perf_counter()
    here = ROOT / "packaging"
    opencv = opencv_note()
    print(opencv)
    bundle_models(with_int8=not args.skip_int8)
    if sys.platform == "win32":
        windows_version_file(here / "build" / "version_info.txt")
    cmd = [
        sys.executable, "-m", "PyInstaller", str(here / "bgremover.spec"), "--noconfirm",
        "--clean", "--distpath", str(here / "dist"), "--workpath", str(here / "build" / "work"),
    ]  # fmt: skip
    try:
        subprocess.run(cmd, check=True, cwd=ROOT)
    finally:
        # The staging copy is only for PyInstaller: a source checkout downloads as usual.
        shutil.rmtree(BUNDLED_DIR, ignore_errors=True)
    built = time.perf_counter() - started
    bundle = here / "dist" / "bgremover"
    archive = None
    if sys.platform.startswith("linux") and not args.no_archive:
        arch = platform.machine().lower()
        archive = here / "dist" / f"bgremover-{__version__}-linux-{arch}.tar.gz"
        make_tar_gz(bundle, archive)
    table = report(bundle, archive) + opencv + "\n"
    (here / "dist" / "size-report.txt").write_text(table, encoding="utf-8")
    print(table, end="")
    print(f"bundle: {bundle} ({folder_size(bundle) / 1e6:.0f} MB), built in {built:.0f} s")
    if archive is not None:
        print(f"archive: {archive} ({archive.stat().st_size / 1e6:.0f} MB)")
    app = here / "dist" / "bgremover.app"
    if app.exists():
        print(f"app: {app} ({folder_size(app) / 1e6:.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
