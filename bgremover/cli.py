"""Command line: ``bgremover remove | models``.

One module because the commands' parsers share their argument groups and must import
nothing but argparse at start-up; each command's work is in the engine's packages.

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
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from . import __version__
from .compare.report import DEFAULT_HEAT_SCALE, HEAT_SCALES
from .engine.batch_report import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from .engine.batch_report import err as _err
from .export.options import add_flags, cli_flags, cli_values
from .export.output import DEFAULT_FORMAT, FORMATS
from .network.models import DEFAULT_MODEL, PRECISIONS
from .video.flags import add_arguments as add_clip_arguments

log = logging.getLogger("bgremover")


class TerminalProgress:
    """What a command is doing, on stderr: a one-line display that rewrites itself on a
    terminal; elsewhere (a log file, a pipe) a plain line per step, and no display.

    ``enabled=False`` (``-q``) silences both. Frozen windowed apps have
    ``sys.stderr = None``: then nothing is written.
    """

    def __init__(self, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.stream = stream if stream is not None else sys.stderr
        terminal = self.stream is not None and _isatty(self.stream)
        #: The rewriting display, on a terminal only.
        self.enabled = enabled and terminal
        #: A line per step, where there is no terminal.
        self.lines = enabled and self.stream is not None and not terminal
        self._shown = False
        self._announced: set[tuple[str, str]] = set()

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        width = shutil.get_terminal_size((80, 20)).columns - 1
        self.stream.write("\r" + text[:width].ljust(width))
        self.stream.flush()
        self._shown = True

    def step(self, text: str) -> None:
        """A step worth a line in a log: shown on the display, or as a line of its own."""
        if self.enabled:
            self.show(text)
        elif self.lines:
            self.stream.write(f"bgremover: {text}\n")
            self.stream.flush()

    def clear(self) -> None:
        if self._shown:
            width = shutil.get_terminal_size((80, 20)).columns - 1
            self.stream.write("\r" + " " * width + "\r")
            self.stream.flush()
            self._shown = False

    def task(self, name: str):  # -> pipeline.TaskProgress
        """A callback for model preparation: downloads (bytes) and quantization (samples)."""

        from .network.models import REGISTRY, size_text

        spec = REGISTRY.get(name)
        # The size is said first: the npm and pip mirrors cannot report progress in bytes.
        size = "" if spec is None else f", {size_text(spec.bytes, spec.bytes_exact)}"

        def callback(task: str, done: int, total: int | None) -> None:
            if self.lines and (name, task) not in self._announced:  # a line per task
                self._announced.add((name, task))
                what = "making the int8 version of" if task == "quantize" else "downloading"
                where = size if task == "download" else ""
                self.step(f"{what} {name} (first use{where}; it is kept in the model cache)...")
            if task == "quantize":
                self.show(f"Making the int8 {name}: step {done} of {total}")
            elif total:
                self.show(
                    f"Downloading {name}: {done / 1e6:.1f} / {total / 1e6:.1f} MB "
                    f"({100 * done / total:.0f}%)"
                )
            else:
                self.show(f"Downloading {name}{size}: {done / 1e6:.1f} MB")

        callback.for_model = self.task  # type: ignore[attr-defined]  # Best's members, by name
        return callback


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


EXIT_STATUS = """\
exit status:
  0    everything succeeded
  1    some images failed (each is named on stderr; the others were written)
  2    usage error, or nothing could run (no input found, model not obtainable)
  130  interrupted (Ctrl+C); finished outputs are kept, rerun to resume"""

REMOVE_DESCRIPTION = """\
Cut out the subject of each image. Folders are walked recursively and their tree
is mirrored under the output folder. Outputs that already exist are skipped, so
a rerun resumes an interrupted batch; one made with other settings (model,
precision, refinement, export options, edits) is made again, and the summary
says so ("1 redone: settings changed").

What -o names:
  - an existing folder, or a name without an extension, is a folder: each image
    becomes FOLDER/<name>.png (photo.jpg -o out -> out/photo.png);
  - a name with an extension is the output file, for a single input file only:
    photo.jpg -o cut.png or -o cut.jpg (the extension sets the format); other
    extensions are refused, and so is a file name for a folder or several inputs;
  - end the name with / for a new folder whose name has a dot (-o shots.v2/).
