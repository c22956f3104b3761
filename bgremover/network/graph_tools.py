"""Graph tools for int8 on any family: fp16 -> fp32, pruning, and the sensitivity analysis.

The analysis behind the "generic" recipe (quantize.py) generalises what the U²-Net
rewrite (u2net_graph.py) found by hand: an activation tensor is hurt by int8 when its
one uint8 scale (set by the widest channel, or by a large near-constant one) leaves
its other channels only a few quantization steps of real variation. An fp32 pass over
the calibration views (in groups of tensors under a memory budget) gathers, for every
float activation tensor, each channel's min, max, mean and variance; from them follows
each channel's signal-to-noise ratio under uniform quantization noise (step²/12), and
the tensor's score is the median over its channels. The weakest tensors are kept in
float (their producer and readers), and the ranges also serve as the MinMax calibration.
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: Elementwise or layout ops that carry a tensor's values (and its quantization trouble)
#: through unchanged enough that the tail of a network behind them stays float with it.
_PASS_THROUGH = ("Resize", "Sigmoid", "Relu", "Clip", "Identity", "Upsample")


def is_fp16(model: Any) -> bool:
    """Whether the graph holds fp16 weights or casts to fp16 (e.g. IMG.LY's IS-Net)."""
    from onnx import TensorProto, helper

    if any(t.data_type == TensorProto.FLOAT16 for t in model.graph.initializer):
        return True
    return any(
        n.op_type == "Cast" and helper.get_attribute_value(n.attribute[0]) == TensorProto.FLOAT16
        for n in model.graph.node
        if n.attribute
    )


def _upcast_tensor(t: Any) -> None:
    from onnx import TensorProto, numpy_helper

    if t.data_type == TensorProto.FLOAT16:
        value = numpy_helper.to_array(t).astype(np.float32)  # exact: fp16 ⊂ fp32
        t.CopyFrom(numpy_helper.from_array(value, t.name))


def upcast_fp16(model: Any) -> int:
    """Turn a graph of fp16 weights and fp16 compute (behind Cast nodes) into a true fp32
    graph, in place: weights and constants upcast exactly, the casts between fp16 and
    fp32 removed, every declared fp16 type made fp32. Returns the casts removed."""
    import onnx
    from onnx import TensorProto, helper

    g = model.graph
    # The element type of every tensor before the change, to tell float casts from others.
    typed = onnx.shape_inference.infer_shapes(model)
    types: dict[str, int] = {}
    for v in (*typed.graph.input, *typed.graph.value_info, *typed.graph.output):
        types[v.name] = v.type.tensor_type.elem_type
    for t in g.initializer:
        types[t.name] = t.data_type
    floats = (TensorProto.FLOAT, TensorProto.FLOAT16)

    for t in g.initializer:
        _upcast_tensor(t)
    for v in (*g.input, *g.value_info, *g.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT16:
            v.type.tensor_type.elem_type = TensorProto.FLOAT
    alias: dict[str, str] = {}
    kept = []
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                _upcast_tensor(a.t)
            elif a.type == onnx.AttributeProto.TENSORS:
                for t in a.tensors:
                    _upcast_tensor(t)
        if n.op_type == "Cast":
            to = helper.get_attribute_value(n.attribute[0])
            if to in floats and types.get(n.input[0]) in floats:
                alias[n.output[0]] = alias.get(n.input[0], n.input[0])
                continue
            if to == TensorProto.FLOAT16:  # from an integer: straight to fp32
                n.attribute[0].CopyFrom(helper.make_attribute("to", TensorProto.FLOAT))
        kept.append(n)
    for n in kept:
        for i, name in enumerate(n.input):
            if name in alias:
                n.input[i] = alias[name]
    # A graph output that was a cast's result: its source takes the output's name
    # (or an Identity carries it, where the source is an input, a weight or an output).
    outputs = {o.name for o in g.output}
    produced = {o: n for n in kept for o in n.output}
    for out in [o.name for o in g.output if o.name in alias]:
        src = alias[out]
        if src in produced and src not in outputs:
            node = produced.pop(src)
            node.output[list(node.output).index(src)] = out
            for n in kept:
                for i, name in enumerate(n.input):
                    if name == src:
                        n.input[i] = out
            produced[out] = node
        else:
            kept.append(helper.make_node("Identity", [src], [out], name=f"{out}_upcast_identity"))
    del g.node[:]
    g.node.extend(kept)
    removed = set(alias)
    infos = [v for v in g.value_info if v.name not in removed]
    del g.value_info[:]
    g.value_info.extend(infos)
    return len(alias)


def prune_to_outputs(model: Any, keep: list[str]) -> None:
    """Keep only the graph outputs in ``keep`` and the nodes and weights that feed them."""
    g = model.graph
    outputs = [o for o in g.output if o.name in keep]
    del g.output[:]
    g.output.extend(outputs)
    needed = {o.name for o in outputs}
    live = []
    for node in reversed(g.node):
        if any(o in needed for o in node.output):
            live.append(node)
            needed.update(i for i in node.input if i)
    del g.node[:]
    g.node.extend(reversed(live))
    weights = [t for t in g.initializer if t.name in needed]
    del g.initializer[:]
    g.initializer.extend(weights)
    infos = [v for v in g.value_info if v.name in needed]
    del g.value_info[:]
    g.value_info.extend(infos)


@dataclass
class TensorStats:
    """Per-channel statistics of one activation tensor over the calibration views."""

    lo: np.ndarray
    hi: np.ndarray
    total: np.ndarray
    squares: np.ndarray
    count: int = 0
    #: The whole tensor's min and max in each view.
    view_lo: list[float] = field(default_factory=list)
    view_hi: list[float] = field(default_factory=list)

    def add(self, value: np.ndarray) -> None:
        x = value.reshape(value.shape[0], value.shape[1], -1) if value.ndim >= 3 else value
        axes = (0, 2) if x.ndim == 3 else tuple(range(x.ndim))
        lo, hi = x.min(axis=axes), x.max(axis=axes)
        self.lo, self.hi = np.minimum(self.lo, lo), np.maximum(self.hi, hi)
        self.view_lo.append(float(lo.min()))
        self.view_hi.append(float(hi.max()))
        x64 = x.astype(np.float64)
        self.total = self.total + x64.sum(axis=axes)
        self.squares = self.squares + np.square(x64).sum(axis=axes)
        self.count += x.size // max(self.lo.size, 1)

    @property
    def range(self) -> tuple[float, float]:
        """The extremes over all views (MinMax calibration)."""
        return float(self.lo.min()), float(self.hi.max())

    @property
    def mean_range(self) -> tuple[float, float]:
        """The views' own extremes averaged: a rare outlier view no longer sets the step
        for all (ORT's moving-average MinMax, with every view weighted alike)."""
        return float(np.mean(self.view_lo)), float(np.mean(self.view_hi))

    def snr_db(self, mean_range: bool = False) -> float:
        """Median over channels of variance / uint8 quantization noise, in dB; the scale
        is the whole tensor's (zero included, as ORT's activation ranges)."""
        lo, hi = self.mean_range if mean_range else self.range
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        step = (hi - lo) / 255.0
        if step <= 0:
            return float("inf")
        mean = self.total / max(self.count, 1)
        var = np.maximum(self.squares / max(self.count, 1) - mean**2, 0.0)
        noise = step**2 / 12.0
        live = var[self.hi > self.lo]  # dead channels (one value) lose nothing to int8
        if live.size == 0:
            return float("inf")
        return float(np.median(10 * np.log10(np.maximum(live, 1e-30) / noise)))


@dataclass
class Analysis:
    """What :func:`analyse` found: each activation tensor's stats and SNR (dB)."""

    stats: dict[str, TensorStats] = field(default_factory=dict)
    snr: dict[str, float] = field(default_factory=dict)

    def weakest(self, count: int, below_db: float) -> list[str]:
        """Up to ``count`` tensors with the lowest SNR under ``below_db``, lowest first."""
        ranked = sorted((s, t) for t, s in self.snr.items() if s < below_db)
        return [t for _, t in ranked[:count]]

    def ranges(self, mean_range: bool = False) -> dict[str, tuple[float, float]]:
        return {t: s.mean_range if mean_range else s.range for t, s in self.stats.items()}


def activation_tensors(model: Any) -> list[str]:
    """The float outputs of every node (and the graph input): what QDQ may quantize."""
    from onnx import TensorProto

    g = model.graph
    types = {v.name: v.type.tensor_type.elem_type for v in (*g.value_info, *g.output, *g.input)}
    names = [i.name for i in g.input]
    for n in g.node:
        if n.op_type in ("Constant", "Shape", "ConstantOfShape"):
            continue
        names.extend(o for o in n.output if o and types.get(o, 0) == TensorProto.FLOAT)
    return list(dict.fromkeys(names))


#: Activation bytes (per view) one analysis run may hold as graph outputs. Every tensor
#: of IS-Net at 1024² is 2.1 GiB, which ORT holds and the binding copies at once (a 9 GB
#: peak); the tensors are measured in groups under this budget instead, each group its
#: own session over all views.
ANALYSIS_BUDGET = 512 * 2**20


def activation_bytes(model: Any, tensors: list[str], input_shape: tuple[int, ...]) -> list[int]:
    """Each tensor's float32 bytes for one input of ``input_shape``: from the model's
    shapes, else from shape inference on a copy with that input shape fixed; a tensor of
    still unknown shape counts as the largest known one (or the input, where none is)."""
    import onnx

    def known(m: Any) -> list[int | None]:
        g = m.graph
        types = {v.name: v.type.tensor_type for v in (*g.input, *g.value_info, *g.output)}
        sizes: list[int | None] = []
        for t in tensors:
            typed = types.get(t)
            if typed is None or not typed.HasField("shape"):
                sizes.append(None)
                continue
            dims = [d.dim_value if d.HasField("dim_value") else 0 for d in typed.shape.dim]
            sizes.append(4 * int(np.prod(dims)) if all(dims) else None)
        return sizes

    found = known(model)
    if None in found:
        fixed = onnx.ModelProto()
        fixed.CopyFrom(model)
        del fixed.graph.value_info[:]
        dims = fixed.graph.input[0].type.tensor_type.shape.dim
        for d, size in zip(dims, input_shape, strict=False):
            d.Clear()
            d.dim_value = size
        with contextlib.suppress(Exception):  # the sizes are only an estimate
            found = known(onnx.shape_inference.infer_shapes(fixed))
        del fixed
    default = max((b for b in found if b is not None), default=4 * int(np.prod(input_shape)))
    return [default if b is None else b for b in found]


def tensor_groups(tensors: list[str], sizes: list[int], budget: int) -> list[list[str]]:
    """``tensors`` (in graph order) cut into consecutive groups of at most ``budget`` bytes
    (a tensor larger than the budget alone)."""
    groups: list[list[str]] = []
    total = budget + 1
    for t, size in zip(tensors, sizes, strict=True):
        if total + size > budget:
            groups.append([])
            total = 0
        groups[-1].append(t)
        total += size
    return groups


def _add_stats(found: Analysis, name: str, value: np.ndarray) -> None:
    if value.dtype != np.float32 or value.size == 0:
        return
    if name not in found.stats:
        channels = value.shape[1] if value.ndim >= 3 else 1
        found.stats[name] = TensorStats(
            np.full(channels, np.inf, np.float32),
            np.full(channels, -np.inf, np.float32),
            np.zeros(channels),
            np.zeros(channels),
        )
    if value.ndim < 3:
        value = value.reshape(1, 1, -1)
    found.stats[name].add(value)


def analyse(
    model_path: Path,
    batches: list[np.ndarray],
    step: Callable[[], None] = lambda: None,
    mean_range: bool = False,
    budget: int = ANALYSIS_BUDGET,
) -> Analysis:
    """Every activation tensor's statistics over ``batches`` (fp32). The model must carry
    shapes (value_info), as after ``quant_pre_process``. The tensors are measured in
    groups of at most ``budget`` bytes per view (see :data:`ANALYSIS_BUDGET`), each group
    a session of the graph pruned to it, statistics accumulated view by view; each tensor
    sees the same views in the same order, so the statistics are those of one pass with
    every tensor an output. ``step`` is called ``len(batches)`` times, spread evenly."""
    import tempfile

    import onnx
    import onnxruntime as ort
    from onnx import helper

    model = onnx.load(str(model_path), load_external_data=False)
    tensors = activation_tensors(model)
    inputs = {i.name for i in model.graph.input}
    measured = [t for t in tensors if t not in inputs]
    groups = tensor_groups(measured, activation_bytes(model, measured, batches[0].shape), budget)
    del model
    input_names = [i for i in tensors if i in inputs]
    order = {t: i for i, t in enumerate(tensors)}
    found = Analysis()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    # Without the arena, ORT hands each group's buffers back when its run ends.
    options.enable_cpu_mem_arena = False
    units, done, stepped = max(len(groups), 1) * len(batches), 0, 0

    def advance() -> None:
        nonlocal done, stepped
        done += 1
        while stepped < done * len(batches) // units:
            stepped += 1
            step()

    for name in input_names:  # the graph's input is the batch itself
        for batch in batches:
            _add_stats(found, name, np.asarray(batch))
    with tempfile.TemporaryDirectory(prefix="bgremover-analyse-") as tmp:
        for index, group in enumerate(groups):
            part = onnx.load(str(model_path))
            existing = {o.name for o in part.graph.output}
            part.graph.output.extend(
                helper.make_empty_tensor_value_info(t) for t in group if t not in existing
            )
            prune_to_outputs(part, group)
            path = Path(tmp) / f"group{index}.onnx"
            onnx.save(part, str(path))
            del part
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            input_name = session.get_inputs()[0].name
            for batch in batches:
                values = session.run(group, {input_name: batch})
                for name, value in zip(group, values, strict=True):
                    _add_stats(found, name, np.asarray(value))
                del values
                advance()
            del session
            path.unlink()
    if not groups:
        for _ in batches:
            step()
    # The graph's order, as one pass over all tensors found them.
    found.stats = dict(sorted(found.stats.items(), key=lambda item: order[item[0]]))
    found.snr = {t: s.snr_db(mean_range) for t, s in found.stats.items()}
    return found


def consumers(graph: Any) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = collections.defaultdict(list)
    for node in graph.node:
        for name in node.input:
            found[name].append(node)
    return found


def producers(graph: Any) -> dict[str, Any]:
    return {out: node for node in graph.node for out in node.output}


def nodes_touching(model: Any, tensors: list[str]) -> list[str]:
    """The nodes to keep in float so that ``tensors`` stay float: each one's producer and
    readers (an excluded node alone would still see its input quantized by a neighbour)."""
    g = model.graph
    made, read = producers(g), consumers(g)
    names: list[str] = []
    for t in tensors:
        if t in made:
            names.append(made[t].name)
        names.extend(n.name for n in read.get(t, []))
    return list(dict.fromkeys(n for n in names if n))


def output_tail(model: Any, output: str | None = None) -> list[str]:
    """The nodes from the last Conv (or MatMul) to ``output`` (default: the graph's first),
    kept float: quantizing the final logits or probabilities leaves the mask a few dozen
    levels."""
    g = model.graph
    made = producers(g)
    tail: list[str] = []
    node = made.get(output or g.output[0].name)
    while node is not None:
        tail.append(node.name)
        if node.op_type not in _PASS_THROUGH:
            break
        node = made.get(node.input[0])
    return [n for n in tail if n]
