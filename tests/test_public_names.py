"""One home for each name: a module imports a name from the module that defines it and
never passes it on (``from .options import parse_color as parse_color``); each
sub-package states its public names in ``__all__``, and they exist. Read from the
source (AST), so nothing is imported: Qt, FastAPI and ONNX Runtime need not load."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "bgremover"


def _sub_packages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE)


def _all_names(init: Path) -> list[str] | None:
    """The literal ``__all__`` of ``init``; None when it has none."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                assert node.value is not None
                return list(ast.literal_eval(node.value))
    return None


def _bound(init: Path) -> set[str]:
    """The names ``init`` binds at its top level, and those its ``__getattr__`` hands out
    lazily from the names it imports for type checkers (``if TYPE_CHECKING:``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(init.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def test_every_sub_package_states_its_public_names_and_they_exist() -> None:
    missing, unstated = [], []
    for package in _sub_packages():
        init = package / "__init__.py"
        names = _all_names(init)
        where = package.relative_to(ROOT).as_posix()
        if names is None:
            unstated.append(where)
            continue
        bound = _bound(init)
        for name in names:
            module = package / f"{name}.py"
            sub = package / name / "__init__.py"
            if name not in bound and not module.exists() and not sub.exists():
                missing.append(f"{where}: {name}")
    assert not unstated, f"sub-packages without __all__: {', '.join(unstated)}"
    assert not missing, f"names in __all__ that the sub-package lacks: {', '.join(missing)}"


def test_no_module_passes_on_a_name_it_imports() -> None:
    """``import X as X`` (the re-export idiom type checkers honour) gives a name a second
    home; importers import it from the module that defines it."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    if alias.asname == alias.name:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {alias.name}")
    assert not found, f"re-exports (import X as X): {', '.join(found)}"
