"""Print the README's set-up line for Debian and Ubuntu: the system libraries the app
needs, in the one place users copy them from.

CI runs what this prints (``.ci/run``, the workflows), so the line users copy is the
line CI tests; the tests check that it installs what the app's start-up hint would ask
for. Standard library only: it runs before the virtual environment exists.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
#: The paragraph the line follows in the README's "Install and run".
HEADING = "**System libraries (Debian or Ubuntu).**"


def setup_line(readme: Path = README) -> str:
    """The shell code block after :data:`HEADING`, as written (continuation lines kept)."""
    text = readme.read_text(encoding="utf-8")
    if HEADING not in text:
        raise SystemExit(f"{readme.name}: no paragraph {HEADING!r}")
    block = re.search(r"```sh\n(.+?)\n```", text.split(HEADING, 1)[1], re.S)
    if block is None:
        raise SystemExit(f"{readme.name}: no sh block after {HEADING!r}")
    return block.group(1)


if __name__ == "__main__":
    sys.stdout.write(setup_line() + "\n")
