"""The CI workflows: the tests workflow runs the README's test command, so the two cannot
drift apart; the release and bundle workflows do what a release needs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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


# --- The release and bundle workflows -------------------------------------------------
#
# Checked against GitHub's workflow schema with check-jsonschema, whose copy of the
# schema is vendored in the package (no network), then for what the schema cannot
# know. check-jsonschema (and ruamel.yaml, which it brings) are in the check extras, not
# the dev ones: without them these tests are skipped, unless BGREMOVER_REQUIRE_CI_TOOLS=1
# (.ci/run sets it after installing the check extras), when they fail instead.

WORKFLOWS = ROOT / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yml"
BUNDLES = WORKFLOWS / "bundles.yml"
SIGNING_TOOLS = ("codesign", "notarytool", "stapler", "security import", "signtool", "spctl")


def _need(module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        if os.environ.get("BGREMOVER_REQUIRE_CI_TOOLS") == "1":
            pytest.fail(f"{module} is required (BGREMOVER_REQUIRE_CI_TOOLS=1)")
        pytest.skip(f"{module} is not installed (pip install check-jsonschema)")


def _load(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    try:
        import yaml
    except ImportError:
        _need("ruamel.yaml")
        from ruamel.yaml import YAML

        data = YAML(typ="safe", pure=True).load(text)
    else:
        data = yaml.safe_load(text)
    if True in data:  # YAML 1.1 (PyYAML) reads the key `on` as a boolean
        data["on"] = data.pop(True)
    return data


def _render(text: str, entry: dict[str, Any]) -> str:
    """``text`` with the matrix entry's values in place of ``${{ matrix.X }}``."""
    return re.sub(r"\$\{\{\s*matrix\.(\w+)\s*\}\}", lambda m: str(entry.get(m[1], "")), text)


def _steps(job: dict[str, Any], entry: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """The job's steps, with ``run``, ``if``, ``uses`` and ``shell`` rendered for ``entry``."""
    entry = entry or {}
    return [
        {k: _render(str(step.get(k, "")), entry) for k in ("name", "run", "if", "uses", "shell")}
        for step in job["steps"]
    ]


def _entries() -> dict[str, dict[str, Any]]:
    job = _load(BUNDLES)["jobs"]["bundle"]
    return {entry["artifact"]: entry for entry in job["strategy"]["matrix"]["include"]}


def test_the_workflows_match_githubs_workflow_schema() -> None:
    _need("check_jsonschema")
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert {RELEASE, BUNDLES} <= set(files)
    proc = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows"]
        + [str(f) for f in files],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_version_comes_from_one_place() -> None:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "bgremover.__version__"}
    data = project["tool"]["setuptools"]["package-data"]["bgremover"]
    for pattern in ("calibration/*.jpg", "gui/icon.png", "py.typed"):
        assert pattern in data


def test_the_bundle_matrix_covers_every_platform() -> None:
    entries = _entries()
    assert set(entries) == {
        "bgremover-linux-x86_64",
        "bgremover-windows-x64",
        "bgremover-windows-x64-directml",
        "bgremover-macos-arm64",
        "bgremover-macos-x86_64",
    }
    assert entries["bgremover-linux-x86_64"]["os"].startswith("ubuntu-")
    for name in ("bgremover-windows-x64", "bgremover-windows-x64-directml"):
        assert entries[name]["os"].startswith("windows-")
    assert "runtime" not in entries["bgremover-windows-x64"]
    arm = entries["bgremover-macos-arm64"]
    assert arm["os"] in ("macos-14", "macos-15", "macos-26") and arm["arch"] == "arm64"
    assert "pin" not in arm  # the current onnxruntime (CoreML ships in its wheel)
    job = _load(BUNDLES)["jobs"]["bundle"]
    for name, entry in entries.items():
        steps = _steps(job, entry)
        runs = "\n".join(s["run"] for s in steps)
        assert "python packaging/build.py" in runs, name
        assert "python packaging/smoke_test.py packaging/dist/bgremover" in runs, name
        uploads = [s for s in steps if s["uses"].startswith("actions/upload-artifact@")]
        assert len(uploads) == 1, name
        # The runner's architecture is checked, not assumed.
        assert any(f'== "{entry["arch"]}"' in s["run"] for s in steps), name