Clips (.mp4 .mov .m4v .mkv .webm .avi) are cut out frame by frame with their sound:
clip.mp4 -o cut.webm (VP9 with alpha) or cut.mov (ProRes 4444); in a folder each
becomes --video-format's kind (webm by default; png: a folder of frames).

Export: a preset (--preset NAME, listed by `bgremover presets`) sets the options
below at once; options given on the command line override the preset's.
  --preset product-white-square       white, square 2000 px, 5 % margin, shadow, JPEG
  --background blur --crop 10%        the photo's own background, blurred, cropped
  --background white --background wall.jpg --background-fit fit
                                      an image letterboxed on white"""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs keep their lines; option help is wrapped as usual."""


def _verbosity(default: object) -> argparse.ArgumentParser:
    """-q and -v, accepted before the command and after it.

    The copy given to each command has no defaults (SUPPRESS), so a command that
    does not see the option leaves the value given before the command in place.
    """
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("progress and log output")
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=False if default is None else default,
        help="no progress display or progress lines (results and errors are still shown)",
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0 if default is None else default,
        help="more log output (-vv for debug output)",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bgremover",
        description="Remove image backgrounds with U²-Net models (ONNX Runtime, offline).",
        epilog=EXIT_STATUS,
        formatter_class=_Formatter,
        parents=[_verbosity(None)],
    )
    parser.add_argument("--version", action="version", version=f"bgremover {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = _verbosity(argparse.SUPPRESS)

    def command(name: str, **kw) -> argparse.ArgumentParser:
        kw.setdefault("epilog", EXIT_STATUS)
        return sub.add_parser(name, parents=[common], formatter_class=_Formatter, **kw)

    rm = command(
        "remove",
        help="cut out images, clips, or folders of them",
        description=REMOVE_DESCRIPTION,
    )
    rm.add_argument("inputs", nargs="+", type=Path, metavar="INPUT", help="images, clips, folders")
    rm.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUTPUT",
        help="output folder; for a single input file, a name with an extension ("
        + " or ".join(f.extension for f in FORMATS.values())
        + ") is the output file (see above)",
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
        "--no-int8-guard",
        dest="int8_guard",
        action="store_false",
        help="with int8, keep int8 for every image; by default an image int8 is unsure "
        "of (a broad part of it near the mask's threshold) is made in fp32 as well",
    )
    _family_arguments(rm)
    rm.add_argument(
        "--no-refine",
        dest="refine",
        action="store_false",
        help="keep the network's mask as is (identical to rembg's) instead of "
        "refining its edges with the photo's colours",
    )
    add_flags(rm, cli_flags("main"))  # --decontaminate (bgremover.export.options)
    rm.add_argument("--mask-only", action="store_true", help="write the alpha mask (greyscale)")
    rm.add_argument(
        "-f",
        "--format",
        choices=tuple(FORMATS),
        default=None,
        help=f"output format (default: the output file's extension, else {DEFAULT_FORMAT}); "
        "it must agree with the output file's extension",
    )
    _export_arguments(rm)
    add_clip_arguments(rm)  # --video-format, --no-audio (bgremover.video.flags)
    rm.add_argument(
        "--providers",
        default="auto",
        help="execution providers, best first: auto (default), cpu, cuda, coreml, "
        "directml, openvino[:DEVICE[:PRECISION]] (openvino:GPU:FP16), ... comma-separated",
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
        "--edits",
        type=Path,
        metavar="FILE",
        help="apply corrections to the mask made in the app (Touch Up > Export Edits), for "
        "one input image; they replay on this run's model and settings (add --overwrite "
        "to redo an output that exists)",
    )
    rm.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run the batch on a Ray cluster (the `ray` extra): `--ray` starts one on this "
        "machine, `--ray ADDRESS` joins one (ray://host:10001, or auto)",
    )
    rm.add_argument(
        "--max-megapixels",
        type=float,
        default=None,
        help="refuse images larger than this (decompression-bomb guard; default 250)",
    )

    presets = command("presets", help="list the export presets", epilog=None)
    presets.add_argument("--json", action="store_true", help="machine-readable output")
    presets.add_argument(
        "--remove",
        metavar="NAME",
        help="delete your preset NAME (a built-in of that name is used again)",
    )

    models = command("models", help="list and download models", epilog=None)
    msub = models.add_subparsers(dest="models_command", metavar="ACTION")

    def action(name: str, **kw) -> argparse.ArgumentParser:
        return msub.add_parser(name, parents=[common], formatter_class=_Formatter, **kw)

    ls = action("list", help="list the registry's models and what is cached")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    fam = action("families", help="describe the model families and how each prepares photos")
    fam.add_argument("--json", action="store_true", help="machine-readable output")
    pull = action("pull", help="download and verify a model into the cache")
    pull.add_argument("name", help="model name")
    quant = action("quantize", help="make the int8 version of a model (cached)")
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

    cmp = command(
        "compare",
        help="two models or precisions side by side (fp32 vs int8 by default), with numbers",
        description="For each image: a PNG sheet with the input, the mask of side A, the mask\n"
        "of side B and the |Δα| heatmap with its legend, and a JSON file with the metrics\n"
        "and timings. A summary over all images is printed at the end. By default A is\n"
        "the fp32 model and B its int8 version; --a and --b compare any two, e.g.\n"
        "--a u2netp --b isnet-imgly, or --b birefnet-general:fp32.",
    )
    cmp.add_argument(
        "images", nargs="+", type=Path, metavar="IMAGE", help="image files or folders of images"
    )
    cmp.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUTPUT",
        help="output folder for IMAGE.png and IMAGE.json (for a single image, a name "
        "ending in .png is the sheet, with the JSON beside it)",
    )
    cmp.add_argument(
        "-m",
        "--model",
        default=DEFAULT_MODEL,
        help="registry model name or path of an .onnx file (its int8 version is made on first use)",
    )
    for side, default in (("a", "fp32"), ("b", "int8")):
        cmp.add_argument(
            f"--{side}",
            default=None,
            metavar="MODEL[:PRECISION]",
            help=f"side {side.upper()}: a registry model name or .onnx path, with :fp32 or "
            f":int8 (default fp32); or a precision alone, of --model "
            f"(default: --model {default})",
        )
    cmp.add_argument(
        "--recipe",
        default=None,
        help="int8 recipe of the int8 side(s) (default: the family's faithful one; "
        "naive is the plain one)",
    )
    cmp.add_argument(
        "--heat-scale",
        type=float,
        choices=HEAT_SCALES,
        default=DEFAULT_HEAT_SCALE,
        metavar="{" + ",".join(f"{v:g}" for v in HEAT_SCALES) + "}",
        help="|Δα| at which the heatmap reaches full colour "
        f"(default {DEFAULT_HEAT_SCALE:g}, as in the app); smaller shows smaller differences",
    )
    cmp.add_argument(
        "--providers",
        default="auto",
        help="execution providers, best first: auto (default), cpu, cuda, ... comma-separated",
    )
    cmp.add_argument(
        "--threads", type=int, default=0, help="ONNX Runtime threads (0 = one per physical core)"
    )

    _serve_arguments(command)

    bench = command(
        "bench",
        help="time inference per precision and provider",
        epilog=None,
        description="Times the model's inference in fp32 and int8 on each execution provider\n"
        "this ONNX Runtime offers (interleaved runs, after a warm-up), measures each one's\n"
        "parity with the CPU provider's output at the same precision on the calibration\n"
        "photos, then each stage of the whole chain on one photo. With --save, --providers\n"
        "auto then runs this model on the fastest provider whose masks agree with the CPU's.",
    )
    bench.add_argument(
        "-m",
        "--model",
        default=DEFAULT_MODEL,
        help="registry model name or path of an .onnx file",
    )
    bench.add_argument("--runs", type=int, default=20, help="timed runs after warm-up")
    bench.add_argument(
        "--image",
        type=Path,
        default=None,
        help="photo for the stage breakdown (default: the bundled sample)",
    )
    bench.add_argument(
        "--threads", type=int, default=0, help="ONNX Runtime threads (0 = one per physical core)"
    )
    bench.add_argument("--json", action="store_true", help="machine-readable output")
    bench.add_argument(
        "--save",
        action="store_true",
        help="keep the result for this machine: --providers auto (the default) then picks "
        "from it for this model and thread count",
    )
    return parser


