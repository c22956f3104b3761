"""fp32 -> int8: the quantization recipes, calibration, and the int8 cache.

Reached from ``models quantize`` and from the first use of ``precision="int8"``.
onnx and ONNX Runtime's quantization tools are imported lazily: they are build
tools, not part of the inference hot path. The U²-Net graph rewrite that the
"faithful" recipe applies before quantizing is in ``u2net_graph.py``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError
from ..files.imaging import read_image, walk_images
from .families import DEFAULT_FAMILY, Family
from .measured import cpu_info
from .models import ModelSpec
from .store import ModelStore, file_identity
from .transforms import preprocess

log = logging.getLogger(__name__)

#: Called with (steps done, total steps): (0, total) at once, then one step per
#: calibration view calibrated, and one for each slow part before and after them.
#: It may raise (e.g. :class:`~bgremover.network.store.DownloadCancelled`) to stop the build.
QuantizeProgress = Callable[[int, int], None]

#: The views :func:`calibration_samples` makes of each photo.
VIEWS_PER_PHOTO = 10
#: The steps of a build besides those of its views: the heavy imports and the model read,
#: the views made, the graph prepared (shapes inferred and folded), the model quantized.
SETUP_STEPS = 4

#: The calibration photos shipped with the package (sources in SOURCES.md there).
CALIBRATION_DIR = Path(__file__).parents[1] / "calibration"


@dataclass(frozen=True)
class Recipe:
    """How an fp32 U²-Net becomes int8 (static QDQ through ONNX Runtime)."""

    name: str
    description: str
    #: Bumped whenever the recipe's result changes, so cached int8 models are remade.
    version: int = 1
    #: Rewrite the graph first (see :func:`prepare_graph`): main output only, shapes
    #: folded, near-constant activation channels shifted out, narrow convs widened.
    rewrite: bool = False
    per_channel: bool = True
    activation_type: str = "QUInt8"
    weight_type: str = "QInt8"
    calibrate_method: str = "MinMax"
    extra_options: dict[str, Any] = field(default_factory=dict)
    #: Measure every activation tensor first (``graph_tools.analyse``): its ranges become
    #: the calibration, and the weakest tensors (lowest SNR) stay float.
    analyse: bool = False
    #: At most this many tensors stay float, and only those under ``snr_floor_db``.
    float_tensors: int = 0
    snr_floor_db: float = 0.0
    #: Calibrate on at most this many of the views (evenly spread); None: all of them.
    max_views: int | None = None
    #: Activation ranges: each view's extremes averaged, rather than the extremes of all.
    mean_range: bool = False


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            "faithful",
            "Static QDQ (per-channel symmetric int8 weights, uint8 activations, MinMax) on a "
            "rewritten graph: the two near-constant decoder channels that crush the activation "
            "scale of their tensors are shifted into biases, narrow convs are widened for "
            "ORT's int8 kernels. Every original node runs in int8.",
            version=2,
            rewrite=True,
            extra_options={"WeightSymmetric": True, "ActivationSymmetric": False},
        ),
        Recipe(
            "generic",
            "Static QDQ for any family (per-channel symmetric int8 weights, uint8 "
            "activations), fp16 graphs upcast to fp32 first, main output only. One fp32 pass "
            "over 24 calibration views measures every activation tensor: each view's extremes, "
            "averaged, are its range (plain MinMax over all views lets one outlier view set "
            "the step: on IS-Net's decoder 120 against a typical 12), and each channel's "
            "variance against the uint8 step gives the tensor's SNR (median over its live "
            "channels). Tensors still under 12 dB (a near-constant or huge-range channel "
            "crushing its siblings), at most 10, stay float with their producer and readers, "
            "as does the tail from the last conv to the mask. Chosen on held-out calibration "
            "views of IMG.LY's IS-Net: mean |Δα| 0.027 (MinMax) -> 0.005, edge band 0.076 -> "
            "0.017; MinMax with its 40 weakest tensors float instead (49 float nodes) gave "
            "0.006 and 0.019. IS-Net has no tensor under the floor.",
            version=2,
            analyse=True,
            mean_range=True,
            float_tensors=10,
            snr_floor_db=12.0,
            max_views=24,
            extra_options={"WeightSymmetric": True, "ActivationSymmetric": False},
        ),
        Recipe(
            "naive",
            "Plain static QDQ: per-channel int8 weights, uint8 activations, MinMax "
            "calibration, every op ORT can quantize. Fast, but unfaithful on u2netp.",
        ),
    )
}
DEFAULT_RECIPE = "faithful"


def get_recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise ModelError(f"Unknown int8 recipe {name!r}; choose one of: {', '.join(RECIPES)}.")
    return RECIPES[name]


def calibration_files(folder: Path | None = None) -> list[Path]:
    files = walk_images(folder or CALIBRATION_DIR)
    if not files:
        raise ModelError(
            f"No calibration images found in {folder or CALIBRATION_DIR}; "
            "give a folder of photos with --calibration."
        )
    return files


def calibration_samples(files: list[Path]) -> Iterator[np.ndarray]:
    """Ten views per photo (:data:`VIEWS_PER_PHOTO`): full, mirrored, half resolution, an
    80 % centre crop, 65 % and 50 % crops. Tight crops look like the close-ups the model
    also sees; together they turn a few licence-clean photos into several dozen
    calibration samples."""
    for path in files:
        rgb = read_image(path).rgb
        h, w = rgb.shape[:2]

        def crop(frac: float, oy: float, ox: float, rgb=rgb, h=h, w=w) -> np.ndarray:
            ch, cw = max(int(h * frac), 1), max(int(w * frac), 1)
            y0, x0 = int((h - ch) * oy), int((w - cw) * ox)
            return rgb[y0 : y0 + ch, x0 : x0 + cw]

        views = (
            rgb,
            rgb[:, ::-1],
            rgb[::2, ::2],
            crop(0.8, 0.5, 0.5),
            crop(0.65, 0, 0),
            crop(0.65, 1, 1),
            crop(0.65, 0, 0)[:, ::-1],
            crop(0.5, 0, 1),
            crop(0.5, 1, 0),
            crop(0.5, 0.5, 0.5),
        )
        for view in views:
            yield np.ascontiguousarray(view)


def reduced_range() -> bool:
    """Whether the int8 weights made here are 7-bit (ORT's ``reduce_range``).

    On an x86-64 CPU without VNNI, ONNX Runtime's int8 convolutions (uint8 activations by
    int8 weights) add each pair of products in 16 bits, which saturates on full-range
    weights; ORT's quantization guide gives 7-bit weights for such CPUs. With VNNI (and on
    ARM, whose dot product adds in 32 bits), full range. Where the CPU's features cannot be
    read, full range, as before. Why, and what it measured: docs/decisions/0013.
    """
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64", "x86", "i386", "i686"):
        return False
    features = _cpu_features()
    if features is None:
        return False
    if any(on for name, on in features.items() if "VNNI" in name):
        return False
    # AVX-VNNI without AVX-512, which NumPy does not list (Linux names it)
    return "avx_vnni" not in cpu_info().get("flags", "").split()


def fast_int8() -> bool:
    """Whether int8 runs well faster than fp32 here: a processor with int8 dot-product
    instructions (VNNI on x86-64, ARM's), where ORT's int8 kernels add in 32 bits and the
    weights are full range (:func:`reduced_range`). Without them int8 is no faster: u2netp
    and IS-Net took the same time in int8 as in fp32 on an AVX2 host (README)."""
    return not reduced_range()


@functools.cache
def _cpu_features() -> dict[str, bool] | None:
    """The CPU features NumPy detected at import (what ``numpy.show_runtime`` lists)."""
    import importlib

    for name in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            return dict(importlib.import_module(name).__cpu_features__)
        except (ImportError, AttributeError):
            continue
    return None


def int8_path(
    store: ModelStore,
    spec: ModelSpec,
    fp32_path: Path,
    recipe: str,
    calibration: Path | None = None,
    family: Family | None = None,
) -> Path:
    """Cache path of the int8 model: keyed by the fp32 hash, recipe, calibration, the
    family's preprocessing, ORT version and, where they are 7-bit, the weights' range
    (:func:`reduced_range`: a cache shared with a VNNI machine holds each one's own)."""
    import onnxruntime as ort

    fp32_hash = spec.sha256 or file_identity(fp32_path)
    calib = "default" if calibration is None else _folder_key(calibration)
    version = get_recipe(recipe).version
    family = family or spec.family or DEFAULT_FAMILY
    # U²-Net's keys stay as they were, so int8 files made before families still count.
    prep = "" if family.name == "u2net" else f"|{family.preprocessing_key()}"
    reduced = "|7-bit weights" if reduced_range() else ""
    key = f"{fp32_hash}|{recipe}|{version}|{calib}|{ort.__version__}{prep}{reduced}"
    key = hashlib.sha256(key.encode()).hexdigest()
    folder = store.models_dir if spec.local_path is None else store.models_dir / "local"
    return folder / f"{spec.name}.int8-{recipe}-{key[:12]}.onnx"


def _folder_key(folder: Path) -> str:
    digest = hashlib.sha256()
    for f in calibration_files(folder):
        digest.update(f"{f.name}:{f.stat().st_size}".encode())
    return digest.hexdigest()


def cached_int8(store: ModelStore, spec: ModelSpec) -> list[dict[str, Any]]:
    """Records of the int8 models of ``spec`` already in the cache."""
    from .store import BUNDLED_DIR

    records = []
    pattern = f"{spec.name}.int8-*.onnx"
    for path in sorted([*store.models_dir.glob(pattern), *BUNDLED_DIR.glob(pattern)]):
        recipe = path.stem.split(".int8-", 1)[1].rsplit("-", 1)[0]
        records.append(
            {
                "name": spec.name,
                "precision": "int8",
                "recipe": recipe,
                "path": str(path),
                "sha256": None,
                "bytes": path.stat().st_size,
            }
        )
    return records


def ensure_int8(
    spec: ModelSpec,
    store: ModelStore,
    recipe: str = DEFAULT_RECIPE,
    calibration: Path | None = None,
    progress: QuantizeProgress | None = None,
    fp32_path: Path | None = None,
    family: Family | None = None,
) -> Path:
    """The int8 model for ``spec``: from the cache, or made now from the fp32 one.
    ``family`` is the model's (for a local file, the one its signature showed)."""
    get_recipe(recipe)
    fp32 = fp32_path or store.ensure(spec)
    family = family or spec.family or DEFAULT_FAMILY
    target = int8_path(store, spec, fp32, recipe, calibration, family)
    if target.is_file():
        return target
    from .store import BUNDLED_DIR

    if (BUNDLED_DIR / target.name).is_file():  # made at build time, same key
        return BUNDLED_DIR / target.name
    quantize_model(fp32, target, recipe, calibration_files(calibration), family, progress)
    return target


def quantize_model(
    fp32_path: Path,
    out_path: Path,
    recipe_name: str,
    images: list[Path],
    family: Family,
    progress: QuantizeProgress | None = None,
) -> float:
    """Quantize ``fp32_path`` into ``out_path`` (atomically); returns the seconds it took.

    ``progress`` hears of it from the start (see :data:`QuantizeProgress`); when it
    raises, the build stops and leaves nothing behind: the work is done in a temporary
    folder, and the int8 file appears in one rename at the end.
    """
    recipe = get_recipe(recipe_name)
    start = time.perf_counter()
    # The progress is known before any work: the first report comes at once (the
    # imports, the reads and the graph's preparation before the first view showed
    # nothing, 5 s for u2netp on two busy cores, and no cancel was seen then), and each
    # slow part is a step, at which a cancel is also seen.
    count = _view_count(len(images), recipe)
    # The analysis measures every view itself; ORT's own calibration then sees one, or
    # none where ORT takes the analysis' ranges as its calibration cache.
    steps = SETUP_STEPS + count * (2 if recipe.rewrite else 1) + (1 if recipe.analyse else 0)
    done = [0]

    def step() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], steps)

    if progress is not None:
        progress(0, steps)
    import onnx
    from onnx import version_converter
    from onnxruntime import quantization as q

    from .graph_tools import is_fp16, upcast_fp16
    from .u2net_graph import prepare_graph

    model = onnx.load(str(fp32_path))
    if is_fp16(model):  # e.g. IMG.LY's IS-Net: fp16 weights and compute behind casts
        log.info("int8: %s is fp16; upcast (%d casts removed)", fp32_path.name, upcast_fp16(model))
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 13:  # per-channel QDQ needs opset 13
        model = version_converter.convert_version(model, 13)
    input_name = model.graph.input[0].name
    # The file's own input size when it declares a fixed one, as the session does.
    side = model.graph.input[0].type.tensor_type.shape.dim[-1].dim_value or family.input_size
    step()  # read
    views = list(calibration_samples(images))
    if recipe.max_views is not None and len(views) > recipe.max_views:
        picks = np.linspace(0, len(views) - 1, recipe.max_views).round().astype(int)
        views = [views[i] for i in dict.fromkeys(picks.tolist())]
    batches = [preprocess(view, family, side) for view in views]
    del views
    if len(batches) != count:  # the steps promised would not add up
        raise AssertionError(f"{len(batches)} calibration views, {count} expected")
    step()  # the views made
    calib_batches = batches[:1] if recipe.analyse else batches

    out_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bgremover-quant-") as tmp:
        float_nodes: list[str] = []
        extra = dict(recipe.extra_options)
        cache: Path | None = None
        if recipe.rewrite:
            model, float_nodes = prepare_graph(model, batches, Path(tmp), step)
        elif recipe.analyse:
            upcast = Path(tmp) / "upcast.onnx"
            onnx.save(model, str(upcast))
            del model  # not held while the analysis runs
            model, float_nodes, overrides = _analysed_graph(
                upcast, recipe, family, batches, Path(tmp), step
            )
            extra["TensorQuantOverrides"] = overrides
            cache = _calibration_cache(overrides, recipe, Path(tmp))
            if cache is not None:
                calib_batches = []
                step()  # the calibration view ORT no longer needs
        else:
            step()  # no graph to prepare: its step is done
        del batches
        src = Path(tmp) / "fp32.onnx"
        onnx.save(model, str(src))
        del model
        _release_memory()
        dst = Path(tmp) / "int8.onnx"

        class Reader(q.CalibrationDataReader):
            def __init__(self) -> None:
                self._items = iter(calib_batches)

            def get_next(self) -> dict[str, np.ndarray] | None:
                batch = next(self._items, None)
                if batch is None:
                    return None
                step()
                return {input_name: batch}

        root = logging.getLogger()
        root.addFilter(_quiet_advice)
        try:
            q.quantize_static(
                str(src),
                str(dst),
                Reader(),
                quant_format=q.QuantFormat.QDQ,
                per_channel=recipe.per_channel,
                activation_type=getattr(q.QuantType, recipe.activation_type),
                weight_type=getattr(q.QuantType, recipe.weight_type),
                calibrate_method=getattr(q.CalibrationMethod, recipe.calibrate_method),
                nodes_to_exclude=float_nodes,
                reduce_range=reduced_range(),
                extra_options=extra,
                **({} if cache is None else {"calibration_cache_path": str(cache)}),
            )
        finally:
            root.removeFilter(_quiet_advice)
        step()  # quantized: the last step, before the file is written (not stopped then)
        partial = out_path.with_name(f".{out_path.name}.{os.getpid()}.part")
        shutil.copyfile(dst, partial)
        os.replace(partial, out_path)
    seconds = time.perf_counter() - start
    log.info("Quantized %s (%s) in %.1f s -> %s", fp32_path.name, recipe.name, seconds, out_path)
    return seconds


