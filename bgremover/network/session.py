"""ONNX Runtime session factory: options, provider choice and honest fallbacks.

This is the only module besides the pipeline's ``infer`` that touches ORT.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import io
import logging
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ModelError, UsageError
from ..libraries import missing_dlls, missing_libraries

log = logging.getLogger(__name__)

CPU = "CPUExecutionProvider"

#: Accelerators tried by ``providers="auto"``, best first; CPU always comes last.
AUTO_ORDER = ("CUDAExecutionProvider", "CoreMLExecutionProvider", "DmlExecutionProvider")

#: Short names accepted on the command line and in settings.
ALIASES = {
    "cpu": CPU,
    "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "directml": "DmlExecutionProvider",
    "dml": "DmlExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
    "rocm": "ROCMExecutionProvider",
}


@dataclass(frozen=True)
class SessionInfo:
    """What was asked for and what actually runs."""

    requested: tuple[str, ...]
    active: tuple[str, ...]
    #: One line per requested provider that is not running, saying why.
    fallbacks: tuple[str, ...]
    input_name: str
    input_size: int | None
    #: The model input's declared shape; None where a dimension is dynamic.
    input_shape: tuple[int | None, ...] = ()


#: Providers that do not run the model on this machine (Azure sends requests to a
#: cloud endpoint); never offered or chosen automatically.
REMOTE = frozenset({"AzureExecutionProvider"})


#: The ONNX Runtime wheels; each installs the same ``onnxruntime`` module, so with two
#: installed, whichever pip wrote last wins (usually the CPU one: onnxruntime #14687).
RUNTIME_WHEELS = (
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-directml",
    "onnxruntime-openvino",
    "onnxruntime-qnn",
)


def installed_runtimes() -> list[str]:
    """The ONNX Runtime wheels installed in this environment."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in RUNTIME_WHEELS:
        try:
            version(name)
        except PackageNotFoundError:
            continue
        found.append(name)
    return found


def runtime_conflict(installed: Sequence[str] | None = None) -> str | None:
    """What to do when several ONNX Runtime wheels are installed at once, else None."""
    wheels = installed_runtimes() if installed is None else list(installed)
    if len(wheels) < 2:
        return None
    wanted = next((w for w in wheels if w != "onnxruntime"), wheels[-1])
    return (
        f"{' and '.join(wheels)} are installed together; they replace each other's files, "
        "so the accelerated build may not be the one that runs. Keep one: "
        f"pip uninstall -y {' '.join(wheels)} && pip install {wanted}"
    )


@functools.cache
def _onnxruntime() -> Any:
    """``import onnxruntime``, with its telemetry events switched off on the first import.

    The second belt to ``bgremover._keep_onnxruntime_telemetry_off``: the variable set
    there is what keeps ONNX Runtime from creating its uploader, device id and event
    cache at all, but only when it is set before ONNX Runtime's first import. Where a
    program imported ``onnxruntime`` before ``bgremover``, turning the events off is what
    is left to do: it acts on the environment ONNX Runtime already created and cannot
    undo that (with this call alone, tests/test_privacy.py still sees the device id, the
    event database and the collector's DNS lookups), so it is no substitute for the
    variable.
    """
    import onnxruntime as ort

    # Missing only from builds without the telemetry API.
    with contextlib.suppress(AttributeError):
        ort.disable_telemetry_events()
    return ort


