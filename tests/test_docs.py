"""The design notes: every decision record is listed in docs/README.md, and every record
a docstring links to exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DECISIONS = ROOT / "docs" / "decisions"


def test_every_decision_record_is_listed_and_every_link_holds() -> None:
    records = sorted(DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))
    numbers = [r.name[:4] for r in records]
    assert numbers == [f"{i:04d}" for i in range(1, len(records) + 1)]  # no gap, no twin
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    for record in records:
        assert f"(decisions/{record.name})" in index, record.name
        text = record.read_text(encoding="utf-8")
        assert text.startswith(f"# {record.name[:4]}. "), record.name
        for section in ("## Context", "## Decision", "## Measurements", "## Consequences"):
            assert section in text, (record.name, section)
    linked: set[str] = set()
    for module in (ROOT / "bgremover").rglob("*.py"):
        for first, last in re.findall(
            r"docs/decisions/(\d{4})(?: to (\d{4}))?", module.read_text(encoding="utf-8")
        ):
            for n in range(int(first), int(last or first) + 1):
                assert f"{n:04d}" in numbers, (module.name, n)
                linked.add(f"{n:04d}")
    assert linked == set(numbers)  # each record is reached from the code it explains
