"""Path confinement: every path a dataset's own files name stays inside the dataset.

Manifests, transactions, tag files and index entries name other files by *relative* paths
(``data/<name>``, ``_transactions/<name>``, an external row-id file...).  A hostile or corrupt
manifest could name ``../../other/data/x.lance``, ``/etc/passwd`` or ``s3://other-bucket/x``;
following such a path would read (or, for cleanup, delete) objects outside the dataset root, on a
shared bucket another tenant's.  The reference never follows them either: it percent-encodes
the name into one path segment under ``data/`` and then fails to find it.  lancejit refuses them
up front with :class:`~lancejit.core.errors.CorruptFileError` naming the field and the path.

Only roots the manifest declares itself (its ``base_paths``, for shallow clones and multi-base
datasets) may lie elsewhere; the file paths under them are confined the same way.
"""

from __future__ import annotations

import re

from lancejit.core.errors import CorruptFileError

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def unsafe_reason(path: object) -> str | None:
    """Why ``path`` is not a safe relative path (None when it is safe).

    Safe: a non-empty ``str`` of ``/``-separated segments, none empty, ``.`` or ``..``; no
    leading ``/`` or ``~``, no backslash, no NUL or other control characters, no URI scheme
    (``s3:``, ``file:``, ``C:``...)."""
    if not isinstance(path, str):
        return f"is a {type(path).__name__}, not a string"
    if not path:
        return "is empty"
    if path.startswith("/"):
        return "is absolute"
    if path.startswith("~"):
        return "starts with '~'"
    if "\\" in path:
        return "contains a backslash"
    if _CONTROL.search(path):
        return "contains a control character"
    if _SCHEME.match(path):
        return "is a URI or drive path, not a relative path"
    for seg in path.split("/"):
        if seg in ("", ".", ".."):
            return f"has a {seg!r} segment" if seg else "has an empty segment"
    return None


def check_relative(path: object, what: str, where: str | None = None) -> str:
    """``path`` unchanged if it is a safe relative path (see :func:`unsafe_reason`); else
    :class:`CorruptFileError` naming ``what`` (e.g. ``"data file path"``) and ``where`` (the
    manifest or file that holds it)."""
    reason = unsafe_reason(path)
    if reason is None and isinstance(path, str):  # (a safe path is a str)
        return path
    raise CorruptFileError(
        f"{what} {path!r} {reason}: paths from a dataset's files must stay inside the dataset",
        path=where,
    )


def confined_join(root: str, *parts: str, what: str, where: str | None = None) -> str:
    """``root/parts[0]/.../parts[-1]`` after checking every part with :func:`check_relative`
    (the result is a store path under ``root``; ``root`` itself is trusted)."""
    out = root.rstrip("/")
    for part in parts:
        check_relative(part, what, where)
        out = f"{out}/{part}" if out else part
    return out


__all__ = ["check_relative", "confined_join", "unsafe_reason"]
