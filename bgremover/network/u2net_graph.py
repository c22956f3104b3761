"""The U²-Net graph rewrite behind the "faithful" int8 recipe (see quantize.py).

Why: in u2netp two decoder convolutions (followed by ReLU) each produce one channel that is
a large near-constant (226-228 against 0-12 for its 15 siblings; 52 against 8). With one
activation scale per tensor that channel sets the step, the other channels keep 2-3 bits,
and the next conv multiplies the constant by weights of up to 5.6: the decoder's output
collapses (IoU 0.74 against fp32). The constant carries no information, so it is moved
out of the tensor: subtracted in the producing conv's bias, added back (times the summed
kernel weights) to the bias of each conv that reads it, through Resize / Concat / MaxPool,
which commute with a per-channel constant. On the zero-padded border of the reading conv
the folded bias is wrong by a fixed map, which a small constant-only branch (folded by
ORT when the session loads) adds back in float.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError
from . import graph_tools
from .graph_tools import prune_to_outputs

log = logging.getLogger(__name__)


def prepare_graph(
    model: Any, batches: list[np.ndarray], tmp: Path, step: Callable[[], None]
) -> tuple[Any, list[str]]:
    """Rewrite an opset-13 U²-Net for faithful int8; returns the model and nodes kept in fp32.

    ``step`` is called once the graph's shapes are folded, then once per batch measured.
    """
    import onnx
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prune_to_outputs(model, [model.graph.output[0].name])  # side outputs are unused
    pruned, folded = tmp / "pruned.onnx", tmp / "folded.onnx"
    onnx.save(model, str(pruned))
    # Symbolic shapes and constant folding: the Shape/Gather/Concat chains computing the
    # Resize sizes become constants, so only real tensors get quantized.
    quant_pre_process(str(pruned), str(folded))
    step()  # the graph prepared: a step of its own (it takes seconds), before the views'
    model = onnx.load(str(folded))
    producers = graph_tools.producers(model.graph)
    relus = [
        n.output[0]
        for n in model.graph.node
        if n.op_type == "Relu" and getattr(producers.get(n.input[0]), "op_type", "") == "Conv"
    ]
    ranges = _channel_ranges(folded, batches, model.graph.input[0].name, relus, step)
    border_nodes: list[str] = []
    shifted = shift_offset_channels(model, ranges, border_nodes)
    widened = widen_narrow_convs(model)
    log.info(
        "int8 rewrite: %d offset channel(s) shifted, %d narrow conv(s) widened",
        shifted,
        len(widened),
    )
    # The final Sigmoid stays in float: quantizing its output would leave the mask only
    # about 50 distinct levels, before min-max normalisation stretches them.
    final = producers.get(model.graph.output[0].name)
    keep_float = [final.name] if final is not None and final.op_type == "Sigmoid" else []
    return onnx.shape_inference.infer_shapes(model), border_nodes + keep_float


def _attr(node: Any, name: str, default: Any = None) -> Any:
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _channel_ranges(
    model_path: Path,
    batches: list[np.ndarray],
    input_name: str,
    tensors: list[str],
    step: Callable[[], None],
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per-channel min and max of ``tensors`` over the calibration batches (fp32)."""
    if not tensors:  # no Conv -> Relu to measure (ORT would answer an empty list with all outputs)
        for _ in batches:
            step()
        return {}
    import onnx
    import onnxruntime as ort
    from onnx import helper

    model = onnx.load(str(model_path))
    existing = {o.name for o in model.graph.output}
    model.graph.output.extend(
        helper.make_empty_tensor_value_info(t) for t in tensors if t not in existing
    )
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    lo: dict[str, np.ndarray] = {}
    hi: dict[str, np.ndarray] = {}
    for batch in batches:
        for name, value in zip(tensors, session.run(tensors, {input_name: batch}), strict=True):
            mn, mx = value.min(axis=(0, 2, 3)), value.max(axis=(0, 2, 3))
            lo[name] = np.minimum(lo[name], mn) if name in lo else mn
            hi[name] = np.maximum(hi[name], mx) if name in hi else mx
        step()
    return {t: (lo[t], hi[t]) for t in tensors}