def test_every_bundle_ships_the_minimal_opencv() -> None:
    """Installed after the project's dependencies (which bring the PyPI OpenCV) and before
    the build, from a cache keyed by the script that makes it."""
    jobs = _load(BUNDLES)["jobs"]
    for job, entries in ((jobs["bundle"], list(_entries().values())),
                         (jobs["bundle-windows-cuda"], [{}])):  # fmt: skip
        for entry in entries:
            steps = _steps(job, entry)
            runs = [s["run"] for s in steps]
            install = next(i for i, r in enumerate(runs) if 'pip install ".[bundle]"' in r)
            minimal = runs.index("python packaging/opencv_minimal.py --install")
            build = next(i for i, r in enumerate(runs) if "python packaging/build.py" in r)
            assert install < minimal < build, entry
            nasm = steps[minimal - 1]
            assert nasm["uses"].startswith("ilammy/setup-nasm@"), entry
            # Run on every x86 runner; arm64 has no NASM code to assemble.
            assert nasm["if"] in ("", "matrix.arch != 'arm64'"), entry
            cache = steps[minimal - 2]
            assert cache["uses"].startswith("actions/cache@"), entry
            step = job["steps"][minimal - 2]
            assert step["with"]["path"] == "packaging/build/opencv/wheel"
            assert "hashFiles('packaging/opencv_minimal.py')" in step["with"]["key"]


def test_the_macos_intel_bundle_pins_the_last_x86_64_onnxruntime_on_an_intel_runner() -> None:
    entry = _entries()["bgremover-macos-x86_64"]
    # macos-13 was GitHub's Intel image; macos-15-intel is its successor.
    assert entry["os"] == "macos-13" or entry["os"].endswith("-intel"), entry["os"]
    assert entry["arch"] == "x86_64"
    job = _load(BUNDLES)["jobs"]["bundle"]
    installs = [s["run"] for s in _steps(job, entry) if s["name"] == "Install"]
    assert installs == ['python -m pip install ".[bundle]" onnxruntime==1.23.2'], installs
    # ...and the step after it checks that this is the onnxruntime installed.
    assert any("ort.__version__ == pin.split" in s["run"] for s in _steps(job, entry))


def _swap_step(job: dict[str, Any], entry: dict[str, Any], wheel: str) -> dict[str, str]:
    steps = _steps(job, entry)
    installs = [
        i
        for i, s in enumerate(steps)
        if re.search(rf"pip install\b.*(?<![\w-]){re.escape(wheel)}(?![\w-])", s["run"])
    ]
    assert len(installs) == 1, f"{wheel} should be installed by one step"
    step = steps[installs[0]]
    lines = step["run"].splitlines()
    at = next(i for i, line in enumerate(lines) if wheel in line and "pip install" in line)
    before = "\n".join(lines[:at])
    assert re.search(r"pip uninstall -y onnxruntime\s*$", before, re.M), step["run"]
    # bash stops at a failed command (GitHub runs it with -e); pwsh would go on.
    assert step["shell"] == "bash", step
    return step


def test_the_directml_bundle_uninstalls_onnxruntime_before_installing_directml() -> None:
    entry = _entries()["bgremover-windows-x64-directml"]
    assert entry["runtime"] == "onnxruntime-directml"
    job = _load(BUNDLES)["jobs"]["bundle"]
    step = _swap_step(job, entry, "onnxruntime-directml")
    assert step["if"] == "matrix.runtime != ''"
    # The CPU bundle does not get the swap; the DirectML one checks its provider.
    assert "runtime" not in _entries()["bgremover-windows-x64"]
    assert entry["provider"] == "DmlExecutionProvider"