def _view_count(photos: int, recipe: Recipe) -> int:
    """How many calibration views a build over ``photos`` photos uses."""
    views = photos * VIEWS_PER_PHOTO
    return views if recipe.max_views is None else min(views, recipe.max_views)


def _analysed_graph(
    path: Path,
    recipe: Recipe,
    family: Family,
    batches: list[np.ndarray],
    tmp: Path,
    step: Callable[[], None],
) -> tuple[Any, list[str], dict[str, list[dict[str, Any]]]]:
    """The generic recipe's preparation: main output only, shapes folded, every activation
    measured. Returns the model, the nodes kept float, and the measured ranges."""
    import onnx
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from .graph_tools import analyse, nodes_touching, output_tail, prune_to_outputs

    model = onnx.load(str(path))
    # Side outputs cost time. Those before the mask stay so that it keeps its index (the
    # session reads output ``family.output``); for every family so far that is none.
    main = model.graph.output[family.output].name
    prune_to_outputs(model, [o.name for o in model.graph.output[: family.output + 1]])
    pruned, folded = tmp / "pruned.onnx", tmp / "folded.onnx"
    onnx.save(model, str(pruned))
    del model
    # Symbolic shapes and constant folding: shape arithmetic (Resize sizes) becomes constant.
    quant_pre_process(str(pruned), str(folded))
    step()  # the graph prepared
    found = analyse(folded, batches, step, recipe.mean_range)
    model = onnx.load(str(folded))
    weak = found.weakest(recipe.float_tensors, recipe.snr_floor_db)
    for t in weak:
        log.info("int8 analysis: %s stays float (SNR %.1f dB)", t, found.snr[t])
    float_nodes = list(dict.fromkeys([*nodes_touching(model, weak), *output_tail(model, main)]))
    overrides = {
        t: [{"rmin": np.float32(lo), "rmax": np.float32(hi)}]
        for t, (lo, hi) in found.ranges(recipe.mean_range).items()
    }
    return model, float_nodes, overrides