def _channel_count(graph: Any, name: str) -> int | None:
    for v in (*graph.value_info, *graph.output, *graph.input):
        if v.name == name:
            dims = v.type.tensor_type.shape.dim
            return dims[1].dim_value if len(dims) > 1 and dims[1].HasField("dim_value") else None
    return None


def _set_weight(weights: dict[str, Any], name: str, change: Callable[[np.ndarray], np.ndarray]):
    from onnx import numpy_helper

    value = change(numpy_helper.to_array(weights[name]).copy()).astype(np.float32)
    weights[name].CopyFrom(numpy_helper.from_array(value, name))


def shift_offset_channels(
    model: Any,
    ranges: dict[str, tuple[np.ndarray, np.ndarray]],
    border_nodes: list[str],
    ratio: float = 2.0,
) -> int:
    """Move near-constant offsets out of Conv -> Relu outputs; returns how many channels moved.

    Channel k of a ReLU output is shifted when its calibrated minimum exceeds ``ratio`` times
    the median of the channels' maxima. The shift ``c = min - (max - min)`` keeps the ReLU
    inactive with a margin equal to the spread seen in calibration.
    """
    from onnx import numpy_helper

    g = model.graph
    producers, consumers = graph_tools.producers(g), graph_tools.consumers(g)
    weights = {t.name: t for t in g.initializer}
    outputs = {o.name for o in g.output}
    shifted = 0
    pending: dict[str, list[list[Any]]] = {}
    for tensor, (lo, hi) in ranges.items():
        relu = producers[tensor]
        conv = producers.get(relu.input[0])
        if (
            conv is None
            or conv.op_type != "Conv"
            or len(conv.input) < 3
            or len(consumers[conv.output[0]]) != 1
        ):
            continue
        typical = float(np.median(hi))
        for k in np.flatnonzero(lo > ratio * max(typical, 1e-6)):
            c = float(lo[k] - (hi[k] - lo[k]))
            if c <= 0:
                continue
            targets = _offset_readers(g, consumers, outputs, tensor, int(k))
            if not targets:
                continue
            _set_weight(weights, conv.input[2], functools.partial(_minus_at, k=int(k), c=c))
            for reader, channel in targets:
                w = numpy_helper.to_array(weights[reader.input[1]])
                added = c * w[:, channel].sum(axis=(1, 2))
                _set_weight(weights, reader.input[2], functools.partial(np.add, added))
                if any(p > 0 for p in _attr(reader, "pads", [0])):
                    chain = _border_correction(
                        g, reader, w[:, channel : channel + 1], c, f"{conv.name}_{k}"
                    )
                    pending.setdefault(reader.name, []).append(chain)
            shifted += 1
            log.debug("shifted %s channel %d by %.1f (typical max %.1f)", conv.name, k, c, typical)
    if pending:
        border_nodes.extend(_insert_after(g, pending))
    return shifted


def _minus_at(bias: np.ndarray, k: int, c: float) -> np.ndarray:
    bias[k] -= c
    return bias


def _offset_readers(
    g: Any, consumers: dict[str, list[Any]], outputs: set[str], tensor: str, channel: int
) -> list[tuple[Any, int]]:
    """The convs that read ``channel`` of ``tensor`` through Resize/MaxPool/Concat, or []
    when something else reads it (then the constant cannot be moved)."""
    targets, stack = [], [(tensor, channel)]
    while stack:
        name, ch = stack.pop()
        if name in outputs:
            return []
        for n in consumers[name]:
            if n.op_type in ("Resize", "MaxPool") and n.input[0] == name:
                stack.append((n.output[0], ch))
            elif n.op_type == "Concat" and _attr(n, "axis") in (1, -3):
                offset = 0
                for i in n.input:
                    if i == name:
                        break
                    count = _channel_count(g, i)
                    if count is None:
                        return []
                    offset += count
                stack.append((n.output[0], ch + offset))
            elif (
                n.op_type == "Conv"
                and n.input[0] == name
                and len(n.input) > 2
                and _attr(n, "group", 1) == 1
            ):
                targets.append((n, ch))
            else:
                return []
    return targets


