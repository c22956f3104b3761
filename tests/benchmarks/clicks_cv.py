"""2-fold cross-validation of the constants of :mod:`bgremover.touchup.regions` (clicks).

    python tests/benchmarks/clicks_cv.py IMAGES_DIR GT_DIR --param NAME V1,V2,...
        [--param NAME2 W1,W2,...] [--tool click|box] [--refine/--no-refine]
        [--model NAME] [--max-clicks 20] [--images N]
        [--limit N] [--quick]

The rule of this project is never to tune on what is scored: a constant chosen on
a folder must be scored on another folder or by cross-validation. This runs
``tests/benchmarks/clicks.py`` once per value (every combination when two or more
``--param`` are given), in-process, with ``bgremover.touchup.regions.NAME = value`` set
before the run, and reads its per-image rows (NoC@90 and NoC@95) from its printed
output. The photos (sorted by name, as clicks.py sorts them) are split into two
fixed halves, A = even indices and B = odd indices. On each half the value with the
lowest mean NoC@95 is chosen (ties: lowest mean NoC@90, then the smaller value) and
every photo of the other half is scored with it. Printed: the full output of each
run, a per-image table (per value NoC@90 / NoC@95), the value each fold chose, and
the cross-validated ``MEAN NoC@90 x NoC@95 y`` over all photos, each photo scored
with the value chosen on the half it is not in.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import budget
import clicks  # tests/benchmarks/clicks.py, found through sys.path

from bgremover.touchup import regions

ROW = re.compile(r"^(?P<stem>.+?)\s+\d+x\d+\s+(?P<rest>.+)$")


class _Tee(io.TextIOBase):
    """Writes to the real stdout (progress) and keeps a copy to parse."""

    def __init__(self, out: io.TextIOBase) -> None:
        self.out = out
        self.copy = io.StringIO()

    def write(self, text: str) -> int:
        self.out.write(text)
        self.copy.write(text)
        return len(text)

    def flush(self) -> None:
        self.out.flush()


def parse_values(name: str, text: str) -> list[int | float | str]:
    """The values of ``--param NAME V1,V2``, of the type of the constant as it is."""
    if not hasattr(regions, name):
        raise SystemExit(f"bgremover.touchup.regions has no constant {name}")
    current = getattr(regions, name)
    values = [v.strip() for v in text.split(",") if v.strip()]
    if isinstance(current, bool):
        return [v.lower() in ("1", "true", "yes") for v in values]
    kind = type(current) if isinstance(current, (int, str)) else float
    return [kind(v) for v in values]


def shown(value: int | float | str) -> str:
    return str(value) if isinstance(value, (str, bool)) else f"{value:g}"


def parse_rows(text: str, stems: list[str]) -> dict[str, tuple[int, int]]:
    """Per image (NoC@90, NoC@95) from clicks.py's printed rows."""
    found: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        match = ROW.match(line)
        if not match or match["stem"] not in stems:
            continue
        # IoU@0, [IoU after the box], @85, @90, @95, final, collateral (or -), the clicks
        # (+add -remove, none when none): the counts are the only whole numbers.
        counts = [int(p) for p in match["rest"].split() if p.isdigit()]
        found[match["stem"]] = (counts[1], counts[2])
    missing = [s for s in stems if s not in found]
    if missing:
        raise RuntimeError(f"no row for {missing} in the benchmark's output")
    return found


def run_once(argv: list[str], setting: dict[str, int | float], stems: list[str]):
    """One clicks.py run with the constants of ``setting``; per image (NoC@90, NoC@95)."""
    saved = {name: getattr(regions, name) for name in setting}
    label = " ".join(f"{k}={v}" for k, v in setting.items())
    print(f"\n=== {label} ===", flush=True)
    tee = _Tee(sys.stdout)
    try:
        for name, value in setting.items():
            setattr(regions, name, value)
        with contextlib.redirect_stdout(tee):
            code = clicks.main(argv)
    finally:
        for name, value in saved.items():
            setattr(regions, name, value)
    if code:
        raise RuntimeError(f"clicks.py exited with {code} for {label}")
    return parse_rows(tee.copy.getvalue(), stems)


def mean_of(results, stems: list[str], k: int) -> float:
    return statistics.fmean(results[s][k] for s in stems)


