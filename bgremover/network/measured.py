"""Providers as measured on this machine: what ``bgremover bench --save`` keeps, and the
choice ``--providers auto`` makes from it.

A saved measurement holds, per model, each provider and precision the bench ran: its median
inference time, and its parity with the CPU provider at the same precision on the bench's
photos (the largest difference of the raw output, and the IoU of the masks). It applies to
the machine and ONNX Runtime build it was made with (processor, architecture, ORT version
and the providers it offered); after an upgrade or on another machine it is ignored, and
``auto`` takes the fixed order of :data:`~bgremover.network.session.AUTO_ORDER` as before.

``auto`` then runs the fastest provider measured at the asked precision whose masks agree
with the CPU provider's (:data:`MIN_IOU` on every photo), and which this build still
offers; the CPU provider is always behind it. What the CPU provider itself makes is the
reference, so it always qualifies.
"""

from __future__ import annotations

import functools
import json
import platform
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..files.atomic import write_atomically
from .session import CPU, available_providers, load_runtime, provider_choices, resolve_providers

#: The mask IoU against the CPU provider's, on each bench photo, that a provider must keep
#: to be chosen by ``auto``: a faster provider that moves the cutout is not a free choice.
MIN_IOU = 0.995
#: The file's layout; another one is ignored (measured again by the next ``bench --save``).
FORMAT = 1


@dataclass(frozen=True)
class Measurement:
    """One provider at one precision, on this machine."""

    provider: str
    precision: str
    median_ms: float
    #: Parity with the CPU provider at the same precision: the largest |Δ| of the raw
    #: output and the lowest mask IoU over the bench's photos (the CPU's own row: 0 and 1).
    max_abs: float
    min_iou: float
    #: The lowest mask IoU against the CPU provider's fp32 masks (int8's own change included).
    fp32_iou: float
    #: What its session added to the process's resident memory, loaded and run once (MB);
    #: None in a measurement saved before it was kept.
    memory_mb: float | None = None

    @property
    def agrees(self) -> bool:
        return self.provider == CPU or self.min_iou >= MIN_IOU


@functools.cache
def machine() -> dict[str, Any]:
    """What a measurement is valid for: this processor and this ONNX Runtime build (read once
    per process)."""
    info = cpu_info()
    name = info.get("model name") or info.get("Hardware") or info.get("Processor")
    return {
        "processor": name or platform.processor() or platform.machine(),
        "architecture": platform.machine(),
        "onnxruntime": load_runtime().__version__,
        "providers": available_providers(),
    }


@functools.cache
def cpu_info() -> dict[str, str]:
    """Each field of Linux's /proc/cpuinfo, as its first processor gives it; {} elsewhere."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, sep, value = line.partition(":")
                if sep:
                    fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def path_for(home: Path, model: str) -> Path:
    """Where the measurement of ``model`` is kept (in the cache folder, beside the models)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in model)
    return home / "bench" / f"{safe}.json"


def save(home: Path, model: str, threads: int, rows: Sequence[Measurement]) -> Path:
    """Keep ``rows`` as this machine's measurement of ``model`` (written atomically)."""
    path = path_for(home, model)
    record = {
        "format": FORMAT,
        "model": model,
        "threads": threads,
        "machine": machine(),
        "rows": [asdict(row) for row in rows],
    }
    data = json.dumps(record, indent=2).encode()
    write_atomically(path, lambda fh: fh.write(data))
    return path


def load(home: Path, model: str, threads: int) -> list[Measurement] | None:
    """This machine's saved measurement of ``model`` at ``threads``, or None when there is
    none, it cannot be read, or it was made elsewhere, with another ONNX Runtime build or
    another thread count."""
    try:
        record = json.loads(path_for(home, model).read_text(encoding="utf-8"))
        if (
            record.get("format") != FORMAT
            or record.get("model") != model
            or record.get("threads") != threads
            or record.get("machine") != machine()
        ):
            return None
        return [Measurement(**row) for row in record["rows"]]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def measured_rows(home: Path, model: str, threads: int) -> list[Measurement]:
    """:func:`load` for a model as the settings name it (a registry name or a file's
    path): [] when nothing applies."""
    name = Path(model).stem if model.endswith(".onnx") else model
    return load(home, name, threads) or []


def fastest(rows: Sequence[Measurement], precision: str) -> Measurement | None:
    """The fastest row at ``precision`` that agrees with the CPU provider and that this
    ONNX Runtime still offers; None when none does."""
    offered = set(provider_choices())
    usable = [r for r in rows if r.precision == precision and r.agrees and r.provider in offered]
    return min(usable, key=lambda r: r.median_ms, default=None)


def providers_for(
    asked: str | Sequence[str], home: Path, model: str, precision: str, threads: int
) -> tuple[str, ...]:
    """The providers to run ``model`` on, in order: as ``asked``, or for ``auto``, the
    fastest one measured here at ``precision`` among those whose masks agree with the CPU
    provider's (then CPU), else ``auto``'s fixed order when nothing was measured."""
    if not isinstance(asked, str) or asked.strip() not in ("", "auto"):
        return resolve_providers(asked)
    rows = load(home, model, threads)
    best = fastest(rows, precision) if rows else None
    return resolve_providers(best.provider if best is not None else "auto")
