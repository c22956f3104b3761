"""Build OpenCV with only what bgremover calls, for the desktop bundles.

    python packaging/opencv_minimal.py [--install] [--jobs N]

bgremover calls OpenCV's core and imgproc (resize, blurs, morphology, distance transform,
GrabCut, k-means, remap) and imgcodecs (JPEG and PNG decoding) and nothing else. The PyPI
wheel carries every module, FFmpeg, OpenBLAS and a dozen codec libraries: 159 MB of a
419 MB Linux bundle. This builds the same OpenCV release from its source with CMake, with
those three modules, libjpeg-turbo, libpng and zlib built in, and the Python bindings; then
packs it as a wheel of ``opencv-python-headless`` with the local version ``+minimal``, so
pip and PyInstaller see an ordinary install. ``--install`` installs that wheel into the
running environment in place of the PyPI one. The wheel is kept in
packaging/build/opencv/ and reused while this file is unchanged.

The source is the opencv-python-headless sdist on PyPI (it holds OpenCV's sources),
verified against its sha256. It is not built through that sdist's own ``pip wheel``
route (``CMAKE_ARGS``): its packaging requires the Python typing stubs, and OpenCV 5.0's
stub generator fails unless the calib module (and with it objdetect and dnn) is built.

Needs CMake >= 3.24, a C++ compiler (Visual Studio on Windows, Xcode's on macOS), on x86
NASM (libjpeg-turbo's SIMD code; without it JPEG decoding is 60 % slower) and, optionally,
Ninja; about 10-20 minutes on two cores.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pooch

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "packaging" / "build" / "opencv"

VERSION = "5.0.0.93"  # opencv-python-headless: OpenCV 5.0.0, packaging release 93
SDIST = (
    "https://files.pythonhosted.org/packages/1d/99/"
    "76b7c80252aa83c1af16393454aafd125a0287101afe8deb0a6821af0e30/"
    f"opencv_python_headless-{VERSION}.tar.gz"
)
SDIST_SHA256 = "b82f9831daab90b725c7c1ee1b36cb5732c367096ac76d119e64e14eb70d5f3c"
LOCAL_VERSION = f"{VERSION}+minimal"

MODULES = ["core", "imgproc", "imgcodecs", "python3"]
OFF = [
    # Everything OpenCV would otherwise detect or download: none of it is called.
    "IPP", "ITT", "OPENCL", "CUDA", "FFMPEG", "GSTREAMER", "V4L", "MSMF", "DSHOW", "AVFOUNDATION",
    "1394", "VA", "TIFF", "WEBP", "OPENJPEG", "JASPER", "OPENEXR", "AVIF", "JPEGXL", "SPNG",
    "IMGCODEC_HDR", "IMGCODEC_SUNRASTER", "IMGCODEC_PXM", "IMGCODEC_PFM", "LAPACK", "EIGEN",
    "PROTOBUF", "ADE", "QT", "GTK", "WIN32UI", "OPENGL", "VTK", "TBB", "OPENMP", "HALIDE",
    "OBSENSOR", "UNIFONT",
]  # fmt: skip


def cmake_options() -> list[str]:
    py_include = sysconfig.get_paths()["include"]
    import numpy

    options = [
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DBUILD_LIST={','.join(MODULES)}",
        "-DBUILD_SHARED_LIBS=OFF",  # one extension module, no libopencv_*.so beside it
        "-DBUILD_JPEG=ON", "-DBUILD_PNG=ON", "-DBUILD_ZLIB=ON",  # built in, not the system's
        "-DBUILD_TESTS=OFF", "-DBUILD_PERF_TESTS=OFF", "-DBUILD_DOCS=OFF",
        "-DBUILD_EXAMPLES=OFF", "-DBUILD_opencv_apps=OFF", "-DBUILD_JAVA=OFF",
        "-DBUILD_opencv_python2=OFF", "-DBUILD_opencv_python3=ON",
        "-DPYTHON3_LIMITED_API=ON",  # cv2.abi3: one build for every Python 3 version
        f"-DPYTHON3_EXECUTABLE={sys.executable}",
        f"-DPYTHON3_INCLUDE_DIR={py_include}",
        f"-DPYTHON3_NUMPY_INCLUDE_DIRS={numpy.get_include()}",
        "-DOPENCV_PYTHON3_INSTALL_PATH=python",
        "-DINSTALL_CREATE_DISTRIB=ON",
        "-DOPENCV_SKIP_PYTHON_LOADER=OFF",
        "-DCMAKE_INSTALL_PREFIX=" + str(WORK / "install"),
        "-DCMAKE_SKIP_INSTALL_RPATH=ON",  # static: no run path to the build machine's folders
    ]  # fmt: skip
    if sys.platform == "win32":
        # OpenCV links the stable ABI's python3.lib in its place for the limited API.
        lib = f"python{sys.version_info.major}{sys.version_info.minor}.lib"
        options.append(f"-DPYTHON3_LIBRARY={Path(sys.base_prefix) / 'libs' / lib}")
    return options + [f"-DWITH_{name}=OFF" for name in OFF]


def fingerprint() -> str:
    """What the wheel depends on: this file (source pin, modules, options) and the platform."""
    text = Path(__file__).read_bytes() + sysconfig.get_platform().encode()
    return hashlib.sha256(text).hexdigest()[:12]


def source() -> Path:
    """OpenCV's source tree from the verified sdist."""
    tree = WORK / "src" / f"opencv_python_headless-{VERSION}" / "opencv"
    if (tree / "CMakeLists.txt").exists():
        return tree
    archive = pooch.retrieve(SDIST, known_hash=f"sha256:{SDIST_SHA256}", path=WORK / "download")
    prefix = f"opencv_python_headless-{VERSION}/"
    with tarfile.open(archive) as tar:
        wanted = [m for m in tar.getmembers() if m.name.startswith(prefix + "opencv/")]
        wanted += [tar.getmember(prefix + n) for n in ("LICENSE.txt", "LICENSE-3RD-PARTY.txt")]
        tar.extractall(WORK / "src", members=wanted, filter="data")
    return tree


