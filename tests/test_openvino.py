"""OpenVINO as a provider, where ``onnxruntime-openvino`` is installed in place of
``onnxruntime`` (CI does so in an environment of its own, see .ci/run); skipped elsewhere.

The real u2netp on the OpenVINO provider: ``--providers openvino`` runs on it and cuts out
what the CPU provider cuts out in fp32; ``bench --save`` measures both providers with their
parity, and ``auto`` then runs the fastest one whose masks agree, never one that moves them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bgremover import Remover
from bgremover.mask.metrics import iou
from bgremover.network import measured
from bgremover.network.session import (
    CPU,
    available_providers,
    openvino_devices,
    provider_choices,
)
from bgremover.network.store import ModelStore

from conftest import SAMPLE, cli

OPENVINO = "OpenVINOExecutionProvider"

pytestmark = pytest.mark.skipif(
    OPENVINO not in available_providers(),
    reason="onnxruntime-openvino is not installed (it replaces onnxruntime)",
)


def test_providers_openvino_runs_on_openvino_and_cuts_out_what_the_cpu_does(u2netp_path: Path):
    ours = Remover("u2netp", providers="openvino", refine=False)
    assert ours.providers == (OPENVINO, CPU)
    assert ours.load().active[0] == OPENVINO, ours.load().fallbacks
    cpu = Remover("u2netp", providers="cpu", refine=False)
    assert iou(ours.remove(SAMPLE).mask, cpu.remove(SAMPLE).mask) >= measured.MIN_IOU


def test_openvino_runs_on_the_device_and_precision_asked_and_says_a_device_it_lacks(
    u2netp_path: Path, tmp_path: Path
) -> None:
    devices = openvino_devices()
    assert "CPU" in devices
    assert OPENVINO in provider_choices()
    cpu = Remover("u2netp", providers="cpu", refine=False).remove(SAMPLE).mask
    asked = Remover("u2netp", providers="openvino:cpu:accuracy", refine=False)
    assert asked.providers == (f"{OPENVINO}:CPU:ACCURACY", CPU)
    info = asked.load()
    assert info.active[0] == f"{OPENVINO}:CPU:ACCURACY", info.fallbacks
    assert iou(asked.remove(SAMPLE).mask, cpu) >= measured.MIN_IOU
    lacking = next(d for d in ("NPU", "GPU") if d not in devices)
    info = Remover("u2netp", providers=f"openvino:{lacking}", refine=False).load()
    assert info.active == (CPU,)
    assert info.fallbacks == (
        f"{OPENVINO}:{lacking}: OpenVINO offers no {lacking} device here (it offers "
        f"{', '.join(devices)}); a GPU or NPU needs Intel's driver for it",
    )
    proc = cli("remove", str(SAMPLE), "-o", str(tmp_path), "--providers", "openvino:CPU", "-v")
    assert proc.returncode == 0, proc.stderr
    assert f"on {OPENVINO}:CPU, {CPU}" in proc.stderr


def test_bench_measures_openvino_and_auto_picks_only_what_agrees(u2netp_path: Path) -> None:
    proc = cli("bench", "-m", "u2netp", "--runs", "5", "--save", "--json", "-q", check=True)
    report = json.loads(proc.stdout)
    table = {(r["provider"], r["precision"]): r for r in report["inference"]}
    for precision in ("fp32", "int8"):
        assert (OPENVINO, precision) in table and (CPU, precision) in table
    # fp32 on OpenVINO makes the CPU's masks (measured: max |Δ| 1e-4, IoU 1.000).
    assert table[(OPENVINO, "fp32")]["min_iou_vs_cpu"] >= measured.MIN_IOU
    home = ModelStore().home
    rows = measured.load(home, "u2netp", 0)
    assert rows is not None
    for precision in ("fp32", "int8"):
        chosen = Remover("u2netp", precision=precision).providers[0]
        assert chosen == report["auto"][precision]
        row = next(r for r in rows if (r.provider, r.precision) == (chosen, precision))
        assert row.agrees
        faster_disagreeing = [
            r for r in rows
            if r.precision == precision and r.median_ms < row.median_ms and not r.agrees
        ]  # fmt: skip
        # Whatever was faster and not chosen moves the masks.
        assert all(r.min_iou < measured.MIN_IOU for r in faster_disagreeing)
    measured.path_for(home, "u2netp").unlink()  # the session's cache: other tests get auto's order
