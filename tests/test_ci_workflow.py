"""The CI workflow runs the README's test command, so the two cannot drift apart."""

from __future__ import annotations

import re

from conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "tests.yml"


def _readme_command() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text.split("Run the whole test suite", 1)[1]
    match = re.search(r"```sh\n(.+?)\n```", after, re.S)
    assert match, "README: no command after 'Run the whole test suite'"
    return match.group(1).strip()


def test_the_workflow_runs_the_readme_test_command() -> None:
    command = _readme_command()
    windows = command.replace("python3 -m venv", "python -m venv").replace(
        ".venv/bin/", ".venv\\Scripts\\"
    )
    text = WORKFLOW.read_text(encoding="utf-8")
    try:
        import yaml
    except ImportError:  # PyYAML is not a dependency: check the text instead
        runs = re.findall(r"^\s+run: (.+)$", text, re.M)
        assert "macos-14" in text and "windows-2022" in text
    else:
        job = yaml.safe_load(text)["jobs"]["tests"]
        assert {"macos-14", "windows-2022"} <= set(job["strategy"]["matrix"]["os"])
        runs = [step.get("run", "") for step in job["steps"]]
    assert command in runs, runs
    assert windows in runs, runs
    assert "QT_QPA_PLATFORM: offscreen" in text