def load_runtime() -> Any:
    """Import ONNX Runtime, once, before anything else loads native libraries.

    The app calls it before Qt: on Windows, ONNX Runtime >= 1.21 needs a newer MSVC
    runtime than the ``msvcp140.dll`` PySide6 brings, and once Qt's copy is loaded,
    ONNX Runtime fails to initialise (onnxruntime #26127, #16116, #25193). A CUDA build
    also gets the CUDA and cuDNN libraries of the ``nvidia-*`` wheels loaded
    (``onnxruntime.preload_dlls``, ORT >= 1.21), so it needs no PATH or
    LD_LIBRARY_PATH set up. Raises :class:`ModelError` with what to do when the
    runtime cannot be loaded at all.
    """
    try:
        ort = _onnxruntime()
    except ImportError as exc:
        raise ModelError(
            "ONNX Runtime, which runs the models, could not be loaded.",
            technical=str(exc),
            fix=(
                "Install the latest Microsoft Visual C++ Redistributable "
                "(https://aka.ms/vs/17/release/vc_redist.x64.exe), then start again."
                if sys.platform == "win32"
                else "Reinstall it: pip install --force-reinstall onnxruntime"
            ),
        ) from exc
    cuda = "CUDAExecutionProvider" in ort.get_available_providers()
    if cuda and hasattr(ort, "preload_dlls"):
        # It prints what it cannot find: that goes to the log (a windowed app has no
        # console), and cuda_problem() names it if the provider then fails to start.
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                ort.preload_dlls()
            except Exception as exc:  # best effort: the session says why CUDA fell back
                log.debug("preload_dlls failed: %s", exc)
        for line in out.getvalue().splitlines():
            log.info("ONNX Runtime: %s", line)
    return ort


def cuda_problem() -> str | None:
    """Why ONNX Runtime's CUDA provider cannot load here, naming the missing libraries,
    or None when it loads (or this build has no CUDA provider)."""
    ort = _onnxruntime()

    capi = Path(ort.__file__).parent / "capi"
    if sys.platform == "win32":
        if not (capi / "onnxruntime_providers_cuda.dll").exists():
            return None
        major = _cuda_major()
        names = [f"cudart64_{major}.dll", f"cublas64_{major}.dll", f"cublasLt64_{major}.dll"]
        missing = missing_dlls([*names, "cudnn64_9.dll"])
    else:
        library = capi / "libonnxruntime_providers_cuda.so"
        if not library.exists():
            return None
        shared = capi / "libonnxruntime_providers_shared.so"
        if shared.exists():
            # The provider library's own dependency, which ORT loads first.
            with contextlib.suppress(OSError):
                ctypes.CDLL(str(shared), mode=ctypes.RTLD_GLOBAL)
        missing = missing_libraries(library) or []
    if not missing:
        return None
    return (
        f"the CUDA libraries {', '.join(missing)} are missing. Install them with "
        "pip install 'bgremover[gpu]' (the nvidia-* wheels), or install the CUDA and "
        "cuDNN versions this onnxruntime-gpu was built for"
    )


def _cuda_major() -> str:
    """The CUDA major version the installed onnxruntime-gpu was built for."""
    try:
        from onnxruntime.capi import build_and_package_info as info
    except ImportError:
        return "12"
    return str(getattr(info, "cuda_version", "") or "12").split(".")[0]


def available_providers() -> list[str]:
    """The installed ORT's providers that run locally, best first as ORT lists them."""
    ort = _onnxruntime()

    return [p for p in ort.get_available_providers() if p not in REMOTE]


OPENVINO = "OpenVINOExecutionProvider"
#: The options a provider takes after its name, in order, as ORT's option keys:
#: ``openvino:GPU`` runs OpenVINO on its GPU device, ``openvino:GPU:FP16`` at FP16.
PROVIDER_OPTIONS: dict[str, tuple[str, ...]] = {OPENVINO: ("device_type", "precision")}
#: OpenVINO's ``precision`` choices (ACCURACY: the model's own precision, no conversion).
OPENVINO_PRECISIONS = ("FP32", "FP16", "ACCURACY")
#: OpenVINO device names that choose among devices rather than name one.
OPENVINO_META_DEVICES = ("AUTO", "HETERO", "MULTI")


def split_provider(item: str) -> tuple[str, dict[str, str]]:
    """A resolved provider ("OpenVINOExecutionProvider:GPU:FP16") as ORT's name and its
    options ({"device_type": "GPU", "precision": "FP16"}); a plain name has none."""
    name, *values = item.split(":")
    return name, dict(zip(PROVIDER_OPTIONS.get(name, ()), values, strict=False))


def openvino_devices() -> list[str]:
    """The devices the installed OpenVINO provider offers ("CPU", "GPU.0", "NPU"); [] where
    this ONNX Runtime has none."""
    ort = _onnxruntime()

    find = getattr(ort.capi._pybind_state, "get_available_openvino_device_ids", None)
    if find is None or OPENVINO not in available_providers():
        return []
    try:
        return [str(d) for d in find()]
    except Exception as exc:  # a broken OpenVINO install: the session says why it falls back
        log.debug("OpenVINO devices could not be listed: %s", exc)
        return []


