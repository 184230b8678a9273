"""The package's layout: one place per concern, and no import cycles between its modules."""

from __future__ import annotations

import ast

from conftest import ROOT

PACKAGE = ROOT / "rules_compact"


def _module(path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path) -> set[str]:
    """Modules of the package that ``path`` imports when it is imported (not inside functions,
    not under ``if TYPE_CHECKING``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module(path)
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    found = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for stmt in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ():
            if isinstance(stmt, ast.ImportFrom):
                if stmt.level:
                    base = package.split(".")[:len(package.split(".")) - stmt.level + 1]
                    target = ".".join(base + ([stmt.module] if stmt.module else []))
                else:
                    target = stmt.module or ""
                if target.startswith("rules_compact"):
                    found.add(target)
                    found.update(f"{target}.{alias.name}" for alias in stmt.names)
            elif isinstance(stmt, ast.Import):
                found.update(a.name for a in stmt.names if a.name.startswith("rules_compact"))
    return found


def test_no_import_cycles():
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}

    def ancestor(package: str, module: str) -> bool:  # imported before the module anyway
        return module.startswith(package + ".")

    graph = {m: {t for t in _imports(p) if t in modules and t != m and not ancestor(t, m)}
             for m, p in modules.items()}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(t):] + [t]))
            if t not in state:
                visit(t)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
