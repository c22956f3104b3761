"""What a benchmark run costs: ``--limit N``, ``--quick`` and the estimate of its time.

Every script here takes ``--limit N`` (only the first N of the items it loops over) and
``--quick`` (a small run, about a minute or two on 2 cores: the script's options set to
smaller defaults, which options given on the command line still override), and prints to
stderr, before its main loop or right after the loop's first item, how long the run takes:

    estimate: 40 photos × ~9 s ≈ 6 min (--limit N or --quick for less)

The figure is measured in the run itself (the first item's time, or a probe's, times the
count of items), never assumed. The scripts run as ``python tests/benchmarks/NAME.py``, so
this folder is ``sys.path[0]`` and ``import budget`` finds this module.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

HINT = "(--limit N or --quick for less)"


def _option(dest: str, value: Any) -> str:
    flag = "--" + dest.replace("_", "-")
    if isinstance(value, bool):
        return flag if value else f"--no-{flag[2:]}"
    if isinstance(value, (list, tuple)):
        return f"{flag} {' '.join(map(str, value))}"
    return f"{flag} {value}"


def add_arguments(
    parser: argparse.ArgumentParser,
    items: str,
    quick: dict[str, Any],
    *,
    aliases: Sequence[str] = (),
    note: str = "",
) -> None:
    """Adds ``--limit N`` (only the first N ``items``; 0: all; ``aliases`` are other names
    for it) and ``--quick`` (``quick``'s options, by destination, as the defaults)."""
    parser.add_argument(
        "--limit",
        *aliases,
        dest="limit",
        type=int,
        default=0,
        metavar="N",
        help=f"only the first N {items} (0: all)",
    )
    shown = " ".join(_option(dest, value) for dest, value in quick.items())
    parser.add_argument(
        "--quick",
        action="store_const",
        const=quick,
        default=None,
        help=f"a small run (a minute or two on 2 cores): {shown}{note}",
    )


def parse_args(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None = None
) -> argparse.Namespace:
    """The parsed options; with ``--quick``, its values are the defaults."""
    args = parser.parse_args(argv)
    if args.quick:
        parser.set_defaults(**args.quick)
        args = parser.parse_args(argv)
    return args


def limited(items: Iterable[T], limit: int) -> list[T]:
    """The first ``limit`` items (all of them for 0)."""
    return list(itertools.islice(items, limit) if limit > 0 else items)


def first_photos(folders: Sequence[Path], limit: int, work: Path) -> list[Path]:
    """``folders`` themselves, or for a limit, folders of links in ``work`` to the first
    ``limit`` photos of each (as a command run on the folders reads them, in the same
    tree and under the same names), for a benchmark that gives a command whole folders."""
    if limit <= 0:
        return list(folders)
    from bgremover.files.imaging import walk_images

    made = []
    for i, folder in enumerate(folders):
        copy = work / f"limit-{i}" / folder.resolve().name
        for photo in walk_images(folder)[:limit]:
            link = copy / photo.relative_to(folder)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(photo.resolve())
        made.append(copy)
    return made


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.2g} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.2g} min"
    return f"{seconds / 3600:.2g} h"


def say(text: str) -> None:
    print(f"estimate: {text} {HINT}", file=sys.stderr, flush=True)


def announce(count: int, unit: str, each: float, then: str = "") -> None:
    """Prints ``count`` ``unit`` × ``each`` seconds (measured) ≈ their total."""
    say(f"{count} {unit} × ~{duration(each)} ≈ {duration(count * each)}{then}")


class Estimate:
    """Times the first ``first`` of ``count`` items from its creation (or :meth:`restart`)
    and then prints the estimate of all of them; :meth:`tick` after each item."""

    def __init__(self, count: int, unit: str, *, first: int = 1, then: str = "") -> None:
        self.count, self.unit, self.first, self.then = count, unit, max(1, first), then
        self.done = 0
        self.restart()

    def restart(self) -> None:
        self.start = time.perf_counter()

    def tick(self) -> None:
        self.done += 1
        if self.done == min(self.first, self.count):
            each = (time.perf_counter() - self.start) / self.done
            announce(self.count, self.unit, each, self.then)


def each(items: Sequence[T], unit: str, then: str = "") -> Iterator[T]:
    """The items; the estimate of the loop is printed after the first one (timed from when
    the loop asks for it to when it asks for the next)."""
    estimate = Estimate(len(items), unit, then=then)
    for item in items:
        yield item
        estimate.tick()
