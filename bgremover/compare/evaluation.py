"""``bgremover compare`` and ``bgremover bench``: what int8 changes, and what it costs."""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from collections.abc import Hashable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..engine.batch_report import err as _err
from ..engine.budget import rss_bytes
from ..engine.pipeline import EngineConfig, Remover
from ..engine.plan import plan_batch, resolve_output
from ..errors import BgRemoverError, UsageError
from ..export.output import write_image
from ..files.imaging import from_array, read_image
from ..mask.metrics import iou
from ..network.measured import MIN_IOU, Measurement, fastest, save
from ..network.models import PRECISIONS
from ..network.session import (
    CPU,
    SessionPool,
    load_runtime,
    provider_choices,
    runtime_conflict,
)
from ..network.store import ModelStore
from .comparison import MATERIAL_IOU, compare, is_precision_pair, model_seconds, parse_side
from .report import comparison_sheet

K = TypeVar("K", bound=Hashable)


def infer_times(
    removers: Mapping[K, Remover], rgb: np.ndarray, runs: int, warmup: int = 3
) -> dict[K, list[float]]:
    """Seconds of each Remover's inference on ``rgb`` (prepared as each one's model wants
    it), ``runs`` times after ``warmup`` runs, the Removers interleaved so that a change in
    the machine's load hits every one alike."""
    batches = {key: r.prepare(from_array(rgb))[0] for key, r in removers.items()}
    for key, r in removers.items():
        for _ in range(warmup):
            r.infer(batches[key])  # first runs allocate and tune
    times: dict[K, list[float]] = {key: [] for key in removers}
    for _ in range(runs):
        for key, r in removers.items():
            start = time.perf_counter()
            r.infer(batches[key])
            times[key].append(time.perf_counter() - start)
    return times


def cmd_compare(args: argparse.Namespace, progress: Any) -> int:
    """For each image: a side-by-side PNG and a JSON file of metrics; a summary at the end.

    The sides are ``--a`` and ``--b`` (default: ``--model`` fp32 and int8). ``progress``
    (the CLI's TerminalProgress) shows what is being done: a display on a terminal, a
    line per image in a log.
    """
    side_a = parse_side(getattr(args, "a", None), "--a", args.model, "fp32")
    side_b = parse_side(getattr(args, "b", None), "--b", args.model, "int8")
    if side_a == side_b:
        raise UsageError(
            f"--a and --b are the same ({side_a[0]} {side_a[1]}): nothing to compare. "
            "Give two different models or precisions, e.g. --a u2netp --b isnet-imgly."
        )
    target = resolve_output(args.images, args.output)
    if target.single_file and target.fmt != "png":
        raise UsageError(
            f"compare writes its sheets as PNG: name the output {target.path.stem}.png, "
            "or give a folder."
        )
    plan = plan_batch(args.images, target.path, "png", single_file=target.single_file)
    for path, reason in plan.problems:
        _err(f"bgremover: skipping {path}: {reason}")
    if not plan.jobs:
        _err("bgremover: nothing could run: no image to compare (see above). "
             "Check the paths and try again.")  # fmt: skip
        return 2
    config = EngineConfig(
        args.model, providers=args.providers, threads=args.threads, recipe=args.recipe
    )
    pool = SessionPool(capacity=2)
    removers = []
    for model, precision in (side_a, side_b):
        # Both sides are checked (an unknown name, int8 not offered) before any download.
        side = replace(config, model=model, precision=precision)
        removers.append(Remover.from_config(side, pool=pool, progress=progress.task(model)))
    a_side, b_side = removers
    a_side.load()
    b_side.load()
    progress.clear()
    rows = []
    failed = len(plan.problems)
    total = len(plan.jobs)
    label_a = label_b = ""
    for number, job in enumerate(plan.jobs, 1):
        progress.step(f"comparing {job.source.name} ({number}/{total})...")
        try:
            c = compare(a_side, b_side, job.source)
            a, b, m = c.a, c.b, c.metrics
            label_a, label_b = c.label_a, c.label_b
            m.update(image=str(job.source), heat_scale=args.heat_scale)
            if is_precision_pair(a_side, b_side):  # the keys of the fp32 | int8 JSON
                m.update(
                    model=a_side.spec.name,
                    recipe=b_side.recipe or "default",
                    providers_fp32=list(a.providers),
                    providers_int8=list(b.providers),
                )
            height, width = a.mask.shape
            caption = [
                f"{job.source.name}  {width}x{height}   A = {label_a}, B = {label_b}"
                + (f", int8 recipe {b_side.int8_recipe}" if b_side.precision == "int8" else ""),
                f"mean |d alpha| {m['mean_abs']:.4f}   edge band |d alpha| {m['band_abs']:.4f}"
                f"   max |d alpha| {m['max_abs']:.3f}   IoU {m['iou']:.4f}",
                f"inference A ({label_a}) {1000 * model_seconds(a):.0f} ms, "
                f"B ({label_b}) {1000 * model_seconds(b):.0f} ms",
            ]
            names = ("fp32", "int8") if is_precision_pair(a_side, b_side) else ("A", "B")
            sheet = comparison_sheet(
                a.image.rgb, a.mask, b.mask, caption, args.heat_scale, names=names
            )
            write_image(sheet, job.output, "png")
            json_path = job.output.with_suffix(".json")
            json_path.write_text(json.dumps(m, indent=2) + "\n", encoding="utf-8")
        except BgRemoverError as exc:
            progress.clear()
            failed += 1
            _err(f"bgremover: failed: {exc}")
            continue
        progress.clear()
        rows.append(m)
        print(f"{job.source.name}: IoU {m['iou']:.4f}, mean |Δα| {m['mean_abs']:.4f}, "
              f"edge band |Δα| {m['band_abs']:.4f} -> {job.output} "
              f"(and {json_path.name})", flush=True)  # fmt: skip
        if m["material"] or (m["guard_b"] or {}).get("in_doubt"):
            print(f"  {m['verdict']}", flush=True)
        for letter, made in (("A", a), ("B", b)):
            if made.doubts:
                print(f"  {letter}'s cutout may be wrong: {'; '.join(made.doubts)}.", flush=True)
    if rows:
        speed = statistics.median(r["infer_a_s"] / r["infer_b_s"] for r in rows)
        pace = (
            f"B ({label_b}) {speed:.2f}× the speed of A ({label_a})"
            if speed >= 1
            else f"B ({label_b}) takes {1 / speed:.1f}× the time of A ({label_a})"
        )
        material = sum(r["material"] for r in rows)
        if material and any(r["warning"] for r in rows):
            print(f"{label_b} changes {material} of {len(rows)} photos materially "
                  f"(IoU below {MATERIAL_IOU}).", flush=True)  # fmt: skip
        elif material:
            print(f"{label_a} and {label_b} disagree on {material} of {len(rows)} photos "
                  f"(IoU below {MATERIAL_IOU}): see the sheets for which is right.",
                  flush=True)  # fmt: skip
        print(
            f"{len(rows)} compared: mean IoU {np.mean([r['iou'] for r in rows]):.4f} "
            f"(min {min(r['iou'] for r in rows):.4f}), mean |Δα| "
            f"{np.mean([r['mean_abs'] for r in rows]):.4f}, edge band |Δα| "
            f"{np.mean([r['band_abs'] for r in rows]):.4f}, {pace}",
            flush=True,
        )
    return 1 if failed else 0


