"""Provider choice and honest fallback reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from bgremover.errors import ModelError, UsageError
from bgremover.session import CPU, available_providers, create_session, resolve_providers


def test_auto_ends_with_cpu() -> None:
    providers = resolve_providers("auto")
    assert providers[-1] == CPU
    assert all(p in available_providers() for p in providers)


def test_aliases_and_order() -> None:
    assert resolve_providers("cuda,cpu") == ("CUDAExecutionProvider", CPU)
    assert resolve_providers("cpu") == (CPU,)
    assert resolve_providers(["DmlExecutionProvider"]) == ("DmlExecutionProvider", CPU)


def test_unknown_provider_is_usage_error() -> None:
    with pytest.raises(UsageError, match="Unknown execution provider 'cuba'"):
        resolve_providers("cuba")


def test_missing_provider_falls_back_with_reason(tiny_model: Path) -> None:
    missing = next(
        p
        for p in ("CUDAExecutionProvider", "DmlExecutionProvider", "CoreMLExecutionProvider")
        if p not in available_providers()
    )
    session, info = create_session(tiny_model, (missing, CPU), threads=1)
    assert info.active == (CPU,)
    assert len(info.fallbacks) == 1 and info.fallbacks[0].startswith(missing)
    assert "not offered" in info.fallbacks[0]
    assert info.input_name == "input.1" and info.input_size == 32
    assert session.get_providers() == [CPU]


def test_broken_model_file_is_model_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a protobuf")
    with pytest.raises(ModelError, match="could not load the model"):
        create_session(bad, (CPU,))


def test_negative_threads_rejected(tiny_model: Path) -> None:
    with pytest.raises(UsageError, match="threads"):
        create_session(tiny_model, (CPU,), threads=-1)
