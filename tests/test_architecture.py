"""The architecture as the README draws it is the one lint-imports enforces.

The import-linter contracts in pyproject.toml are the definition; the README's package table
must list the same packages in the same layers, every package under ``bgremover/`` must have
an exhaustive contract of its own (so a new module is checked from its first commit), and a
new module that imports Qt outside ``gui/`` must fail ``lint-imports``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "bgremover"


def contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}


def layer_names(contract: dict) -> list[list[str]]:
    return [[name.strip() for name in row.split("|")] for row in contract["layers"]]


def _readme_table(header: str) -> list[list[str]]:
    """The cells of the README architecture table that starts with ``header``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Architecture\n", 1)[1].split("\n## ", 1)[0]
    table = section.split(header, 1)[1].split("\n\n", 1)[0]
    return [
        [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        for line in table.splitlines()[2:]
    ]


def _names(cell: str) -> list[list[str]]:
    """``a` › `b` \\| `c``` -> [["a"], ["b", "c"]]: layers, top first, of independent names."""
    return [
        [n.strip("/").removesuffix(".py") for n in re.findall(r"`([^`]+)`", layer)]
        for layer in cell.split("›")
    ]


def readme_packages() -> list[list[str]]:
    """The package table's rows: the packages (and top-level modules) each row names."""
    return [_names(cells[1])[0] for cells in _readme_table("| layer | package |")]


def readme_modules() -> dict[str, list[list[str]]]:
    """The module table: each package's modules as layers, top first."""
    return {
        cells[0].strip("`/"): _names(cells[1]) for cells in _readme_table("| package | modules")
    }


def test_the_readme_table_is_the_packages_contract():
    assert readme_packages() == layer_names(contracts()["packages"])


def test_the_readme_module_table_is_each_packages_contract():
    by_container = {
        c["containers"][0].removeprefix("bgremover."): layer_names(c)
        for c in contracts().values()
        if c["type"] == "layers" and c.get("containers") and c["containers"] != ["bgremover"]
    }
    by_container.pop("gui")  # the app's modules have a table of their own
    assert readme_modules() == by_container


def test_every_package_below_the_app_is_kept_free_of_qt():
    top = {name for row in layer_names(contracts()["packages"]) for name in row}
    sources = {m.removeprefix("bgremover.") for m in contracts()["qt"]["source_modules"]}
    assert sources == top - {"gui", "__main__"}


def test_every_package_has_an_exhaustive_contract_of_its_own():
    by_container = {
        c["containers"][0]: c
        for c in contracts().values()
        if c["type"] == "layers" and c.get("containers")
    }
    packages = sorted(
        p.name
        for p in PACKAGE.iterdir()
        if (p / "__init__.py").exists() and p.name != "__pycache__"
    )
    for name in packages:
        contract = by_container.get(f"bgremover.{name}")
        assert contract is not None, f"bgremover/{name}/ has no layers contract in pyproject.toml"
        assert contract.get("exhaustive") is True, (
            f"the bgremover.{name} contract is not exhaustive"
        )


def _lint_imports() -> str | None:
    tool = Path(sys.executable).with_name("lint-imports")
    if tool.exists():
        return str(tool)
    if os.environ.get("BGREMOVER_REQUIRE_CI_TOOLS"):
        pytest.fail("lint-imports is not installed (pip install -e '.[check]')")
    pytest.skip("lint-imports is not installed (pip install -e '.[check]')")


@pytest.fixture
def checkout(tmp_path):
    """A copy of the package and its contracts, to add a module to."""
    shutil.copytree(PACKAGE, tmp_path / "bgremover", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def lint(checkout: Path) -> subprocess.CompletedProcess:
    tool = _lint_imports()
    # Wide, so that no contract's name is wrapped across lines.
    env = {**os.environ, "PYTHONPATH": str(checkout), "COLUMNS": "1000"}
    return subprocess.run(
        [tool, "--no-cache"], cwd=checkout, env=env, capture_output=True, text=True
    )


def test_the_copy_passes_as_the_tree_does(checkout):
    result = lint(checkout)
    assert result.returncode == 0, result.stdout + result.stderr


def broken_contracts(output: str) -> dict[str, str]:
    """The contracts lint-imports reports broken, by name: for each, the details saying why
    (the import chains that break it, the modules it does not list)."""
    if "\nBroken contracts\n" not in output:
        return {}
    details = output.split("\nBroken contracts\n", 1)[1].split("\n", 1)[1]
    parts = re.split(r"^(.+)\n-+$\n", details, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def contract_names() -> dict[str, str]:
    return {key: c["name"] for key, c in contracts().items()}


@pytest.mark.parametrize(
    ("where", "layers"),
    [
        ("newthing.py", "packages"),
        ("export/newthing.py", "export"),
        ("engine/newthing.py", "engine"),
    ],
)
def test_a_new_module_that_imports_qt_fails(checkout, where, layers):
    """A new module is refused until it has its place (its package's contract is
    exhaustive); inside a package kept free of Qt, its Qt import breaks the Qt contract too,
    the import named. A new top-level module is named by the packages contract alone: once
    placed there, it is among the Qt contract's sources (the test above)."""
    (checkout / "bgremover" / where).write_text("import PySide6\n", encoding="utf-8")
    result = lint(checkout)
    assert result.returncode != 0
    module = "bgremover." + where.removesuffix(".py").replace("/", ".")
    names = contract_names()
    broken = broken_contracts(result.stdout)
    in_package = "/" in where
    assert set(broken) == {names[layers]} | ({names["qt"]} if in_package else set()), result.stdout
    unlisted = broken[names[layers]]
    assert "The following modules are not listed as layers:" in unlisted
    assert f"\n- {module}\n" in unlisted, unlisted
    if in_package:
        qt = broken[names["qt"]]
        assert f"{module.rsplit('.', 1)[0]} is not allowed to import PySide6:" in qt, qt
        assert f"-   {module} -> PySide6 (l.1)" in qt, qt


def test_a_qt_import_in_a_placed_module_breaks_the_qt_contract_alone(checkout):
    """A module that has its place and starts importing Qt breaks the Qt contract and no
    other; the output names the import, to the line, and the chains by which the packages
    above reach it."""
    path = checkout / "bgremover" / "mask" / "metrics.py"
    text = path.read_text(encoding="utf-8")
    line = text.count("\n") + 1
    path.write_text(text + "import PySide6\n", encoding="utf-8")
    result = lint(checkout)
    assert result.returncode != 0
    names = contract_names()
    broken = broken_contracts(result.stdout)
    assert set(broken) == {names["qt"]}, result.stdout
    qt = broken[names["qt"]]
    assert "bgremover.mask is not allowed to import PySide6:" in qt, qt
    assert f"-   bgremover.mask.metrics -> PySide6 (l.{line})" in qt, qt
    indirect = r"-> bgremover\.mask\.metrics \([^)]*\)\n\s+bgremover\.mask\.metrics -> PySide6"
    assert re.search(indirect, qt), qt


#: A module longer than this says in its docstring why it is one module.
LONG_MODULE = 600


def test_a_long_module_says_why_it_is_one():
    import ast

    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= LONG_MODULE:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if "One module because" not in doc:
            unexplained.append(f"{path.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    assert not unexplained, (
        f"over {LONG_MODULE} lines without a 'One module because ...' sentence in the "
        f"docstring: {', '.join(unexplained)}"
    )
