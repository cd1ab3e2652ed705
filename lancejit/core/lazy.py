"""Names of a package loaded on first access (PEP 562), so importing the package or one of its
submodules does not import the modules those names live in.

Usage in a package's ``__init__``::

    __getattr__, __dir__ = lazy_exports(__name__, globals(), {"Name": "lancejit.pkg.module"})

A module path may be relative to the package (``".module"``).  The first access imports the
module and stores the value in the package's namespace (later accesses are plain lookups).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_exports(package: str, namespace: dict[str, Any],
                 exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose names ``exports`` (name -> module path)
    load on first access; an unknown name raises ``AttributeError`` as a module would."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        mod = importlib.import_module(module, package)
        try:
            value = getattr(mod, name)
        except AttributeError:  # a submodule exported by name (``lancejit.config``)
            value = importlib.import_module(f"{mod.__name__}.{name}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
