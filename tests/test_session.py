"""Provider choice, honest fallback reports, and the session pool."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bgremover.errors import ModelError, UsageError
from bgremover.network.session import (
    CPU,
    SessionPool,
    available_providers,
    create_session,
    resolve_providers,
    split_provider,
)

from conftest import build_tiny_model


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


def test_openvino_takes_its_device_and_precision_after_its_name() -> None:
    from bgremover.gui.settings_panel import provider_label

    ov = "OpenVINOExecutionProvider"
    assert resolve_providers("openvino:gpu:fp16") == (f"{ov}:GPU:FP16", CPU)
    assert resolve_providers("openvino:NPU,cpu") == (f"{ov}:NPU", CPU)
    assert split_provider(f"{ov}:GPU.1:FP16") == (ov, {"device_type": "GPU.1", "precision": "FP16"})
    assert split_provider(CPU) == (CPU, {})
    assert provider_label(f"{ov}:GPU:FP16") == "OpenVINO (GPU, FP16)"
    assert provider_label(ov) == "OpenVINO"
    for bad, words in (
        ("cpu:GPU", "takes no options"),
        ("openvino:GPU:FP64", "one of FP32, FP16, ACCURACY"),
        ("openvino:CPU:FP16", "CPU device runs FP32 or ACCURACY"),
        ("openvino:GPU:FP16:x", "at most 2 options"),
        ("openvino::FP16", "is empty"),
    ):
        with pytest.raises(UsageError, match=words):
            resolve_providers(bad)


def test_a_provider_with_options_this_build_lacks_falls_back_naming_them(
    tiny_model: Path,
) -> None:
    if "OpenVINOExecutionProvider" in available_providers():
        pytest.skip("this onnxruntime offers OpenVINO (tests/test_openvino.py covers it)")
    session, info = create_session(tiny_model, resolve_providers("openvino:GPU"), threads=1)
    assert info.active == (CPU,) and session.get_providers() == [CPU]
    assert info.fallbacks[0].startswith("OpenVINOExecutionProvider:GPU: not offered")
    assert "pip install onnxruntime-openvino" in info.fallbacks[0]


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
    with pytest.raises(ModelError, match=r"bad\.onnx could not be loaded") as caught:
        create_session(bad, (CPU,), advice="Choose another file.")
    message = str(caught.value)
    # ORT's reason in its own words, without its status-code prefix; then what to do.
    assert "Protobuf parsing failed" in message and "[ONNXRuntimeError]" not in message
    assert message.endswith("Choose another file.")


def test_negative_threads_rejected(tiny_model: Path) -> None:
    with pytest.raises(UsageError, match="threads"):
        create_session(tiny_model, (CPU,), threads=-1)


def test_refine_and_compose_options_never_make_a_session(tiny_model: Path, rgb_gradient) -> None:
    """Removers that differ only in refinement share the pool's one session."""
    from bgremover.engine.pipeline import EngineConfig, Remover

    pool = SessionPool()
    config = EngineConfig(str(tiny_model), providers="cpu")
    first = Remover.from_config(config, pool=pool)
    first.remove(rgb_gradient)
    for refine in (False, True, False):
        Remover.from_config(replace(config, refine=refine), pool=pool).remove(rgb_gradient)
    assert len(pool) == 1
    int8_config = replace(config, precision="int8", recipe="naive")
    assert Remover.from_config(int8_config, pool=pool).session_key() != first.session_key()


def test_pool_releases_the_least_recently_used_session(tmp_path: Path, rgb_gradient) -> None:
    """Switching between four models keeps at most `capacity` sessions, and frees the rest."""
    import gc
    import weakref

    from bgremover.engine.pipeline import EngineConfig, Remover

    pool = SessionPool(capacity=2)
    models = [build_tiny_model(tmp_path / f"m{i}.onnx", size=16 + 8 * i) for i in range(4)]
    released = []
    for path in models:
        remover = Remover.from_config(EngineConfig(str(path), providers="cpu"), pool=pool)
        remover.remove(rgb_gradient)
        released.append(weakref.ref(remover._session()[0]))
    del remover
    gc.collect()
    assert len(pool) == 2
    assert [ref() is None for ref in released] == [True, True, False, False]
    # The session used again is kept over the older one.
    again = Remover.from_config(EngineConfig(str(models[2]), providers="cpu"), pool=pool)
    again.load()
    back = Remover.from_config(EngineConfig(str(models[0]), providers="cpu"), pool=pool)
    back.load()
    gc.collect()
    assert pool.keys() == [again.session_key(), back.session_key()]
    assert released[3]() is None


def test_pool_budget_releases_heavy_sessions_but_keeps_the_newest() -> None:
    """Model bytes count: two light sessions and one heavy one do not fit a budget the heavy
    one alone nearly fills, so the oldest go; a session heavier than the budget still runs."""
    pool = SessionPool(capacity=3, budget=1000)

    def make(name: str):
        return lambda: (name, name)

    pool.get("a", make("a"), 100)
    pool.get("b", make("b"), 100)
    assert pool.keys() == ["a", "b"]
    pool.get("big", make("big"), 900)
    assert pool.keys() == ["b", "big"]  # 1100 > 1000: the oldest went, 1000 fits
    pool.get("huge", make("huge"), 5000)
    assert pool.keys() == ["huge"]  # over the budget alone, but the newest is kept
    assert pool.get("huge", make("other"), 5000) == ("huge", "huge")


def test_pool_creates_a_session_once_for_concurrent_callers() -> None:
    import threading

    pool = SessionPool()
    made = []

    def create():
        made.append(1)
        threading.Event().wait(0.05)
        return object(), None

    threads = [threading.Thread(target=pool.get, args=("k", create)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(pool) == 1