def _family_arguments(parser: argparse.ArgumentParser) -> None:
    from .network.families import FAMILIES

    parser.add_argument(
        "--family",
        choices=list(FAMILIES),
        metavar="FAMILY",
        help="for a model file of your own (--model PATH): the family it belongs to, which "
        "decides how photos are prepared for it (default: read from the file; see "
        "`bgremover models families`)",
    )
    parser.add_argument(
        "--classes",
        type=lambda text: tuple(c.strip() for c in text.split(",") if c.strip()),
        default=(),
        metavar="NAMES",
        help="for class-map models (u2net_cloth_seg): the classes that make the mask, "
        "comma-separated (upper, lower, full; default: all of them)",
    )
    parser.add_argument(
        "--resolution",
        type=int,
        metavar="PX",
        help="for models with a free input size (birefnet-dynamic): the long side of the "
        "model's input, e.g. 2048 for more detail on large photos (slower, more memory; "
        "default 1024)",
    )


def _export_arguments(rm: argparse.ArgumentParser) -> None:
    """The export options: what each output looks like, one flag per option record
    (bgremover.export.options; read by presets.options_from)."""
    ex = rm.add_argument_group("export options (a preset sets them together)")
    ex.add_argument(
        "--preset", metavar="NAME", help="export settings by name (see `bgremover presets`)"
    )
    add_flags(ex, cli_flags("export"))