def check_tools() -> None:
    missing = [tool for tool in ("cmake",) if shutil.which(tool) is None]
    if platform.machine().lower() in ("x86_64", "amd64", "x86", "i686") and not shutil.which(
        "nasm"
    ):
        missing.append("nasm")  # else libjpeg-turbo builds without SIMD, silently
    if missing:
        raise SystemExit(
            f"opencv_minimal: {', '.join(missing)} not found. Install them (Debian/Ubuntu: "
            "apt-get install cmake nasm; macOS: brew install cmake nasm; Windows: choco "
            "install cmake nasm, then put them on PATH) and run this again."
        )


def build(jobs: int) -> Path:
    """Configure, build and install OpenCV; the installed cv2 package's folder."""
    check_tools()
    tree = source()
    build_dir = WORK / "cmake"
    generator = ["-G", "Ninja"] if shutil.which("ninja") and sys.platform != "win32" else []
    # A fresh configure each time (a cached tool lookup, NASM's, would otherwise stick);
    # the object files stay, so an unchanged build is quick.
    (build_dir / "CMakeCache.txt").unlink(missing_ok=True)
    subprocess.run(["cmake", "-S", str(tree), "-B", str(build_dir), *generator,
                    *cmake_options()], check=True)  # fmt: skip
    subprocess.run(["cmake", "--build", str(build_dir), "--config", "Release",
                    "--parallel", str(jobs)], check=True)  # fmt: skip
    shutil.rmtree(WORK / "install", ignore_errors=True)
    subprocess.run(["cmake", "--install", str(build_dir), "--config", "Release"], check=True)
    return WORK / "install" / "python" / "cv2"


def stage(installed: Path, staging: Path) -> None:
    """The cv2 package laid out as opencv-python's wheels lay it out (the extension next to
    the loader), with OpenCV's licences, and its dist-info for ``wheel pack``."""
    shutil.rmtree(staging, ignore_errors=True)
    package = staging / "cv2"
    shutil.copytree(installed, package)
    extensions = [p for p in package.glob("python-3*/cv2*") if p.suffix in (".so", ".pyd")]
    if len(extensions) != 1:
        raise SystemExit(f"expected one built cv2 extension, found {extensions}")
    extension = extensions[0]
    extension.rename(package / extension.name)
    shutil.rmtree(extension.parent)
    (package / "config-3.py").write_text(
        "PYTHON_EXTENSIONS_PATHS = [\n    LOADER_DIR\n] + PYTHON_EXTENSIONS_PATHS\n",
        encoding="utf-8",
    )
    # Statically linked: there are no OpenCV libraries to find next to the extension.
    (package / "config.py").write_text("BINARIES_PATHS = [] + BINARIES_PATHS\n", "utf-8")
    licences = WORK / "src" / f"opencv_python_headless-{VERSION}"
    for name in ("LICENSE.txt", "LICENSE-3RD-PARTY.txt"):
        shutil.copy2(licences / name, package / name)
    info = staging / f"opencv_python_headless-{LOCAL_VERSION}.dist-info"
    info.mkdir()
    numpy_floor = "numpy>=1.21"
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\n"
        "Name: opencv-python-headless\n"
        f"Version: {LOCAL_VERSION}\n"
        "Summary: OpenCV core, imgproc and imgcodecs with Python bindings (bgremover's "
        "minimal build)\n"
        "License: Apache 2.0\n"
        f"Requires-Dist: {numpy_floor}\n",
        encoding="utf-8",
    )
    platform_tag = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    (info / "WHEEL").write_text(
        "Wheel-Version: 1.0\n"
        "Generator: bgremover packaging/opencv_minimal.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: cp37-abi3-{platform_tag}\n",
        encoding="utf-8",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="install it into this Python")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    wheels = WORK / "wheel" / fingerprint()
    found = sorted(wheels.glob("*.whl"))
    if found:
        wheel = found[0]
        print(f"reusing {wheel}")
    else:
        staging = WORK / "staging"
        stage(build(args.jobs), staging)
        wheels.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "wheel", "pack", str(staging), "-d", str(wheels)],
                       check=True)  # fmt: skip
        wheel = sorted(wheels.glob("*.whl"))[0]
        print(f"built {wheel} ({wheel.stat().st_size / 1e6:.1f} MB)")
    if args.install:
        subprocess.run([sys.executable, "-m", "pip", "install", "--force-reinstall", "--no-deps",
                        str(wheel)], check=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