def test_the_cuda_bundle_is_experimental_and_manual() -> None:
    job = _load(BUNDLES)["jobs"]["bundle-windows-cuda"]
    assert job["continue-on-error"] is True
    assert "workflow_dispatch" in job["if"] and "inputs.cuda" in job["if"]
    _swap_step(job, {}, "onnxruntime-gpu[cuda,cudnn]")
    assert _load(BUNDLES)["on"]["workflow_dispatch"]["inputs"]["cuda"]["type"] == "boolean"


def test_signing_runs_only_when_its_secrets_exist() -> None:
    workflow = _load(BUNDLES)
    for name, job in workflow["jobs"].items():
        env = job.get("env", {})
        for step in job["steps"]:
            run, cond = str(step.get("run", "")), str(step.get("if", ""))
            if not any(tool in run for tool in SIGNING_TOOLS):
                continue
            guard = "env.WINDOWS_CERT != ''" if "signtool" in run else "env.MACOS_CERT != ''"
            assert guard in cond, (name, step.get("name"))
            var = guard.split(".")[1].split()[0]
            assert env.get(var, "").startswith("${{ secrets."), (name, var)
    job = workflow["jobs"]["bundle"]
    runs = {s["name"]: s["run"] for s in _steps(job)}
    signing = next(run for step, run in runs.items() if step.startswith("Sign the app"))
    # Every nested Mach-O file, then the app, hardened runtime and secure timestamp.
    assert "codesign --force --timestamp --options runtime" in signing
    assert "Mach-O" in signing and "--deep --sign" not in signing
    assert 'sign "$app"' in signing
    notarize = next(run for step, run in runs.items() if step.startswith("Notarize"))
    assert "xcrun notarytool submit" in notarize and "--wait" in notarize
    assert "xcrun stapler staple" in notarize
    errors = next(run for step, run in runs.items() if step.startswith("Fail on notarisation"))
    assert "issues" in errors and "sys.exit" in errors
    windows = next(run for step, run in runs.items() if step.startswith("Sign the Windows"))
    assert re.search(r"signtool.* sign .*/tr https?://", windows.replace("`\n", ""), re.S)


def test_the_release_uses_trusted_publishing() -> None:
    lines = RELEASE.read_text(encoding="utf-8").splitlines()
    text = "\n".join(line.split("#", 1)[0] for line in lines)  # without comments
    workflow = _load(RELEASE)
    assert workflow["on"] == {"push": {"tags": ["v*"]}}
    assert "secrets." not in text and "password" not in text.lower()
    build, publish = workflow["jobs"]["build"], workflow["jobs"]["publish"]
    build_runs = [s["run"] for s in _steps(build)]
    assert build_runs.count("python -m build") == 1
    assert "python -m twine check --strict dist/*" in build_runs
    assert "python packaging/wheel_smoke.py --dist dist" in build_runs
    tag_check = next(r for r in build_runs if "__version__" in r)
    assert '"$TAG" != "v$version"' in tag_check and "exit 1" in tag_check
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    uses = [s["uses"] for s in _steps(publish)]
    assert "pypa/gh-action-pypi-publish@release/v1" in uses
    assert all("run" not in step for step in publish["steps"])  # publishes what build made
    for step in publish["steps"]:
        assert not set(step.get("with", {})) & {"password", "user", "username"}


def test_ci_runs_the_wheel_smoke_after_the_checks() -> None:
    text = (ROOT / ".ci" / "checks").read_text(encoding="utf-8")
    assert text.index("mypy") < text.index("packaging/wheel_smoke.py")
    assert "BGREMOVER_REQUIRE_CI_TOOLS=1" in text


def test_ci_installs_the_system_libraries_by_the_readmes_line() -> None:
    """.ci/run and every workflow that installs Debian packages run the README's set-up
    line as packaging/setup_line.py prints it, so the line users copy is the one tested
    (on Debian by .ci/run, on Ubuntu by the workflows); .ci/run adds only the tests'
    own tools."""
    run_readme_line = 'sh -ec "$(python3 packaging/setup_line.py)"'
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert run_readme_line in ci
    apt = [line.strip() for line in ci.splitlines() if "apt-get install" in line]
    assert apt == ["apt-get install -y -qq xvfb strace >/dev/null"]
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    using = [w.name for w in workflows if run_readme_line in w.read_text(encoding="utf-8")]
    assert using == ["bundles.yml", "release.yml", "tests.yml"]
    for workflow in workflows:
        assert "apt-get" not in workflow.read_text(encoding="utf-8"), workflow.name