def _serve_arguments(command) -> None:
    """``bgremover serve``: the HTTP API (bgremover/serve/; the ``serve`` extra)."""
    from .serve import API_KEY_ENV, DEFAULT_MAX_BODY_MB, DEFAULT_TIMEOUT

    serve = command(
        "serve",
        help="an HTTP API (remove.bg-compatible) on this machine",
        description="Serve cutouts over HTTP: POST /v1.0/removebg (remove.bg's API, for the "
        "parameters bgremover supports), POST /api/remove, GET /healthz, GET /metrics.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=5000, help="port to listen on")
    serve.add_argument(
        "--api-key",
        default=None,
        help=f"key clients must send (X-Api-Key); default ${API_KEY_ENV}; required "
        "when listening on anything but loopback",
    )
    serve.add_argument("-m", "--model", default=DEFAULT_MODEL, help="model name or .onnx path")
    serve.add_argument("-p", "--precision", choices=PRECISIONS, default=PRECISIONS[0])
    serve.add_argument(
        "--no-int8-guard",
        dest="int8_guard",
        action="store_false",
        help="with int8, keep int8 for every image (by default one int8 is unsure of is made "
        "in fp32 as well; the X-Precision response header says which ran)",
    )
    serve.add_argument("--no-refine", dest="refine", action="store_false")
    serve.add_argument("--providers", default="auto")
    serve.add_argument(
        "--threads", type=int, default=0, help="ONNX Runtime threads (0 = one per physical core)"
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=0,
        help="threads that run the engine (decode, finish, encode; one inference at a "
        "time); 0 = one per core, at most 4, plus one",
    )
    serve.add_argument(
        "--queue",
        type=int,
        default=16,
        help="requests that may wait for a worker; more get 429 (default 16)",
    )
    serve.add_argument(
        "--max-body-mb",
        type=float,
        default=DEFAULT_MAX_BODY_MB,
        help="largest request body in megabytes; a larger one is refused before it is read "
        f"(default {DEFAULT_MAX_BODY_MB:g})",
    )
    serve.add_argument(
        "--max-megapixels",
        type=float,
        default=None,
        help="largest image; larger is refused (default: $BGREMOVER_MAX_MEGAPIXELS, else 250 "
        "or less, so that one image at the limit takes at most half this machine's memory)",
    )
    serve.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds a request may take, upload and processing (default {DEFAULT_TIMEOUT:g})",
    )


def export_values(args: argparse.Namespace) -> dict:
    """The export options given on the command line, spelled as presets spell them
    (-f, the format, is decided with -o: see plan.resolve_output)."""
    return cli_values(args)


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
            from .compare.evaluation import cmd_compare

            return cmd_compare(args, TerminalProgress(enabled=not args.quiet))
        if args.command == "bench":
            from .compare.evaluation import cmd_bench

            return cmd_bench(args, TerminalProgress(enabled=not args.quiet))
        if args.command == "presets":
            return cmd_presets(args)
        if args.command == "serve":
            from .serve import cmd_serve

            return cmd_serve(args)
        if args.command == "models":
            if args.models_command == "list":
                return cmd_models_list(args)
            if args.models_command == "families":
                return cmd_models_families(args)
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
        return EXIT_INTERRUPTED
    return EXIT_USAGE