def _spread(times: list[float]) -> dict[str, float]:
    q = np.percentile(times, [25, 50, 75])
    return {"median_ms": 1000 * q[1], "iqr_ms": 1000 * (q[2] - q[0]),
            "min_ms": 1000 * min(times), "runs": len(times)}  # fmt: skip


def cmd_bench(args: argparse.Namespace, progress: Any) -> int:
    """Inference time per precision and provider, and a stage breakdown for one photo."""
    from ..network.quantize import CALIBRATION_DIR, calibration_files

    image_path = args.image or CALIBRATION_DIR / "matplotlib_grace_hopper.jpg"
    report = progress.task(args.model)
    providers = [p for p in provider_choices() if p != CPU] + [CPU]
    results: dict[str, Any] = {"model": args.model, "image": str(image_path), "inference": []}
    conflict = runtime_conflict()
    if conflict:
        print(f"bgremover: warning: {conflict}", file=sys.stderr)
        results["runtime_conflict"] = conflict
    removers = {}
    rgb = read_image(image_path).rgb
    load_runtime()  # ONNX Runtime's own libraries are not the first session's memory
    memory: dict[tuple[str, str], float] = {}
    for provider in providers:
        for precision in ("fp32", "int8"):
            r = Remover(args.model, precision=precision, providers=(provider,),
                        threads=args.threads, progress=report)  # fmt: skip
            before = rss_bytes()
            info = r.load()
            progress.clear()
            if provider != CPU and provider not in info.active:
                results["inference"].append({"provider": provider, "precision": precision,
                                             "skipped": "; ".join(info.fallbacks)})  # fmt: skip
                continue
            r.infer(r.prepare(from_array(rgb))[0])  # its working memory, allocated once
            # What the session added to the process (the sessions before it stay loaded).
            memory[(provider, precision)] = max(0, rss_bytes() - before) / 2**20
            removers[(provider, precision)] = r
    times = infer_times(removers, rgb, args.runs)
    photos = calibration_files()
    parity = _parity(removers, photos)
    measured = []
    for (provider, precision), runs in times.items():
        spread = _spread(runs)
        max_abs, min_iou, fp32_iou = parity[(provider, precision)]
        mb = round(memory[(provider, precision)], 1)
        measured.append(Measurement(provider, precision, spread["median_ms"], max_abs, min_iou,
                                    fp32_iou, mb))  # fmt: skip
        results["inference"].append({"provider": provider, "precision": precision, **spread,
                                     "max_abs_vs_cpu": max_abs, "min_iou_vs_cpu": min_iou,
                                     "min_iou_vs_cpu_fp32": fp32_iou, "memory_mb": mb})  # fmt: skip
    results["parity_photos"] = len(photos)
    results["auto"] = {p: getattr(fastest(measured, p), "provider", None) for p in PRECISIONS}
    if args.save:
        name = next(iter(removers.values())).spec.name
        results["saved"] = str(save(ModelStore().home, name, args.threads, measured))
    results["stages"] = _stage_breakdown(image_path, removers)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"model {args.model}, {args.runs} runs after warm-up, threads {args.threads or 'auto'}; "
          f"parity with the CPU provider on {len(photos)} photos")  # fmt: skip
    print(f"{'provider':<28}{'precision':<10}{'median ms':>10}{'IQR ms':>8}{'min ms':>8}"
          f"{'max |Δ|':>9}{'IoU':>7}{'IoU fp32':>9}{'MB':>7}")  # fmt: skip
    for row in results["inference"]:
        if "skipped" in row:
            print(f"{row['provider']:<28}{row['precision']:<10}  skipped: {row['skipped']}")
            continue
        print(f"{row['provider']:<28}{row['precision']:<10}{row['median_ms']:>10.1f}"
              f"{row['iqr_ms']:>8.1f}{row['min_ms']:>8.1f}{row['max_abs_vs_cpu']:>9.4f}"
              f"{row['min_iou_vs_cpu']:>7.3f}{row['min_iou_vs_cpu_fp32']:>9.3f}"
              f"{row['memory_mb']:>7.0f}")  # fmt: skip
    for precision, provider in results["auto"].items():
        if provider is not None:
            print(f"auto, {precision}: {provider} (the fastest whose masks have IoU >= "
                  f"{MIN_IOU} with the CPU provider's on every photo)")  # fmt: skip
    if "saved" in results:
        print(f"saved: {results['saved']} (--providers auto now picks from it on this machine)")
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


