"""``bgremover compare`` and ``bgremover bench``: what int8 changes, and what it costs."""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .batch import plan_batch
from .compose import cutout
from .errors import BgRemoverError
from .imaging import read_image, write_image
from .metrics import fidelity
from .pipeline import Remover, postprocess, preprocess
from .report import comparison_sheet
from .session import CPU, available_providers


def _err(message: str) -> None:
    if sys.stderr is not None:
        print(message, file=sys.stderr)


def cmd_compare(args: argparse.Namespace, progress: Any) -> int:
    """For each image: a side-by-side PNG and a JSON file of metrics; a summary at the end."""
    report = progress.task(args.model)
    common = {"providers": args.providers, "threads": args.threads, "progress": report}
    fp32 = Remover(args.model, precision="fp32", **common)
    int8 = Remover(args.model, precision="int8", recipe=args.recipe, **common)
    fp32.load()
    int8.load()
    progress.clear()
    plan = plan_batch(args.images, args.output, "png")
    for path, reason in plan.problems:
        _err(f"bgremover: skipping {path}: {reason}")
    rows = []
    failed = len(plan.problems)
    for job in plan.jobs:
        try:
            a = fp32.remove(job.source)
            b = int8.remove(a.image)
            m = fidelity(a.mask, b.mask, a.raw, b.raw)
            m.update(
                image=str(job.source),
                model=fp32.spec.name,
                recipe=int8.recipe or "default",
                infer_fp32_s=a.timings["infer"],
                infer_int8_s=b.timings["infer"],
                providers_fp32=list(a.providers),
                providers_int8=list(b.providers),
            )
            caption = (
                f"{job.source.name}   mean |d alpha| {m['mean_abs']:.4f}   "
                f"edge band {m['band_abs']:.4f}   "
                f"IoU {m['iou']:.4f}   inference fp32 {1000 * a.timings['infer']:.0f} ms, "
                f"int8 {1000 * b.timings['infer']:.0f} ms"
            )
            sheet = comparison_sheet(a.image.rgb, a.mask, b.mask, caption)
            write_image(sheet, job.output, "png")
            json_path = job.output.with_suffix(".json")
            json_path.write_text(json.dumps(m, indent=2) + "\n", encoding="utf-8")
        except BgRemoverError as exc:
            failed += 1
            _err(f"bgremover: failed: {exc}")
            continue
        rows.append(m)
        print(f"{job.source.name}: IoU {m['iou']:.4f}, mean |Δα| {m['mean_abs']:.4f}, "
              f"edge band |Δα| {m['band_abs']:.4f} -> {job.output}")  # fmt: skip
    if rows:
        speed = statistics.median(r["infer_fp32_s"] / r["infer_int8_s"] for r in rows)
        print(
            f"{len(rows)} compared: mean IoU {np.mean([r['iou'] for r in rows]):.4f} "
            f"(min {min(r['iou'] for r in rows):.4f}), mean |Δα| "
            f"{np.mean([r['mean_abs'] for r in rows]):.4f}, edge band |Δα| "
            f"{np.mean([r['band_abs'] for r in rows]):.4f}, int8 {speed:.2f}× the speed of fp32"
        )
    return 1 if failed else 0


def _spread(times: list[float]) -> dict[str, float]:
    q = np.percentile(times, [25, 50, 75])
    return {"median_ms": 1000 * q[1], "iqr_ms": 1000 * (q[2] - q[0]),
            "min_ms": 1000 * min(times), "runs": len(times)}  # fmt: skip