def _border_correction(g: Any, conv: Any, w_k: np.ndarray, c: float, tag: str) -> list[Any]:
    """Nodes that add back, on ``conv``'s zero-padded border, what the moved constant gave.

    R = Conv(c * ones) - c * sum(w_k) is zero inside and non-zero on the border ring; it is
    built from constants only, so ORT folds it when the session loads.
    """
    import onnx
    from onnx import helper, numpy_helper

    shape = next(
        (
            [d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in g.value_info
            if v.name == conv.input[0]
        ),
        None,
    )
    if shape is None or len(shape) != 4 or not all(shape):
        raise ModelError(f"int8 rewrite: unknown input shape for {conv.name}")
    base = f"{conv.name}_ringfix_{tag}"
    g.initializer.extend(
        [
            numpy_helper.from_array(
                np.array([1, 1, shape[2], shape[3]], np.int64), base + "_shape"
            ),
            numpy_helper.from_array(w_k.astype(np.float32), base + "_w"),
            numpy_helper.from_array((-c * w_k.sum(axis=(1, 2, 3))).astype(np.float32), base + "_b"),
        ]
    )
    fill = helper.make_tensor(base + "_v", onnx.TensorProto.FLOAT, [1], [c])
    attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    return [
        helper.make_node(
            "ConstantOfShape", [base + "_shape"], [base + "_c"], name=base + "_fill", value=fill
        ),
        helper.make_node(
            "Conv",
            [base + "_c", base + "_w", base + "_b"],
            [base + "_r"],
            name=base + "_conv",
            **attrs,
        ),
        helper.make_node("Add", ["", base + "_r"], [""], name=base + "_add"),
    ]


def _insert_after(g: Any, pending: dict[str, list[list[Any]]]) -> list[str]:
    """Insert each border-correction chain right after its conv; returns the new node names."""
    order: list[Any] = []
    names: list[str] = []
    for node in g.node:
        order.append(node)
        for chain in pending.get(node.name, []):
            out = node.output[0]
            node.output[0] = out + "_inner"
            add = chain[-1]
            add.input[0] = node.output[0]
            add.output[0] = out
            order.extend(chain)
            names.extend(n.name for n in chain)
    del g.node[:]
    g.node.extend(order)
    return names


def widen_narrow_convs(model: Any, min_out: int = 16) -> list[str]:
    """Zero-pad convs with fewer than ``min_out`` outputs, then Slice the real channels.

    ORT's int8 conv is about 3x slower for u2netp's 1-channel side convs than for 16
    channels, padding included. The output is identical.
    """
    from onnx import helper, numpy_helper

    g = model.graph
    weights = {t.name: t for t in g.initializer}
    nodes, widened = [], []
    for n in g.node:
        nodes.append(n)
        if n.op_type != "Conv" or n.input[1] not in weights or _attr(n, "group", 1) != 1:
            continue
        w = numpy_helper.to_array(weights[n.input[1]])
        cout = w.shape[0]
        if cout >= min_out:
            continue
        wide_w = np.zeros((min_out, *w.shape[1:]), w.dtype)
        wide_w[:cout] = w
        weights[n.input[1]].CopyFrom(numpy_helper.from_array(wide_w, n.input[1]))
        if len(n.input) > 2:
            b = numpy_helper.to_array(weights[n.input[2]])
            wide_b = np.zeros(min_out, b.dtype)
            wide_b[:cout] = b
            weights[n.input[2]].CopyFrom(numpy_helper.from_array(wide_b, n.input[2]))
        out = n.output[0]
        wide = out + "_wide"
        n.output[0] = wide
        for suffix, val in (("starts", 0), ("ends", cout), ("axes", 1)):
            g.initializer.append(
                numpy_helper.from_array(np.array([val], np.int64), f"{wide}_{suffix}")
            )
        nodes.append(
            helper.make_node(
                "Slice",
                [wide, f"{wide}_starts", f"{wide}_ends", f"{wide}_axes"],
                [out],
                name=n.name + "_narrow",
            )
        )
        widened.append(n.name)
    del g.node[:]
    g.node.extend(nodes)
    return widened