def cmd_presets(args: argparse.Namespace) -> int:
    from .export.presets import BUILTIN, load_presets, presets_dir, remove_preset

    if args.remove:
        for path in remove_preset(args.remove):
            print(f"removed {path}")
        if args.remove in BUILTIN:
            print(f"{args.remove}: the built-in preset is used again")
        return EXIT_OK
    presets = load_presets()
    if args.json:
        rows = [
            {
                "name": p.name,
                "description": p.description,
                "builtin": p.builtin,
                "replaces_builtin": p.shadows_builtin,
                "path": str(p.path) if p.path else None,
                "options": dict(p.values),
            }
            for p in presets.values()
        ]
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    width = max(len(name) for name in presets)
    for preset in presets.values():
        where = "" if preset.builtin else f"  (yours: {preset.path})"
        if preset.shadows_builtin:
            where += (
                f"\n{'':<{width}}    used instead of the built-in preset of this name; "
                f"`bgremover presets --remove {preset.name}` brings the built-in back"
            )
        print(f"{preset.name:<{width}}  {preset.description}{where}")
        print(f"{'':<{width}}    {preset.summary()}")
    print(f"\nYour own presets: TOML files in {presets_dir()} (see the README).")
    return EXIT_OK


def cmd_models_list(args: argparse.Namespace) -> int:
    from .engine.pipeline import made_int8
    from .network.models import REGISTRY, size_text
    from .network.prompt_models import PROMPT_MODELS
    from .network.quantize import cached_int8
    from .network.store import ModelStore

    store = ModelStore()
    records = []
    for record, spec in zip(store.list_models(), REGISTRY.values(), strict=True):
        records.append(record)
        for int8 in cached_int8(store, spec):
            records.append(_int8_record(record, int8))
    clicks = [store.describe_prompt(spec) for spec in PROMPT_MODELS.values()]
    if args.json:
        listing = {"cache": str(store.models_dir), "models": records, "click_models": clicks}
        print(json.dumps(listing, indent=2))
        return EXIT_OK
    print(f"Model cache: {store.models_dir}")
    print(f"  {'NAME':<22} {'FAMILY':<16} {'PREC':<5} {'SIZE':>13}  {'':<14} LICENCE")
    for r in records:
        state = "cached" if r.get("cached", bool(r["path"])) else "not downloaded"
        size = size_text(r["bytes"], r["bytes_exact"])
        licence = ("NON-COMMERCIAL: " if r["non_commercial"] else "") + r["licence"]
        print(
            f"  {r['name']:<22} {r['family'] or '?':<16} {r['precision']:<5} {size:>13}  "
            f"{state:<14} {licence}"
        )
        mark = " (default)" if r["default"] else ""
        print(f"  {'':<22} {r['description']}{mark}")
        if r.get("members"):
            makes = "".join(f", and makes {m}'s int8 version" for m in made_int8(r["name"]))
            print(f"  {'':<22} Runs {' and '.join(r['members'])}; `models pull` fetches both"
                  f"{makes}.")  # fmt: skip
    print("Click models (touch-up's Add / Remove clicks):")
    for c in clicks:
        state = "cached" if c["cached"] else "not downloaded"
        print(
            f"  {c['name']:<22} {'click':<16} {'fp32':<5} {size_text(c['bytes']):>13}  "
            f"{state:<14} {c['licence']}"
        )
        print(f"  {'':<22} {c['description']}")
    return EXIT_OK