def _calibration_cache(
    overrides: dict[str, list[dict[str, Any]]], recipe: Recipe, tmp: Path
) -> Path | None:
    """The analysis' ranges as ORT's calibration cache (``calibration_cache_path``, in
    recent ORT), so that ``quantize_static`` skips its own calibration: one more fp32
    session with every tensor reduced, only for ranges the overrides replace anyway (4 s
    of IS-Net's; the int8 file is the same byte for byte). None where ORT has no cache."""
    import inspect

    from onnxruntime import quantization as q

    if "calibration_cache_path" not in inspect.signature(q.quantize_static).parameters:
        return None
    from onnxruntime.quantization.calibrate import TensorData, TensorsData, save_tensors_data

    ranges = {
        t: TensorData(lowest=np.float32(o[0]["rmin"]), highest=np.float32(o[0]["rmax"]))
        for t, o in overrides.items()
    }
    method = getattr(q.CalibrationMethod, recipe.calibrate_method)
    path = tmp / "calibration.json"
    save_tensors_data(TensorsData(method, ranges), path)
    return path


def _release_memory() -> None:
    """Hand freed heap back to the OS before ``quantize_static`` loads its own copies of
    the model (about 1.5 GB more on IS-Net): glibc keeps much of what the analysis' protobuf
    and numpy work freed (most of a GB), and that would add to the peak."""
    import ctypes
    import gc
    import sys

    gc.collect()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)


def _quiet_advice(record: logging.LogRecord) -> bool:
    """Drop ORT's generic "consider pre-processing" advice; recipes decide that themselves."""
    return not str(record.msg).startswith("Please consider")