def test_ci_prints_its_own_cost_whether_it_passes_or_fails(tmp_path: Path) -> None:
    """Each step of .ci/run, and of the checks it calls, goes through .ci/cost.py; its report
    is one line with each step's wall time, CPU time and peak memory, a failed step marked."""
    import subprocess
    import sys

    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    checks = (ROOT / ".ci" / "checks").read_text(encoding="utf-8")
    assert "trap 'python3 .ci/cost.py report" in text  # on success and on failure
    for step in ("install", "tests"):
        assert re.search(rf"^cost {step} ", text, re.M), step
    for step in ("lint", "contracts", "types", "wheel-smoke", "openvino"):
        assert re.search(rf"^check {step} ", checks, re.M), step
    # The checks record into .ci/run's file when it runs them, else print a line of their own.
    assert 'if [ -z "${CI_COST_FILE:-}" ]; then' in checks
    assert "cost() { python3 .ci/cost.py run" in checks
    env = {**os.environ, "CI_COST_FILE": str(tmp_path / "cost.jsonl")}
    cost = [sys.executable, str(ROOT / ".ci" / "cost.py")]
    grow = "b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096])"
    big_step = [*cost, "run", "big", sys.executable, "-c", grow]
    assert subprocess.run(big_step, env=env).returncode == 0
    failed = [*cost, "run", "bad", sys.executable, "-c", "raise SystemExit(3)"]
    assert subprocess.run(failed, env=env).returncode == 3
    line = subprocess.run(
        [*cost, "report"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert line.startswith("CI cost: ") and "\n" not in line, line
    big = re.search(r"big (\d+:\d\d) wall, (\d+:\d\d) CPU, peak (\d+\.\d\d) GB", line)
    assert big and float(big[3]) >= 0.29, line
    assert re.search(r"bad \d+:\d\d wall, .* FAILED\(3\)", line), line


CI_RUN = ROOT / ".ci" / "run"
CHECKS = ROOT / ".ci" / "checks"
#: The checks .ci/checks runs, each timed by .ci/cost.py under this name, in this order.
CHECK_NAMES = ["lint", "format", "contracts", "types", "ci-tests", "wheel-smoke", "openvino"]


def _code(path: Path) -> str:
    """A shell script or workflow without its comment lines."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("#"))


def test_ci_and_the_workflow_call_one_script_of_checks() -> None:
    """The checks are written once, in .ci/checks: .ci/run calls it after the tests, and so
    does the workflow's Linux job after the README's test command; neither runs a check
    of its own, so the two cannot drift apart."""
    checks = _code(CHECKS)
    assert os.access(CHECKS, os.X_OK), ".ci/checks is not executable"
    assert re.findall(r"^check (\S+) ", checks, re.M) == CHECK_NAMES
    run = _code(CI_RUN)
    calls = [line.strip() for line in run.splitlines() if ".ci/checks" in line]
    assert calls == ["if ! .ci/checks; then"], calls
    assert run.index("cost tests ") < run.index(".ci/checks")
    workflow = _code(WORKFLOW)
    runs = re.findall(r"^\s+run: (.+)$", workflow, re.M)
    assert runs.count(".ci/checks") == 1, runs
    assert runs.index(".ci/checks") > runs.index(_readme_command()), runs
    step = re.search(r"^(\s+)- name: .*\n\1  if: (.+)\n\1  run: \.ci/checks$", workflow, re.M)
    assert step and step[2] == "runner.os == 'Linux'", "the checks step runs on Linux"
    # What .ci/checks runs is nowhere else: not in .ci/run, not in the workflow.
    for tool in ("ruff", "lint-imports", "mypy", "wheel_smoke", "test_openvino.py"):
        assert tool in checks, tool
        assert tool not in run and tool not in workflow, tool
    for script in (CI_RUN, CHECKS):
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0, script.name
