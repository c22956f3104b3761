"""fp32 -> int8: the quantization recipes, calibration, and the int8 cache.

Reached from ``models quantize`` and from the first use of ``precision="int8"``.
onnx and ONNX Runtime's quantization tools are imported lazily: they are build
tools, not part of the inference hot path.
"""

from __future__ import annotations

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

from .errors import ModelError
from .imaging import read_image
from .models import ModelSpec, ModelStore, file_sha256

log = logging.getLogger(__name__)

#: Called with (samples calibrated, total samples).
QuantizeProgress = Callable[[int, int], None]

#: The calibration photos shipped with the package (sources in SOURCES.md there).
CALIBRATION_DIR = Path(__file__).with_name("calibration")


@dataclass(frozen=True)
class Recipe:
    """How an fp32 U²-Net becomes int8 (static QDQ through ONNX Runtime)."""

    name: str
    description: str
    per_channel: bool = True
    activation_type: str = "QUInt8"
    weight_type: str = "QInt8"
    calibrate_method: str = "MinMax"
    #: Op types to quantize; None quantizes every op type ORT supports.
    op_types: tuple[str, ...] | None = None
    #: Keep only the main output (U²-Net's side outputs are unused by the product).
    main_output_only: bool = False
    #: Node names kept in fp32.
    nodes_to_exclude: tuple[str, ...] = ()
    extra_options: dict[str, Any] = field(default_factory=dict)


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            "naive",
            "Plain static QDQ: per-channel int8 weights, uint8 activations, MinMax "
            "calibration, every op ORT can quantize. Fast, but unfaithful on u2netp.",
        ),
    )
}
DEFAULT_RECIPE = "naive"


def get_recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise ModelError(f"Unknown int8 recipe {name!r}; choose one of: {', '.join(RECIPES)}.")
    return RECIPES[name]


def calibration_files(folder: Path | None = None) -> list[Path]:
    from .batch import walk_images

    files = walk_images(folder or CALIBRATION_DIR)
    if not files:
        raise ModelError(
            f"No calibration images found in {folder or CALIBRATION_DIR}; "
            "give a folder of photos with --calibration."
        )
    return files


def calibration_samples(files: list[Path]) -> Iterator[np.ndarray]:
    """Each photo, its mirror image and four 3/4-size corner crops.

    Six views per photo turn a few licence-clean photos into a few dozen
    calibration samples with varied framing and subject size.
    """
    for path in files:
        rgb = read_image(path).rgb
        h, w = rgb.shape[:2]
        ch, cw = max(1, h * 3 // 4), max(1, w * 3 // 4)
        yield rgb
        yield np.ascontiguousarray(rgb[:, ::-1])
        for y, x in ((0, 0), (0, w - cw), (h - ch, 0), (h - ch, w - cw)):
            yield np.ascontiguousarray(rgb[y : y + ch, x : x + cw])


def int8_path(
    store: ModelStore,
    spec: ModelSpec,
    fp32_path: Path,
    recipe: str,
    calibration: Path | None = None,
) -> Path:
    """Cache path of the int8 model: keyed by the fp32 hash, recipe, calibration and ORT version."""
    import onnxruntime as ort

    fp32_hash = spec.sha256 or file_sha256(fp32_path)
    calib = "default" if calibration is None else _folder_key(calibration)
    key = hashlib.sha256(f"{fp32_hash}|{recipe}|{calib}|{ort.__version__}".encode()).hexdigest()
    folder = store.models_dir if spec.local_path is None else store.models_dir / "local"
    return folder / f"{spec.name}.int8-{recipe}-{key[:12]}.onnx"


def _folder_key(folder: Path) -> str:
    digest = hashlib.sha256()
    for f in calibration_files(folder):
        digest.update(f"{f.name}:{f.stat().st_size}".encode())
    return digest.hexdigest()


def cached_int8(store: ModelStore, spec: ModelSpec) -> list[dict[str, Any]]:
    """Records of the int8 models of ``spec`` already in the cache."""
    records = []
    for path in sorted(store.models_dir.glob(f"{spec.name}.int8-*.onnx")):
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
) -> Path:
    """The int8 model for ``spec``: from the cache, or made now from the fp32 one."""
    get_recipe(recipe)
    fp32 = fp32_path or store.ensure(spec)
    target = int8_path(store, spec, fp32, recipe, calibration)
    if target.is_file():
        return target
    quantize_model(fp32, target, recipe, calibration_files(calibration), spec, progress)
    return target


def quantize_model(
    fp32_path: Path,
    out_path: Path,
    recipe_name: str,
    images: list[Path],
    spec: ModelSpec,
    progress: QuantizeProgress | None = None,
) -> float:
    """Quantize ``fp32_path`` into ``out_path`` (atomically); returns the seconds it took."""
    import onnx
    from onnx import version_converter
    from onnxruntime import quantization as q

    recipe = get_recipe(recipe_name)
    start = time.perf_counter()
    model = onnx.load(str(fp32_path))
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 13:  # per-channel QDQ needs opset 13
        model = version_converter.convert_version(model, 13)
    if recipe.main_output_only:
        del model.graph.output[1:]
    input_name = model.graph.input[0].name
    samples = list(calibration_samples(images))
    # The file's own input size when it declares a fixed one, as the session does.
    side = model.graph.input[0].type.tensor_type.shape.dim[-1].dim_value or spec.input_size

    class Reader(q.CalibrationDataReader):
        def __init__(self) -> None:
            self._index = 0

        def get_next(self) -> dict[str, np.ndarray] | None:
            from .pipeline import preprocess

            if self._index >= len(samples):
                return None
            batch = preprocess(samples[self._index], spec, side)
            self._index += 1
            if progress is not None:
                progress(self._index, len(samples))
            return {input_name: batch}

    out_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bgremover-quant-") as tmp:
        src = Path(tmp) / "fp32.onnx"
        onnx.save(model, str(src))
        dst = Path(tmp) / "int8.onnx"
        root = logging.getLogger()
        root.addFilter(_quiet_advice)
        try:
            _quantize_static(q, src, dst, Reader(), recipe)
        finally:
            root.removeFilter(_quiet_advice)
        partial = out_path.with_name(f".{out_path.name}.{os.getpid()}.part")
        shutil.copyfile(dst, partial)
        os.replace(partial, out_path)
    seconds = time.perf_counter() - start
    log.info(
        "Quantized %s with recipe %s in %.1f s -> %s",
        fp32_path.name,
        recipe.name,
        seconds,
        out_path,
    )
    return seconds


def _quiet_advice(record: logging.LogRecord) -> bool:
    """Drop ORT's generic "consider pre-processing" advice; recipes decide that themselves."""
    return not str(record.msg).startswith("Please consider")


def _quantize_static(q: Any, src: Path, dst: Path, reader: Any, recipe: Recipe) -> None:
    q.quantize_static(
        str(src),
        str(dst),
        reader,
        quant_format=q.QuantFormat.QDQ,
        per_channel=recipe.per_channel,
        activation_type=getattr(q.QuantType, recipe.activation_type),
        weight_type=getattr(q.QuantType, recipe.weight_type),
        calibrate_method=getattr(q.CalibrationMethod, recipe.calibrate_method),
        op_types_to_quantize=list(recipe.op_types) if recipe.op_types else None,
        nodes_to_exclude=list(recipe.nodes_to_exclude),
        extra_options=dict(recipe.extra_options),
    )
