"""The package's import graph: no cycle anywhere (imports inside functions included), and the
layers import only the layers before them."""

from __future__ import annotations

import ast
import pathlib

import lancejit

PKG = pathlib.Path(lancejit.__file__).parent

#: Layer of each top-level part of the package (a part imports only parts of its own or a lower
#: layer). ``pb`` is generated code.
LAYERS = {
    "core": 0, "pb": 0,
    "io": 1, "encoding": 1,
    "file": 2,
    "table": 3,
    "api": 4, "spark": 4, "bench": 4, "cli": 5,
}
#: Within ``table``: its parts in order; each imports only its own part or earlier ones.
TABLE_ORDER = ["meta", "filter", "indices", "read", "commit", "write", "vector", "dataset"]


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, pathlib.Path]:
    return {module_name(p): p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts}


def imports_of(name: str, path: pathlib.Path, known: set[str]) -> set[str]:
    """Every lancejit module ``name`` imports, at any depth of its code (functions included;
    ``if TYPE_CHECKING:`` blocks too)."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        # the longest known module prefix of target
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("lancejit"):
                    add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("lancejit"):
                continue
            for a in node.names:
                full = f"{mod}.{a.name}"
                add(full if full in known else mod)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {n: imports_of(n, p, known) for n, p in mods.items()}


def _part(mod: str) -> str:
    parts = mod.split(".")
    if len(parts) == 1:
        return "api"
    if parts[1] in ("__init__", "warm", "dataset", "fragment"):
        return "api"
    if parts[1] in ("cli", "demo", "demo_dataset"):
        return "cli"
    return parts[1]


def test_no_import_cycle() -> None:
    g = graph()
    # package __init__ modules that only re-export are edges like any other
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            strong(v)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_layers() -> None:
    g = graph()
    bad = []
    for mod, targets in g.items():
        src = _part(mod)
        for t in targets:
            dst = _part(t)
            if dst == "api" and t == "lancejit":
                continue
            if LAYERS[dst] > LAYERS[src]:
                bad.append(f"{mod} -> {t}")
    assert not bad, "imports from a later layer: " + ", ".join(sorted(bad))


def _table_part(mod: str) -> str | None:
    parts = mod.split(".")
    if len(parts) < 3 or parts[1] != "table":
        return None
    return parts[2] if parts[2] in TABLE_ORDER else "dataset"


def test_table_parts_in_order() -> None:
    g = graph()
    bad = []
    for mod, targets in g.items():
        src = _table_part(mod)
        if src is None or mod == "lancejit.table":
            continue
        for t in targets:
            dst = _table_part(t)
            if dst is None or t == "lancejit.table":
                continue
            if TABLE_ORDER.index(dst) > TABLE_ORDER.index(src):
                bad.append(f"{mod} -> {t}")
    assert not bad, "table parts importing later parts: " + ", ".join(sorted(bad))