def cmd_models_families(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from .network.families import FAMILIES
    from .network.models import REGISTRY

    if args.json:
        print(json.dumps([asdict(f) for f in FAMILIES.values()], indent=2))
        return EXIT_OK
    for family in FAMILIES.values():
        models = [s.name for s in REGISTRY.values() if s.family == family]
        side = f"{family.input_size} px" + (
            f" long side (free size, multiple of {family.multiple})" if family.dynamic else ""
        )
        print(f"{family.name}: {family.description}")
        print(
            f"    input {side}, {family.resize}, scaled by "
            f"{'the image maximum' if family.scaling == 'max' else '255'}, mean "
            f"{family.mean}, std {family.std}, {family.channels.upper()}; mask: output "
            f"{family.output}"
            + (f", activation {family.activation}" if family.activation != "none" else "")
            + f", {family.normalisation}"
            + (f"; classes {', '.join(family.class_names[1:])}" if family.classes else "")
        )
        listed = ", ".join(models) or "none in the registry (use --model PATH --family)"
        print(f"    int8: {', '.join(family.int8) or 'not offered'}; models: {listed}")
    return EXIT_OK


def _int8_record(fp32: dict, int8: dict) -> dict:
    """An int8 file's row: the fp32 model's facts that still hold, the file's own others.

    The registry's description, file name, md5 and sources are the fp32 file's (its
    description even names the fp32 size): an int8 row says what it is instead.
    """
    path = Path(int8["path"])
    return {
        **fp32,
        **int8,
        "default": False,
        "cached": True,
        "filename": path.name,
        "md5": None,
        "bytes_exact": True,
        "sources": [],
        "description": f"{fp32['name']} quantized to int8 "
        f"({int8['bytes'] / 1e6:.1f} MB, recipe {int8['recipe']}).",
    }


def cmd_models_pull(args: argparse.Namespace) -> int:
    from .network.models import resolve_spec
    from .network.prompt_models import PROMPT_MODELS
    from .network.store import ModelStore

    progress = TerminalProgress(enabled=not args.quiet)
    if args.name in PROMPT_MODELS:
        click = PROMPT_MODELS[args.name]
        task = progress.task(click.name)
        paths = ModelStore().ensure_prompt(click, lambda d, t: task("download", d, t))
        progress.clear()
        for part, path in zip(click.files, paths, strict=True):
            print(f"{part.name}: {path} (verified {part.known_hash})")
        return EXIT_OK
    spec = resolve_spec(args.name)
    report = progress.task(spec.name)
    if spec.members:  # each model's file, and the int8 version of those that run int8
        from .engine.pipeline import Remover

        for member in Remover(spec, progress=report).members:
            path = member.model_path()
            progress.clear()
            how = "int8, made on this machine" if member.precision == "int8" else "verified"
            print(f"{member.spec.name}: {path} ({how})")
        return EXIT_OK
    path = ModelStore().ensure(spec, lambda done, total: report("download", done, total))
    progress.clear()
    print(f"{spec.name}: {path} (verified {spec.known_hash})")
    return EXIT_OK


def cmd_models_quantize(args: argparse.Namespace) -> int:
    from .engine.pipeline import Remover
    from .network.models import resolve_spec
    from .network.quantize import ensure_int8, int8_path
    from .network.store import ModelStore

    spec = resolve_spec(args.name)
    store = ModelStore()
    remover = Remover(spec, precision="int8", recipe=args.recipe, store=store)
    family, recipe = remover.family, remover.int8_recipe
    progress = TerminalProgress(enabled=not args.quiet)
    report = progress.task(spec.name)
    fp32 = store.ensure(spec, lambda done, total: report("download", done, total))
    target = int8_path(store, spec, fp32, recipe, args.calibration, family)
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
        family,
    )
    progress.clear()
    print(f"{spec.name} int8 ({recipe}): {path} ({time.monotonic() - start:.1f} s)")
    return EXIT_OK


