"""The package's shape, checked from its source (`ast`, no import): every import within the
floors docs/architecture.md allows, no import cycle between its modules (an import inside a
function closes a circle as surely as one at the top), no private name imported from another module, and a function-level import of the
package's own modules only where it says why (a comment on the line or the one before)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dflash_postmortem"
ROOT = "dflash_postmortem"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@functools.cache
def modules() -> dict[str, tuple[Path, ast.Module]]:
    """Every module of the package, parsed: when a test first asks (each test worker collects
    this file, and parsing the package takes a second or two)."""
    return {_module_name(p): (p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str | None:
    """The absolute module an ImportFrom names (None for third-party modules)."""
    if node.level == 0:
        return node.module if node.module and node.module.split(".")[0] == ROOT else None
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, top_level_only: bool):
    """(line, imported module, names, function-level?) for every import of the package's own code."""
    path, tree = modules()[module]
    is_package = path.name == "__init__.py"
    out = []

    def visit(node, in_function: bool):
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.ImportFrom):
                target = _resolve(module, child, is_package)
                if target is not None:
                    names = [a.name for a in child.names]
                    # `from . import x` imports the submodule x
                    if child.module is None or target + "." + names[0] in modules():
                        for n in names:
                            sub = f"{target}.{n}"
                            out.append((child.lineno, sub if sub in modules() else target, [], in_function))
                    else:
                        out.append((child.lineno, target, names, in_function))
            elif isinstance(child, ast.Import):
                for a in child.names:
                    if a.name.split(".")[0] == ROOT:
                        out.append((child.lineno, a.name, [], in_function))
            if not (top_level_only and nested and not in_function):
                visit(child, nested)

    visit(tree, False)
    return out


def _owner(target: str) -> str | None:
    """The module a dotted name belongs to (a package's name is its __init__)."""
    while target and target not in modules():
        target = target.rpartition(".")[0]
    return target or None


def test_no_import_cycle_function_level_imports_included():
    graph = {m: {_owner(t) for _, t, _, _ in _imports(m, False)} - {None, m} for m in modules()}
    # A package importing its own submodules (to register them) is not a cycle with them.
    for m, deps in graph.items():
        deps -= {d for d in deps if d.startswith(m + ".") and modules()[m][0].name == "__init__.py"}
    cycles = []
    state: dict[str, int] = {}

    def walk(m, stack):
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                walk(d, stack + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            walk(m, [m])
    assert cycles == [], "\n".join(" -> ".join(c) for c in cycles)


def test_no_private_name_imported_across_modules():
    bad = []
    for m in modules():
        for line, target, names, _ in _imports(m, False):
            for n in names:
                if n.startswith("_") and not n.startswith("__") and _owner(target) != m:
                    bad.append(f"{modules()[m][0].relative_to(PACKAGE.parent)}:{line}: {n} from {target}")
    assert bad == [], "\n".join(bad)


def _explained(lines: list[str], line: int) -> bool:
    """A comment on the import's line, or on a line just above its block of imports."""
    if "#" in lines[line - 1] or (line >= 2 and "#" in lines[line - 2]):
        return True
    k = line - 2
    while k >= 0 and lines[k].strip().startswith(("from ", "import ")):
        if "#" in lines[k]:
            return True
        k -= 1
    return k >= 0 and lines[k].strip().startswith("#")


def test_function_level_imports_of_the_package_say_why():
    bad = []
    for m in modules():
        path = modules()[m][0]
        lines = path.read_text(encoding="utf-8").splitlines()
        for line, _target, _, in_function in _imports(m, False):
            if not in_function:
                continue
            if not _explained(lines, line):
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {lines[line - 1].strip()}")
    assert bad == [], "function-level imports without a reason:\n" + "\n".join(bad)


ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def _floors() -> tuple[dict[str, str], dict[str, set[str]]]:
    """The table "Who may import whom" of docs/architecture.md: the floor of each top-level name
    of the package (a module, or a folder written with its slash) and the floors each floor may
    import. The package's own `__init__` is the floor that names it."""
    text = ARCHITECTURE.read_text(encoding="utf-8").split("## Who may import whom", 1)[1]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("|") and not line.startswith("| ---")][1:]
    floor_of, allowed = {}, {}
    for floor, holds, may in rows:
        for name in holds.replace("`", "").split():
            floor_of[ROOT if name == f"{ROOT}/__init__.py" else name.rstrip("/")] = floor
        allowed[floor] = {f.strip() for f in may.split(",")} | {floor}
    return floor_of, allowed


def _floor(module: str, floor_of: dict[str, str]) -> str:
    top = module if module == ROOT else module.split(".")[1]
    assert top in floor_of, f"{module}: on no floor of docs/architecture.md's table"
    return floor_of[top]


def test_every_import_stays_within_the_floors_the_architecture_allows():
    floor_of, allowed = _floors()
    assert len(allowed) >= 10 and {"contracts", "loaders", "model", "detect", "present", "report"} <= set(allowed)
    bad = []
    for m in modules():
        here = _floor(m, floor_of)
        for line, target, _, _ in _imports(m, False):
            owner = _owner(target)
            if owner is None or owner == m:
                continue
            there = _floor(owner, floor_of)
            if there not in allowed[here]:
                bad.append(f"{modules()[m][0].relative_to(PACKAGE.parent)}:{line}: {here} imports {there} ({owner})")
    assert bad == [], "imports the table in docs/architecture.md does not allow:\n" + "\n".join(bad)