def provider_choices() -> list[str]:
    """What can be chosen to run on, best first: each local provider, and for OpenVINO each
    of its devices but its default (the CPU) as ``OpenVINOExecutionProvider:DEVICE``."""
    choices = []
    for name in available_providers():
        choices.append(name)
        if name == OPENVINO:
            choices += [f"{OPENVINO}:{d}" for d in openvino_devices() if d != "CPU"]
    return choices


def _with_options(item: str, name: str, values: list[str]) -> str:
    """``name`` with the options given after it in ``item``, checked and in ORT's spelling."""
    keys = PROVIDER_OPTIONS.get(name, ())
    if not keys:
        raise UsageError(f"{item!r}: {name} takes no options after its name; give it alone.")
    if not all(values):
        raise UsageError(f"{item!r}: an option after {name}'s name is empty.")
    if len(values) > len(keys):
        raise UsageError(
            f"{item!r}: {name} takes at most {len(keys)} options after its name "
            f"({' and '.join(keys)}), e.g. openvino:GPU or openvino:GPU:FP16."
        )
    values = [v.upper() for v in values]
    if len(values) > 1 and values[1] not in OPENVINO_PRECISIONS:
        raise UsageError(
            f"{item!r}: OpenVINO's precision is one of {', '.join(OPENVINO_PRECISIONS)}, "
            f"not {values[1]}."
        )
    if values[1:] == ["FP16"] and values[0] == "CPU":  # OpenVINO refuses it at start-up
        raise UsageError(
            f"{item!r}: OpenVINO's CPU device runs FP32 or ACCURACY; FP16 is for its GPU "
            "and NPU devices."
        )
    return ":".join([name, *values])


def resolve_providers(choice: str | Sequence[str] = "auto") -> tuple[str, ...]:
    """Turn "auto", "cpu", "cuda,cpu" or a list of ORT names into an ordered tuple.

    "auto" means every accelerator in :data:`AUTO_ORDER` that the installed ORT
    offers, then CPU. Explicit choices are kept even when not offered, so that
    the session can report why they fell back. CPU is always appended last. A provider
    may carry its options after its name (:data:`PROVIDER_OPTIONS`: ``openvino:GPU:FP16``,
    kept as ``OpenVINOExecutionProvider:GPU:FP16``; see :func:`split_provider`).
    """
    if isinstance(choice, str):
        items = [c.strip() for c in choice.split(",") if c.strip()] or ["auto"]
    else:
        items = list(choice)
    if items == ["auto"]:
        offered = set(available_providers())
        return (*(p for p in AUTO_ORDER if p in offered), CPU)
    names: list[str] = []
    for item in items:
        base, *values = item.split(":")
        name = ALIASES.get(base.lower(), base)
        if not name.endswith("ExecutionProvider"):
            known = ", ".join(["auto", *ALIASES])
            raise UsageError(f"Unknown execution provider {item!r}. Use one of: {known}.")
        if values:
            name = _with_options(item, name, values)
        if name not in names:
            names.append(name)
    if CPU not in names:
        names.append(CPU)
    return tuple(names)


def _options(threads: int) -> Any:
    ort = _onnxruntime()

    opts = ort.SessionOptions()
    if threads < 0:
        raise UsageError(f"--threads must be 0 (automatic) or a positive number, got {threads}.")
    # 0 lets ORT use one thread per physical core.
    opts.intra_op_num_threads = threads
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle worker threads sleep instead of spinning. Measured on 2 cores: fp32 u2netp
    # 151 -> 122 ms, int8 75 -> 50 ms, and no core burnt while the app waits for input
    # or while the batch pipeline's other threads decode and encode.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # ORT's memory pattern pre-plans one block for all activations on top of its arena:
    # for fp32 u2netp that held 571 MB resident against 368 MB without it, at the same
    # speed (126 ms); int8 272 -> 183 MB. Batches of 12-megapixel photos need that room.
    opts.enable_mem_pattern = False
    # Fallbacks are reported through SessionInfo; ORT's own warnings would
    # only repeat them on stderr (and there is no stderr in a windowed app).
    opts.log_severity_level = 3
    return opts


