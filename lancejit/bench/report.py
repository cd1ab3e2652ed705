"""Output of the benchmarks: terminal tables, JSON files, PNG plots and progress bars.

matplotlib (plots) and tqdm (progress bars) come with the ``bench`` extra
(``pip install 'lancejit[bench]'``); they are imported only when used, and a missing one
raises :class:`~lancejit.core.errors.NotSupportedError` saying how to install it.

Sizes are bytes, times seconds.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence, overload

from lancejit.core.errors import InvalidInputError, NotSupportedError

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def require(module: str) -> Any:
    """Import ``module`` (``matplotlib``/``tqdm``) or raise a clear :class:`NotSupportedError`."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise NotSupportedError(
            f"this needs {module.split('.')[0]!r}, part of lancejit's 'bench' extra: "
            "pip install 'lancejit[bench]' (or pip install matplotlib tqdm)"
        ) from None


def parse_size(text: str | int) -> int:
    """Bytes from ``"4096"``, ``"4K"``, ``"64KiB"``, ``"8M"``, ``"1G"`` (binary units)."""
    if isinstance(text, int):
        return text
    s = str(text).strip().lower().replace(" ", "")
    num = s.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = s[len(num):]
    if unit not in _UNITS or not num:
        raise InvalidInputError(f"not a size: {text!r} (examples: 4096, 4K, 64KiB, 8M)")
    try:
        value = float(num)
    except ValueError:
        raise InvalidInputError(f"not a size: {text!r}") from None
    out = int(value * _UNITS[unit])
    if out <= 0:
        raise InvalidInputError(f"size must be positive: {text!r}")
    return out


@overload
def parse_list(text: str | Sequence[Any], item: Callable[[Any], Any] = ...) -> list[Any]: ...


@overload
def parse_list(text: None, item: Callable[[Any], Any] = ...) -> None: ...


@overload
def parse_list(text: str | Sequence[Any] | None, item: Callable[[Any], Any] = ...) -> list[Any] | None: ...


def parse_list(text: str | Sequence[Any] | None, item: Callable[[Any], Any] = int) -> list[Any] | None:
    """``"1,10,100"`` -> ``[1, 10, 100]`` (``item`` converts each part); None stays None."""
    if text is None:
        return None
    parts = text.split(",") if isinstance(text, str) else list(text)
    out = []
    for p in parts:
        if isinstance(p, str):
            p = p.strip()
            if not p:
                continue
        try:
            out.append(item(p))
        except (TypeError, ValueError):
            raise InvalidInputError(f"bad list item {p!r} in {text!r}") from None
    if not out:
        raise InvalidInputError(f"empty list: {text!r}")
    return out


def human_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def human_seconds(s: float | None) -> str:
    """Seconds as ``"850 us"``, ``"12.3 ms"``, ``"1.20 s"`` (``"-"`` for None/NaN)."""
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.0f} us"
    if s < 1.0:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def human_rate(bps: float | None) -> str:
    """Bytes per second as ``"123.4 MiB/s"``."""
    if bps is None or (isinstance(bps, float) and math.isnan(bps)):
        return "-"
    return f"{human_bytes(bps)}/s"


def ratio(a: float | None, b: float | None) -> str:
    """``a / b`` as ``"1.23x"`` (``"-"`` when undefined)."""
    if a is None or b is None or not b or (isinstance(a, float) and math.isnan(a)):
        return "-"
    return f"{a / b:.3g}x"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> str:
    """A plain-text table: right-aligned columns separated by two spaces."""
    cells = [[str(h) for h in headers]] + [["-" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [title] if title else []
    for n, r in enumerate(cells):
        lines.append("  ".join(c.rjust(w) for c, w in zip(r, widths)))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_json(obj: Any, path: str) -> None:
    """Write ``obj`` as indented JSON to ``path`` (``"-"``: stdout); parent directories are made."""
    text = json.dumps(obj, indent=2, default=_json_default, allow_nan=False) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _json_default(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def clean_json(obj: Any) -> Any:
    """``obj`` with NaN/inf floats replaced by None (strict JSON)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    return obj


@contextmanager
def progress(total: int, desc: str, enabled: bool = True, *, unit: str) -> Iterator[Any]:
    """A tqdm bar on stderr (``update(n)``) counting ``total`` things called ``unit`` (``req``
    for requests, ``op`` for timed operations); a no-op object when ``enabled`` is False."""
    if not enabled:
        yield _NoBar()
        return
    tqdm = require("tqdm").tqdm
    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass


def pyplot() -> Any:
    """matplotlib's pyplot on the non-interactive Agg backend."""
    matplotlib = require("matplotlib")
    matplotlib.use("Agg", force=True)
    return importlib.import_module("matplotlib.pyplot")


def save_figure(fig: Any, path: str) -> None:
    """Save ``fig`` as PNG at ``path`` (directories made) and close it."""
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=110)
    pyplot().close(fig)


__all__ = [
    "clean_json",
    "format_table",
    "human_bytes",
    "human_rate",
    "human_seconds",
    "parse_list",
    "parse_size",
    "progress",
    "pyplot",
    "ratio",
    "require",
    "save_figure",
    "write_json",
]