def choose(table, keys, stems: list[str]):
    """Lowest mean NoC@95 on ``stems``, then lowest mean NoC@90, then the smaller value."""
    return min(keys, key=lambda v: (mean_of(table[v], stems, 1), mean_of(table[v], stems, 0), v))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("images", type=Path)
    ap.add_argument("truths", type=Path)
    ap.add_argument(
        "--param",
        nargs=2,
        action="append",
        required=True,
        metavar=("NAME", "VALUES"),
        help="a constant of bgremover.touchup.regions and comma-separated values (repeat: a grid)",
    )
    ap.add_argument("--max-clicks", type=int, default=20)
    ap.add_argument("--tool", choices=("click", "box"), default="click")
    ap.add_argument("--refine", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--model", default="u2netp", help="the model whose mask the clicks start from")
    budget.add_arguments(ap, "photos", {"limit": 2, "max_clicks": 8}, aliases=("--images",))
    args = budget.parse_args(ap, argv)

    names = [name for name, _ in args.param]
    if len(set(names)) != len(names):
        raise SystemExit("each --param NAME once")
    grids = [parse_values(name, values) for name, values in args.param]
    keys = list(itertools.product(*grids))

    stems = [src.stem for src, _ in clicks.load_pairs(args.images, args.truths, args.limit)]
    if len(stems) < 2:
        raise SystemExit("need at least 2 photos for 2-fold cross-validation")
    half_a, half_b = stems[0::2], stems[1::2]

    bench_argv = [str(args.images), str(args.truths), "--max-clicks", str(args.max_clicks)]
    bench_argv += ["--tool", args.tool, "--refine" if args.refine else "--no-refine"]
    bench_argv += ["--model", args.model]
    if args.limit:
        bench_argv += ["--images", str(args.limit)]
    fixed = tuple(getattr(regions, name) for name in names)
    print(f"clicks_cv: {' x '.join(names)}, {len(keys)} settings, {len(stems)} photos")
    print(f"constants as in bgremover/touchup/regions.py: {dict(zip(names, fixed, strict=True))}")

    estimate = budget.Estimate(len(keys), "settings (runs of clicks.py)")
    table = {}
    for key in keys:
        table[key] = run_once(bench_argv, dict(zip(names, key, strict=True)), stems)
        estimate.tick()

    def label(key) -> str:
        return "/".join(shown(v) for v in key)

    width = max(11, *(len(label(k)) + 2 for k in keys))
    print(f"\nper image NoC@90 / NoC@95 ({'/'.join(names)}; fold A = even, B = odd)")
    print(f"{'image':<14}{'half':>5}" + "".join(f"{label(k):>{width}}" for k in keys))
    for i, stem in enumerate(stems):
        cells = "".join(f"{f'{table[k][stem][0]}/{table[k][stem][1]}':>{width}}" for k in keys)
        print(f"{stem:<14}{'AB'[i % 2]:>5}{cells}")
    for title, part in (("mean A", half_a), ("mean B", half_b), ("mean all", stems)):
        cells = "".join(
            f"{f'{mean_of(table[k], part, 0):.2f}/{mean_of(table[k], part, 1):.2f}':>{width}}"
            for k in keys
        )
        print(f"{title:<19}{cells}")

    chosen_a = choose(table, keys, half_a)
    chosen_b = choose(table, keys, half_b)
    print()
    for fold, chosen, train, test in (
        ("A", chosen_a, half_a, half_b),
        ("B", chosen_b, half_b, half_a),
    ):
        train_means = (
            f"{mean_of(table[chosen], train, 0):.2f} / {mean_of(table[chosen], train, 1):.2f}"
        )
        test_means = (
            f"{mean_of(table[chosen], test, 0):.2f} / {mean_of(table[chosen], test, 1):.2f}"
        )
        setting = ", ".join(f"{n}={shown(v)}" for n, v in zip(names, chosen, strict=True))
        print(
            f"chosen on half {fold} ({len(train)} photos): {setting}  "
            f"(NoC@90 / NoC@95 on it {train_means}; on the other half {test_means})"
        )
    held_out = {s: table[chosen_b][s] for s in half_a} | {s: table[chosen_a][s] for s in half_b}
    cv90 = statistics.fmean(v[0] for v in held_out.values())
    cv95 = statistics.fmean(v[1] for v in held_out.values())
    print(f"CV MEAN NoC@90 {cv90:.2f} NoC@95 {cv95:.2f} ({len(stems)} photos, each held out)")
    if fixed in table:
        print(
            f"fixed choice {label(fixed)} on all photos: "
            f"NoC@90 {mean_of(table[fixed], stems, 0):.2f} "
            f"NoC@95 {mean_of(table[fixed], stems, 1):.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