#: What to do when the model file itself cannot be loaded, when the caller says nothing.
DAMAGED_FILE_ADVICE = (
    "The file may be damaged or not an ONNX model; delete it to download it again, "
    "or choose another model."
)


def ort_reason(exc: BaseException) -> str:
    """ONNX Runtime's error in one line, without its status-code prefix and file path.

    ORT says e.g. ``[ONNXRuntimeError] : 7 : INVALID_PROTOBUF : Load model from
    /x.onnx failed:Protobuf parsing failed.``; the user needs the last part.
    """
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    tail = text.rsplit(" failed:", 1)[-1] if " failed:" in text else text.rsplit(" : ", 1)[-1]
    return tail.strip() or text


def create_session(
    model_path: Path,
    providers: Sequence[str],
    threads: int = 0,
    advice: str = DAMAGED_FILE_ADVICE,
) -> tuple[Any, SessionInfo]:
    """Create an ``InferenceSession`` and say which providers run and why others don't.

    A file ONNX Runtime cannot load raises :class:`ModelError` naming the file,
    ORT's reason in one line and ``advice`` (what the user can do about it).
    """
    ort = _onnxruntime()

    requested = tuple(providers)
    options = _options(threads)
    offered = set(available_providers())
    fallbacks: list[str] = []
    usable = []
    for item in requested:
        name, settings = split_provider(item)
        problem = None if name in offered else (
            f"not offered by this onnxruntime build{_wheel_hint(name)}"
        )  # fmt: skip
        if problem is None and name == OPENVINO:
            problem = _openvino_device_problem(settings.get("device_type"))
        if problem is None:
            usable.append(item)
        else:
            fallbacks.append(f"{item}: {problem}")
    try:
        session = ort.InferenceSession(
            str(model_path),
            options,
            providers=[split_provider(p) if ":" in p else p for p in usable],
        )
    except Exception as exc:
        accelerators = [p for p in usable if p != CPU]
        if not accelerators:
            raise ModelError(
                f"{model_path.name} could not be loaded as a model.",
                technical=ort_reason(exc),
                fix=advice,
            ) from exc
        fallbacks.extend(f"{p}: failed to start ({ort_reason(exc)})" for p in accelerators)
        log.warning("Providers %s failed to start; using CPU: %s", accelerators, exc)
        return create_session_cpu(model_path, requested, threads, fallbacks)
    # ORT names the providers that run; each is said as it was asked, options included.
    asked: dict[str, str] = {}
    for item in usable:
        asked.setdefault(split_provider(item)[0], item)
    active = tuple(asked.get(name, name) for name in session.get_providers())
    for item in usable:
        name = split_provider(item)[0]
        if item not in active:
            why = cuda_problem() if name == "CUDAExecutionProvider" else None
            why = why or runtime_conflict()
            usual = (
                "OpenVINO refused its device or options"
                if name == OPENVINO
                else "usually missing or mismatched CUDA/cuDNN or driver libraries"
            )
            fallbacks.append(
                f"{item}: failed to initialise and ONNX Runtime fell back ({why or usual})"
            )
    return session, _info(session, requested, active, fallbacks)


def _openvino_device_problem(device: str | None) -> str | None:
    """Why OpenVINO cannot run on ``device`` here (one it does not offer), else None."""
    if device is None or device.split(":")[0].split(".")[0] in OPENVINO_META_DEVICES:
        return None
    devices = openvino_devices()
    if not devices or device in devices or any(d.split(".")[0] == device for d in devices):
        return None
    return (
        f"OpenVINO offers no {device} device here (it offers {', '.join(devices)}); "
        "a GPU or NPU needs Intel's driver for it"
    )


def _wheel_hint(provider: str) -> str:
    """Which wheel offers ``provider``, or what stops the one installed from offering it."""
    conflict = runtime_conflict()
    if conflict:
        return f" ({conflict})"
    if provider.startswith(("CUDA", "Tensorrt")):
        return " (install bgremover[gpu]: onnxruntime-gpu in place of onnxruntime)"
    if provider == "OpenVINOExecutionProvider":
        return (
            " (install onnxruntime-openvino in its place: pip uninstall -y onnxruntime && "
            "pip install onnxruntime-openvino)"
        )
    if provider == "DmlExecutionProvider":
        return " (on Windows, install bgremover[directml]: onnxruntime-directml in its place)"
    return ""


