"""CI's own cost: runs one step of .ci/run and records its wall time, CPU time and the peak
resident memory of its largest process; ``report`` prints them all on one line at the end.

    python3 .ci/cost.py run NAME COMMAND...   # runs COMMAND, exits with its status
    python3 .ci/cost.py report                # "CI cost: tests 7:02 wall, ... | ruff 0:03 ..."

The records go to the file named by $CI_COST_FILE (one JSON object a line). CPU time and
peak memory are the children's (``getrusage(RUSAGE_CHILDREN)``): every process the step
ran and waited for, its subprocesses included; the peak is the largest single process's.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}:{secs:02d}"


def run(name: str, command: list[str]) -> int:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    status = subprocess.call(command)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # ru_maxrss is in KiB on Linux, bytes on macOS; a fresh process per step, so the
    # children's peak is this step's
    scale = 1 if sys.platform == "darwin" else 1024
    record = {
        "name": name,
        "status": status,
        "wall": round(wall, 1),
        "cpu": round(cpu, 1),
        "peak_bytes": after.ru_maxrss * scale,
    }
    path = os.environ.get("CI_COST_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
    return status


def report() -> int:
    path = os.environ.get("CI_COST_FILE")
    if not path or not os.path.exists(path):
        print("CI cost: nothing recorded")
        return 0
    with open(path, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    parts = []
    for r in records:
        failed = "" if r["status"] == 0 else f" FAILED({r['status']})"
        parts.append(
            f"{r['name']} {_clock(r['wall'])} wall, {_clock(r['cpu'])} CPU, "
            f"peak {r['peak_bytes'] / 2**30:.2f} GB{failed}"
        )
    total = sum(r["wall"] for r in records)
    print(f"CI cost: {_clock(total)} in all | " + " | ".join(parts))
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["run"] and len(argv) >= 3:
        return run(argv[1], argv[2:])
    if argv == ["report"]:
        return report()
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