def cmd_remove(args: argparse.Namespace) -> int:
    from .engine.batch import (
        BatchEvent,
        BatchFinished,
        BatchSettings,
        BatchStarted,
        ItemDone,
        ItemFailed,
        run_batch,
    )
    from .engine.batch_report import (
        doubt_line,
        failure_line,
        nothing_to_do,
        progress_line,
        report_summary,
        skip_line,
        written_place,
    )
    from .engine.pipeline import EngineConfig, Remover
    from .engine.plan import plan_batch, resolve_output
    from .errors import UsageError
    from .export.compose import ComposeOptions
    from .export.presets import check_export, get_preset, options_from
    from .touchup.edit import load_edits
    from .video.batch import clip_events, with_clips
    from .video.plan import plan_clips

    # The preset, then the options here over it; all checked before any model or image, as -o.
    values = dict(get_preset(args.preset).values) if args.preset else {}
    values.update(export_values(args))
    options, preset_fmt = options_from(values, ComposeOptions(mask_only=args.mask_only))
    clips, photos = plan_clips(args.inputs, Path(args.output), args.video_format)
    target = resolve_output(
        photos or args.inputs, args.output if photos else Path(args.output).parent,
        args.format, default=preset_fmt or DEFAULT_FORMAT,
    )  # fmt: skip
    fmt = target.fmt
    check_export(options, fmt)
    plan = plan_batch(photos, target.path, fmt, single_file=target.single_file)
    for path, reason in plan.problems:
        _err(f"bgremover: skipping {path}: {reason}")
    if not plan.jobs and not clips:
        _err(nothing_to_do(args.inputs, plan.problems))
        return EXIT_USAGE
    jobs = plan.jobs
    if args.edits is not None:
        if len(plan.jobs) != 1 or plan.problems:
            raise UsageError(
                f"--edits applies to one image; {len(plan.jobs) + len(plan.problems)} "
                "inputs were given.",
                fix="Give the one photo the edits were made on: "
                "bgremover remove PHOTO -o OUTPUT --edits FILE",
            )
        jobs = (replace(plan.jobs[0], edits=load_edits(args.edits)),)

    progress = TerminalProgress(enabled=not args.quiet)
    config = EngineConfig(
        args.model, args.precision, args.providers, args.threads, args.refine,
        family=args.family, classes=args.classes, resolution=args.resolution,
        int8_guard=args.int8_guard,
    )  # fmt: skip
    remover = Remover.from_config(config, progress=progress.task(args.model))
    info = remover.load()  # obtain the model before the first image, with its own progress
    progress.clear()
    for reason in info.fallbacks:
        _err(f"bgremover: provider fallback: {reason}")
    log.info("Model %s on %s", remover.spec.name, ", ".join(info.active))

    start = time.monotonic()
    finished: BatchFinished | None = None
    count = 0  # items complete out of order: progress counts them
    settings = BatchSettings(options, fmt, args.overwrite, max_megapixels=args.max_megapixels)
    if not jobs:
        events: Iterator[BatchEvent] = iter(())
    elif args.ray is not None:
        from .distributed import ray_batch

        events = ray_batch(jobs, remover, settings, args.ray)
    else:
        events = run_batch(jobs, remover, options, fmt, args.overwrite,
                           max_megapixels=args.max_megapixels)  # fmt: skip
    total = len(jobs) + len(clips)
    made = clip_events(clips, remover, settings, total=total, audio=args.audio,
                       show=progress.show)  # fmt: skip
    for event in with_clips(made, events):
        if isinstance(event, BatchFinished):
            finished = event
        elif not isinstance(event, BatchStarted):
            count += 1
            if isinstance(event, ItemFailed):
                progress.clear()
                _err(failure_line(event.job.source, event.reason))
            elif isinstance(event, ItemDone):
                log.info("%s -> %s (%.2f s)", event.job.source, event.job.output, event.seconds)
                if event.guard is not None and event.guard.in_doubt:
                    log.info("%s: %s", event.job.source, event.guard.words())
                if event.doubts:
                    log.info("%s", doubt_line(event.job.source, event.doubts, config.model))
                if event.enlarged is not None:
                    progress.clear()
                    _err(f"bgremover: note: {event.job.source}: {event.enlarged.words()}")
            elif (line := skip_line(event.job.source, event.reason)) is not None:
                progress.clear()  # kept, or another run's: say which and why
                _err(line)
            progress.show(progress_line(count, total, start, event.job.source))
    progress.clear()
    assert finished is not None
    return report_summary(
        done=finished.done,
        redone=finished.redone,
        skipped=finished.skipped,
        failed=finished.failed + len(plan.problems),
        seconds=finished.seconds,
        where=written_place([*plan.jobs, *clips], Path(args.output)),  # only one that exists
        stopped=finished.stopped,
        guarded=finished.guarded,
        doubtful=finished.doubtful,
        doubts_named=log.isEnabledFor(logging.INFO),  # each doubt_line was logged
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