def create_session_cpu(
    model_path: Path, requested: tuple[str, ...], threads: int, fallbacks: list[str]
) -> tuple[Any, SessionInfo]:
    ort = _onnxruntime()

    session = ort.InferenceSession(str(model_path), _options(threads), providers=[CPU])
    return session, _info(session, requested, tuple(session.get_providers()), fallbacks)


def _info(
    session: Any, requested: tuple[str, ...], active: tuple[str, ...], fallbacks: list[str]
) -> SessionInfo:
    inp = session.get_inputs()[0]
    shape = tuple(d if isinstance(d, int) else None for d in inp.shape)
    # A fixed square side; None when the height or width is dynamic.
    size = shape[-1] if len(shape) == 4 and shape[-2] == shape[-1] else None
    return SessionInfo(requested, active, tuple(fallbacks), inp.name, size, shape)


SessionFactory = Callable[[], tuple[Any, SessionInfo]]


class SessionPool:
    """ONNX Runtime sessions shared by every :class:`~bgremover.engine.pipeline.Remover` using it.

    Keyed by what decides a session (the model file's identity, precision, providers,
    threads), never by options applied after inference (refinement, composition), so
    toggling those reuses the session. At most ``capacity`` sessions are kept; the least
    recently used one is released when another is needed. With a ``budget`` (bytes), sessions
    are also released, least recently used first, while the models held weigh more than
    it (each weighs its model file's size, as the caller says): one 1 GB BiRefNet does not
    sit beside two others after the user has moved on. The newest session is always kept.
    A released session is freed once the last caller holding it is done with it.

    Lookups may come from several threads (a batch's inference and finishing threads);
    two threads asking for the same new key create it once.
    """

    def __init__(self, capacity: int = 3, budget: int | None = None) -> None:
        if capacity < 1:
            raise ValueError("a session pool holds at least one session")
        self.capacity = capacity
        self.budget = budget
        self._sessions: OrderedDict[Hashable, tuple[Any, SessionInfo]] = OrderedDict()
        self._weights: dict[Hashable, int] = {}
        self._lock = threading.Lock()
        self._creating: dict[Hashable, threading.Lock] = {}

    def get(
        self, key: Hashable, create: SessionFactory, weight: int = 0
    ) -> tuple[Any, SessionInfo]:
        """The session for ``key``, made by ``create`` (outside the pool's lock) if missing;
        ``weight`` is what it counts against the budget (its model file's bytes)."""
        with self._lock:
            if key in self._sessions:
                self._sessions.move_to_end(key)
                return self._sessions[key]
            making = self._creating.setdefault(key, threading.Lock())
        with making:  # one creation per key; other keys stay available meanwhile
            with self._lock:
                if key in self._sessions:
                    self._sessions.move_to_end(key)
                    return self._sessions[key]
            made = create()
            with self._lock:
                self._sessions[key] = made
                self._weights[key] = weight
                self._creating.pop(key, None)
                while len(self._sessions) > 1 and (
                    len(self._sessions) > self.capacity or self._over_budget()
                ):
                    old, _ = self._sessions.popitem(last=False)
                    self._weights.pop(old, None)
                    log.debug("Released the least recently used session %s", old)
            return made

    def _over_budget(self) -> bool:
        return self.budget is not None and sum(self._weights.values()) > self.budget

    def release(self, key: Hashable) -> bool:
        """Release the session for ``key`` if held (freed once its last user is done with
        it); True if it was held."""
        with self._lock:
            self._weights.pop(key, None)
            return self._sessions.pop(key, None) is not None

    def keys(self) -> list[Hashable]:
        """The keys held, least recently used first."""
        with self._lock:
            return list(self._sessions)

    def clear(self) -> None:
        """Release every session (each is freed when its last user is done with it)."""
        with self._lock:
            self._sessions.clear()
            self._weights.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._sessions