def cmd_bench(args: argparse.Namespace, progress: Any) -> int:
    """Inference time per precision and provider, and a stage breakdown for one photo."""
    from .quantize import CALIBRATION_DIR

    image_path = args.image or CALIBRATION_DIR / "matplotlib_grace_hopper.jpg"
    report = progress.task(args.model)
    providers = [p for p in available_providers() if p != CPU] + [CPU]
    results: dict[str, Any] = {"model": args.model, "image": str(image_path), "inference": []}
    removers = {}
    for provider in providers:
        for precision in ("fp32", "int8"):
            r = Remover(args.model, precision=precision, providers=(provider,),
                        threads=args.threads, progress=report)  # fmt: skip
            info = r.load()
            progress.clear()
            if provider != CPU and provider not in info.active:
                results["inference"].append({"provider": provider, "precision": precision,
                                             "skipped": "; ".join(info.fallbacks)})  # fmt: skip
                continue
            removers[(provider, precision)] = r
    rgb = read_image(image_path).rgb
    batches = {key: preprocess(rgb, r.spec, r.input_size) for key, r in removers.items()}
    for key, r in removers.items():
        for _ in range(3):
            r.infer(batches[key])  # warm-up: first runs allocate and tune
    times: dict[tuple[str, str], list[float]] = {key: [] for key in removers}
    for _ in range(args.runs):  # interleaved, so load changes hit every variant alike
        for key, r in removers.items():
            t = time.perf_counter()
            r.infer(batches[key])
            times[key].append(time.perf_counter() - t)
    for (provider, precision), t in times.items():
        results["inference"].append({"provider": provider, "precision": precision, **_spread(t)})
    results["stages"] = _stage_breakdown(image_path, removers)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"model {args.model}, {args.runs} runs after warm-up, threads {args.threads or 'auto'}")
    print(f"{'provider':<28}{'precision':<10}{'median ms':>10}{'IQR ms':>8}{'min ms':>8}")
    for row in results["inference"]:
        if "skipped" in row:
            print(f"{row['provider']:<28}{row['precision']:<10}  skipped: {row['skipped']}")
            continue
        print(f"{row['provider']:<28}{row['precision']:<10}{row['median_ms']:>10.1f}"
              f"{row['iqr_ms']:>8.1f}{row['min_ms']:>8.1f}")  # fmt: skip
    fp32 = next((r for r in results["inference"] if r.get("precision") == "fp32"
                 and r["provider"] == CPU), None)  # fmt: skip
    int8 = next((r for r in results["inference"] if r.get("precision") == "int8"
                 and r["provider"] == CPU), None)  # fmt: skip
    if fp32 and int8:
        print(f"int8 / fp32 speed on CPU: {fp32['median_ms'] / int8['median_ms']:.2f}×")
    print(f"\nstages for {image_path.name} ({results['stages'].pop('size')}), median ms:")
    for precision, stages in results["stages"].items():
        line = "  ".join(f"{k} {v:.1f}" for k, v in stages.items())
        print(f"  {precision}: {line}")
    return 0


def _stage_breakdown(image_path: Path, removers: dict) -> dict[str, Any]:
    """decode, preprocess, inference, postprocess, encode (PNG) on the CPU sessions."""
    out: dict[str, Any] = {}
    for (provider, precision), r in removers.items():
        if provider != CPU:
            continue
        samples: dict[str, list[float]] = {k: [] for k in
                                           ("decode", "preprocess", "inference", "postprocess",
                                            "encode")}  # fmt: skip
        for _ in range(5):
            t0 = time.perf_counter()
            loaded = read_image(image_path)
            t1 = time.perf_counter()
            batch = preprocess(loaded.rgb, r.spec, r.input_size)
            t2 = time.perf_counter()
            raw = r.infer(batch)
            t3 = time.perf_counter()
            h, w = loaded.rgb.shape[:2]
            mask = postprocess(raw, w, h)
            t4 = time.perf_counter()
            Image.fromarray(cutout(loaded.rgb, mask)).save(io.BytesIO(), "PNG")
            t5 = time.perf_counter()
            for key, value in zip(samples, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4),
                                  strict=True):  # fmt: skip
                samples[key].append(value)
        out[precision] = {k: 1000 * statistics.median(v) for k, v in samples.items()}
        out["size"] = f"{w}×{h}"
    return out
