"""The reference's public Python API, name by name, against lancejit's: what
``docs/COMPAT.md`` lists and ``tests/compat/test_api_table.py`` checks.

``python tests/compat/api_names.py docs/COMPAT.md`` rewrites the table: rows keep their status
and notes, names new in the reference are added (marked "same" when lancejit has the name with
every parameter, else "not supported" with a note to write), names gone are dropped.

:func:`reference_names` walks the reference's public names (``lance`` must be importable: it is
a test-only dependency, so this module imports it only inside functions); :func:`lancejit_object`
finds the lancejit object a name maps to (None when there is none); :func:`signature_gap` lists
the reference's parameters lancejit's callable does not take.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Iterator

#: Reference classes whose members are listed: (reference module, class, lancejit module, class).
CLASSES = [
    ("lance.dataset", "LanceDataset", "lancejit.dataset", "LanceDataset"),
    ("lance.dataset", "LanceScanner", "lancejit.dataset", "LanceScanner"),
    ("lance.dataset", "MergeInsertBuilder", "lancejit.dataset", "MergeInsertBuilder"),
    ("lance.dataset", "DatasetOptimizer", "lancejit.dataset", "DatasetOptimizer"),
    ("lance.dataset", "Tags", "lancejit.dataset", "Tags"),
    ("lance.dataset", "LanceStats", "lancejit.dataset", "LanceStats"),
    ("lance.dataset", "LanceOperation", "lancejit.dataset", "LanceOperation"),
    ("lance.dataset", "Transaction", "lancejit.dataset", "Transaction"),
    ("lance.fragment", "LanceFragment", "lancejit.fragment", "LanceFragment"),
    ("lance.fragment", "FragmentMetadata", "lancejit.fragment", "FragmentMetadata"),
    ("lance.fragment", "DataFile", "lancejit.fragment", "DataFile"),
    ("lance.file", "LanceFileReader", "lancejit", "LanceFileReader"),
    ("lance.file", "LanceFileWriter", "lancejit", "LanceFileWriter"),
    ("lance.file", "ReaderResults", "lancejit.file.reader", "ReaderResults"),
]

#: Module-level functions listed besides ``lance.__all__``.
FUNCTIONS = [
    ("lance.fragment", "write_fragments", "lancejit.fragment", "write_fragments"),
]

_OBJECT_NAMES = set(dir(object))

#: Stands for a member lancejit has whose value is None (a dataclass field defaulting to None).
MISSING = object()


def _members(cls: type) -> list[str]:
    names = []
    for name in dir(cls):
        if name.startswith("_") or name in _OBJECT_NAMES:
            continue
        names.append(name)
    return sorted(names)


def reference_names() -> Iterator[tuple[str, Any]]:
    """``(dotted name, reference object)`` for every public name listed (top-level names first)."""
    lance = importlib.import_module("lance")
    for name in sorted(set(lance.__all__) | {"dataset"}):
        yield f"lance.{name}", getattr(lance, name, None)
    for mod, fn, _, _ in FUNCTIONS:
        yield f"{mod}.{fn}", getattr(importlib.import_module(mod), fn)
    for mod, cls_name, _, _ in CLASSES:
        cls = getattr(importlib.import_module(mod), cls_name)
        for member in _members(cls):
            yield f"{mod}.{cls_name}.{member}", inspect.getattr_static(cls, member, None)


def lancejit_object(name: str) -> Any:
    """The lancejit object the reference's ``name`` maps to, or None."""
    parts = name.split(".")
    if len(parts) == 2:  # lance.X
        import lancejit

        return getattr(lancejit, parts[1], None)
    for mod, fn, lmod, lfn in FUNCTIONS:
        if name == f"{mod}.{fn}":
            return getattr(importlib.import_module(lmod), lfn, None)
    for mod, cls_name, lmod, lcls in CLASSES:
        prefix = f"{mod}.{cls_name}."
        if name.startswith(prefix):
            cls = getattr(importlib.import_module(lmod), lcls, None)
            member = name[len(prefix):]
            if cls is None or not hasattr(cls, member):
                return None
            value = inspect.getattr_static(cls, member)
            return MISSING if value is None else value
    return None


def _params(obj: Any) -> tuple[set[str], bool] | None:
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        return None
    if not callable(obj):
        return None
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    names = {p.name for p in sig.parameters.values()
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in ("self", "cls")}
    var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    return names, var_kw


def signature_gap(ref: Any, ours: Any) -> list[str]:
    """The reference's parameter names lancejit's callable does not accept (empty when both
    take the same names, when either is not inspectable, or when lancejit takes ``**kwargs``)."""
    a, b = _params(ref), _params(ours)
    if a is None or b is None:
        return []
    if b[1]:
        return []
    return sorted(a[0] - b[0])


STATUSES = ("same", "different", "not supported")
HEADER = "| reference name | status | notes |"


def read_table(path: str) -> dict[str, tuple[str, str]]:
    """``{name: (status, notes)}`` of the table in the markdown file at ``path``."""
    rows = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.startswith("| `lance"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[cells[0].strip("`")] = (cells[1], cells[2] if len(cells) > 2 else "")
    return rows


def summary(rows: dict[str, tuple[str, str]]) -> str:
    counts = {s: sum(1 for v in rows.values() if v[0] == s) for s in STATUSES}
    return (f"{len(rows)} public names of the reference: {counts['same']} same, {counts['different']} "
            f"different, {counts['not supported']} not supported.")


def render(rows: dict[str, tuple[str, str]], intro: str) -> str:
    lines = [intro.rstrip(), "", summary(rows), "", HEADER, "|---|---|---|"]
    for name, (status, notes) in rows.items():
        lines.append(f"| `{name}` | {status} | {notes} |")
    return "\n".join(lines) + "\n"


def regenerate(path: str) -> None:
    """Rewrite the table at ``path`` for the installed reference (see the module docstring)."""
    old = read_table(path)
    with open(path, encoding="utf-8") as fh:
        intro = fh.read().split(HEADER)[0]
    intro = "\n".join(line for line in intro.splitlines() if not line.endswith("not supported.")).rstrip()
    rows = {}
    for name, ref in reference_names():
        if name in old:
            rows[name] = old[name]
            continue
        ours = lancejit_object(name)
        if ours is not None and not signature_gap(ref, ours):
            rows[name] = ("same", "")
        else:
            rows[name] = ("not supported", "")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render(rows, intro))


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    import sys

    regenerate(sys.argv[1])


__all__ = ["CLASSES", "FUNCTIONS", "MISSING", "STATUSES", "lancejit_object", "read_table", "reference_names",
           "regenerate", "render", "signature_gap", "summary"]
