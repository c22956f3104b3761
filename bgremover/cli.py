"""Command line: ``bgremover remove | models``.

Only argparse is imported at module level so that ``bgremover --version`` and
``--help`` answer at once; the engine (numpy, Pillow, ONNX Runtime) is imported
by the command that needs it.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from . import __version__
from .models import DEFAULT_MODEL, PRECISIONS
from .output import DEFAULT_FORMAT, FORMATS

log = logging.getLogger("bgremover")

EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE = 0, 1, 2


class TerminalProgress:
    """A one-line progress display on a terminal; silent when stderr is not one.

    Frozen windowed apps have ``sys.stderr = None``: then nothing is written.
    """

    def __init__(self, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and self.stream is not None and _isatty(self.stream)
        self._shown = False

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        width = shutil.get_terminal_size((80, 20)).columns - 1
        self.stream.write("\r" + text[:width].ljust(width))
        self.stream.flush()
        self._shown = True

    def clear(self) -> None:
        if self._shown:
            width = shutil.get_terminal_size((80, 20)).columns - 1
            self.stream.write("\r" + " " * width + "\r")
            self.stream.flush()
            self._shown = False

    def task(self, name: str):  # -> pipeline.TaskProgress
        """A callback for model preparation: downloads (bytes) and quantization (samples)."""

        def callback(task: str, done: int, total: int | None) -> None:
            if task == "quantize":
                self.show(f"Making the int8 {name}: calibration {done}/{total}")
            elif total:
                self.show(
                    f"Downloading {name}: {done / 1e6:.1f} / {total / 1e6:.1f} MB "
                    f"({100 * done / total:.0f}%)"
                )
            else:
                self.show(f"Downloading {name}: {done / 1e6:.1f} MB")

        return callback


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _err(message: str) -> None:
    if sys.stderr is not None:
        print(message, file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bgremover",
        description="Remove image backgrounds with U²-Net models (ONNX Runtime, offline).",
    )
    parser.add_argument("--version", action="version", version=f"bgremover {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    rm = sub.add_parser(
        "remove",
        help="cut out images or folders of images",
        description="Cut out the subject of each image. Folders are walked recursively and "
        "their tree is mirrored under OUTPUT. Outputs that already exist are skipped, so a "
        "rerun resumes an interrupted batch.",
    )
    rm.add_argument("inputs", nargs="+", type=Path, metavar="INPUT", help="image files or folders")
    rm.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="output folder (or, for a single input file, the output file: "
        + "/".join(f.extension for f in FORMATS.values())
        + ")",
    )
    rm.add_argument(
        "-m",
        "--model",
        default=DEFAULT_MODEL,
        help="registry model name (see `bgremover models list`) or path of an .onnx file",
    )
    rm.add_argument(
        "-p",
        "--precision",
        choices=PRECISIONS,
        default=PRECISIONS[0],
        help="int8 is faster; it is made from the fp32 model on first use "
        "(see `bgremover compare` for what it changes)",
    )
    rm.add_argument(
        "--no-refine",
        dest="refine",
        action="store_false",
        help="keep the network's mask as is (identical to rembg's) instead of "
        "refining its edges with the photo's colours",
    )
    rm.add_argument(
        "--decontaminate",
        action="store_true",
        help="re-estimate colours in see-through edges (hair) so no tint of the old "
        "background remains; slower",
    )
    rm.add_argument("--mask-only", action="store_true", help="write the alpha mask (greyscale)")
    rm.add_argument(
        "-f",
        "--format",
        choices=tuple(FORMATS),
        default=None,
        help=f"output format (default: {DEFAULT_FORMAT}, or the output file's extension)",
    )
    rm.add_argument(
        "-b",
        "--background",
        metavar="COLOR",
        help="put the subject on a solid colour: name, #rrggbb[aa] or r,g,b[,a]",
    )
    rm.add_argument(
        "--providers",
        default="auto",
        help="execution providers, best first: auto (default), cpu, cuda, coreml, "
        "directml, ... comma-separated",
    )
    rm.add_argument(
        "--threads", type=int, default=0, help="ONNX Runtime threads (0 = one per physical core)"
    )
    rm.add_argument(
        "--overwrite",
        action="store_true",
        help="redo outputs that already exist instead of skipping them",
    )
    rm.add_argument(
        "--max-megapixels",
        type=float,
        default=None,
        help="refuse images larger than this (decompression-bomb guard; default 250)",
    )
    rm.add_argument("-q", "--quiet", action="store_true", help="no progress display")

    models = sub.add_parser("models", help="list and download models")
    msub = models.add_subparsers(dest="models_command", metavar="ACTION")
    ls = msub.add_parser("list", help="list the registry's models and what is cached")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    pull = msub.add_parser("pull", help="download and verify a model into the cache")
    pull.add_argument("name", help="model name")
    quant = msub.add_parser("quantize", help="make the int8 version of a model (cached)")
    quant.add_argument("name", help="model name or .onnx path")
    quant.add_argument(
        "--calibration",
        type=Path,
        metavar="DIR",
        help="folder of photos to calibrate on (default: the photos shipped with bgremover)",
    )
    quant.add_argument(
        "--recipe", default=None, help="quantization recipe (default: the faithful one)"
    )
    quant.add_argument("--force", action="store_true", help="make it again even if cached")

    cmp = sub.add_parser(
        "compare",
        help="fp32 vs int8 masks side by side, with fidelity numbers",
        description="For each image: a PNG with the input, the fp32 mask, the int8 mask and the "
        "|Δα| heatmap, and a JSON file with the metrics and timings.",
    )
    cmp.add_argument("images", nargs="+", type=Path, metavar="IMAGE")
    cmp.add_argument("-o", "--output", type=Path, required=True, help="output folder")
    cmp.add_argument("-m", "--model", default=DEFAULT_MODEL)
    cmp.add_argument("--recipe", default=None, help="int8 recipe to compare (default: the default)")
    cmp.add_argument("--providers", default="auto")
    cmp.add_argument("--threads", type=int, default=0)

    bench = sub.add_parser("bench", help="time inference per precision and provider")
    bench.add_argument("-m", "--model", default=DEFAULT_MODEL)
    bench.add_argument("--runs", type=int, default=20, help="timed runs after warm-up")
    bench.add_argument(
        "--image",
        type=Path,
        default=None,
        help="photo for the stage breakdown (default: the bundled sample)",
    )
    bench.add_argument("--threads", type=int, default=0)
    bench.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(levelname)s %(name)s: %(message)s",
    )
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    from .errors import BgRemoverError

    try:
        if args.command == "remove":
            return cmd_remove(args)
        if args.command == "compare":
            from .evaluation import cmd_compare

            return cmd_compare(args, TerminalProgress())
        if args.command == "bench":
            from .evaluation import cmd_bench

            return cmd_bench(args, TerminalProgress())
        if args.command == "models":
            if args.models_command == "list":
                return cmd_models_list(args)
            if args.models_command == "pull":
                return cmd_models_pull(args)
            if args.models_command == "quantize":
                return cmd_models_quantize(args)
            parser.parse_args(["models", "--help"])
    except BgRemoverError as exc:  # model unavailable, bad option: nothing could run
        _err(f"bgremover: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _err("\nbgremover: interrupted; finished outputs are kept, rerun to resume.")
        return 130
    return EXIT_USAGE


def cmd_models_list(args: argparse.Namespace) -> int:
    from .models import REGISTRY, ModelStore
    from .quantize import cached_int8

    store = ModelStore()
    records = []
    for record, spec in zip(store.list_models(), REGISTRY.values(), strict=True):
        records.append(record)
        for int8 in cached_int8(store, spec):
            records.append({**record, **int8, "default": False})
    if args.json:
        print(json.dumps({"cache": str(store.models_dir), "models": records}, indent=2))
        return EXIT_OK
    print(f"Model cache: {store.models_dir}")
    for r in records:
        state = "cached" if r["path"] else "not downloaded"
        size = f"{r['bytes'] / 1e6:.1f} MB"
        mark = " (default)" if r["default"] else ""
        if r["precision"] == "int8":
            mark = f" [int8 recipe: {r['recipe']}]"
        print(
            f"  {r['name']:<18} {r['precision']:<5} {size:>9}  {state:<15} {r['description']}{mark}"
        )
    return EXIT_OK


def cmd_models_pull(args: argparse.Namespace) -> int:
    from .models import ModelStore, resolve_spec

    spec = resolve_spec(args.name)
    progress = TerminalProgress()
    report = progress.task(spec.name)
    path = ModelStore().ensure(spec, lambda done, total: report("download", done, total))
    progress.clear()
    print(f"{spec.name}: {path} (verified {spec.known_hash})")
    return EXIT_OK


def cmd_models_quantize(args: argparse.Namespace) -> int:
    from .models import ModelStore, resolve_spec
    from .quantize import DEFAULT_RECIPE, ensure_int8, int8_path

    spec = resolve_spec(args.name)
    store = ModelStore()
    recipe = args.recipe or DEFAULT_RECIPE
    progress = TerminalProgress()
    report = progress.task(spec.name)
    fp32 = store.ensure(spec, lambda done, total: report("download", done, total))
    target = int8_path(store, spec, fp32, recipe, args.calibration)
    if args.force and target.exists():
        target.unlink()
    start = time.monotonic()
    path = ensure_int8(
        spec,
        store,
        recipe,
        args.calibration,
        lambda done, total: report("quantize", done, total),
        fp32,
    )
    progress.clear()
    print(f"{spec.name} int8 ({recipe}): {path} ({time.monotonic() - start:.1f} s)")
    return EXIT_OK


def cmd_remove(args: argparse.Namespace) -> int:
    from .batch import BatchFinished, ItemDone, ItemFailed, ItemSkipped, run_batch
    from .compose import ComposeOptions, parse_color
    from .output import format_for_path
    from .pipeline import EngineConfig, Remover
    from .plan import plan_batch

    fmt = args.format
    if fmt is None:
        named = format_for_path(args.output)
        fmt = named.name if named is not None and len(args.inputs) == 1 else DEFAULT_FORMAT
    options = ComposeOptions(
        mask_only=args.mask_only,
        background=parse_color(args.background) if args.background else None,
        decontaminate=args.decontaminate,
    )
    plan = plan_batch(args.inputs, args.output, fmt)
    for path, reason in plan.problems:
        _err(f"bgremover: skipping {path}: {reason}")
    if not plan.jobs:
        _err("bgremover: no images to process" + (" (see above)." if plan.problems else "."))
        return EXIT_USAGE if not plan.problems else EXIT_SOME_FAILED

    progress = TerminalProgress(enabled=not args.quiet)
    config = EngineConfig(args.model, args.precision, args.providers, args.threads, args.refine)
    remover = Remover.from_config(config, progress=progress.task(args.model))
    info = remover.load()  # obtain the model before the first image, with its own progress
    progress.clear()
    for reason in info.fallbacks:
        _err(f"bgremover: provider fallback: {reason}")
    log.info("Model %s on %s", remover.spec.name, ", ".join(info.active))

    start = time.monotonic()
    finished: BatchFinished | None = None
    count = 0  # items complete out of order: progress counts them
    events = run_batch(
        plan.jobs,
        remover,
        options,
        fmt,
        overwrite=args.overwrite,
        max_megapixels=args.max_megapixels,
    )
    for event in events:
        if isinstance(event, (ItemDone, ItemSkipped, ItemFailed)):
            count += 1
            if isinstance(event, ItemFailed):
                progress.clear()
                reason = event.reason
                if str(event.job.source) not in reason:
                    reason = f"{event.job.source}: {reason}"
                _err(f"bgremover: failed: {reason}")
            elif isinstance(event, ItemDone):
                log.info("%s -> %s (%.2f s)", event.job.source, event.job.output, event.seconds)
            progress.show(_progress_line(count, event.total, start, event.job.source))
        elif isinstance(event, BatchFinished):
            finished = event
    progress.clear()
    assert finished is not None
    failed = finished.failed + len(plan.problems)
    parts = [f"{finished.done} written"]
    if finished.skipped:
        parts.append(f"{finished.skipped} already done")
    if failed:
        parts.append(f"{failed} failed")
    summary = f"bgremover: {', '.join(parts)} in {finished.seconds:.1f} s -> {args.output}"
    if finished.stopped:
        summary += f"\nbgremover: stopped early: {finished.stopped}"
    _err(summary)
    return EXIT_SOME_FAILED if failed else EXIT_OK


def _progress_line(count: int, total: int, start: float, current: Path) -> str:
    elapsed = time.monotonic() - start
    left = elapsed / count * (total - count) if count else 0.0
    eta = f"{int(left // 60)}:{int(left % 60):02d}"
    return f"[{count}/{total}] {100 * count // total:3d}%  eta {eta}  {current.name}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