def _parity(
    removers: Mapping[tuple[str, str], Remover], photos: list[Path]
) -> dict[tuple[str, str], tuple[float, float, float]]:
    """Per (provider, precision): the largest |Δ| of the raw output and the lowest mask IoU
    against the CPU provider at the same precision, and the lowest mask IoU against the CPU
    provider in fp32, over ``photos``. (0, 1, 1) where there is nothing to compare with."""
    worst = {key: (0.0, 1.0, 1.0) for key in removers}
    for photo in photos:
        rgb = read_image(photo).rgb
        made = {}
        for key, r in removers.items():
            batch, _ = r.prepare(from_array(rgb))
            raw = r.infer(batch)
            made[key] = (raw, r.masked(rgb, raw, None).mask)
        for (provider, precision), (raw, mask) in made.items():
            same, fp32 = made.get((CPU, precision)), made.get((CPU, "fp32"))
            max_abs, min_iou, fp32_iou = worst[(provider, precision)]
            if same is not None:
                max_abs = max(max_abs, float(np.abs(raw - same[0]).max()))
                min_iou = min(min_iou, iou(mask, same[1]))
            if fp32 is not None:
                fp32_iou = min(fp32_iou, iou(mask, fp32[1]))
            worst[(provider, precision)] = (max_abs, min_iou, fp32_iou)
    return worst


def _stage_breakdown(image_path: Path, removers: dict) -> dict[str, Any]:
    """Median ms per stage (decode, preprocess, inference, postprocess, refine, PNG encode)
    of the whole chain on the CPU sessions, as `remove` runs it."""
    names = {"read": "decode", "preprocess": "preprocess", "infer": "inference",
             "postprocess": "postprocess", "refine": "refine"}  # fmt: skip
    out: dict[str, Any] = {}
    for (provider, precision), r in removers.items():
        if provider != CPU:
            continue
        samples: dict[str, list[float]] = {k: [] for k in (*names.values(), "encode")}
        for _ in range(5):
            result = r.remove(image_path)
            start = time.perf_counter()
            result.cutout().save(io.BytesIO(), "PNG")
            samples["encode"].append(time.perf_counter() - start)
            for key, name in names.items():
                samples[name].append(result.timings[key])
        out[precision] = {k: 1000 * statistics.median(v) for k, v in samples.items()}
        height, width = result.mask.shape
        out["size"] = f"{width}×{height}"
    return out
