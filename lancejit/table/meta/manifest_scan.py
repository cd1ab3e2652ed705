"""The fragments of a manifest read as arrays straight from its protobuf bytes.

:func:`scan_manifest` runs the wire-format kernels of :mod:`lancejit.encoding.kernels.pbwire`
over a manifest message: one pass gives every fragment's id, row counts, deletion presence and
data-file count as NumPy arrays, the byte span of each fragment's message (decoded later, only
when that fragment is touched: :class:`RawFragments`) and the manifest's other fields, which
protobuf then decodes (a few fields, however many fragments there are).

The kernels run only in a process where lancejit has already loaded Numba (any take or scan
has): importing Numba costs tenths of a second, far more than decoding a manifest with
protobuf, so a fresh process opening a dataset keeps the protobuf path.  Either path gives the
same :class:`~.manifest.Manifest` (tests compare them on generated manifests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np
from google.protobuf.message import DecodeError

from lancejit.core.errors import CorruptFileError
from lancejit.encoding.kernels import jit as _jit
from lancejit.encoding.kernels import readonly
from lancejit.pb import table_pb2


@dataclass(frozen=True, slots=True)
class FragmentArrays:
    """Per-fragment values as stored in the manifest (uint64 as on the wire; no trust rules
    applied): ``ids``, ``physical_rows``, ``num_deleted`` (0 when absent), ``has_deletion``,
    ``num_files``."""

    ids: np.ndarray
    physical_rows: np.ndarray
    num_deleted: np.ndarray
    has_deletion: np.ndarray
    num_files: np.ndarray


class RawFragments(Sequence):
    """The ``DataFragment`` messages of a manifest, each decoded from its bytes
    ``body[starts[i]:ends[i]]`` when asked for (not kept: :class:`~.fragment_list.FragmentList`
    keeps the converted fragments)."""

    __slots__ = ("_body", "_starts", "_ends")

    def __init__(self, body: bytes | memoryview, starts: np.ndarray, ends: np.ndarray) -> None:
        self._body = body
        self._starts = starts
        self._ends = ends

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, i: Any) -> Any:
        start, end = int(self._starts[i]), int(self._ends[i])
        try:
            return table_pb2.DataFragment.FromString(self._body[start:end])
        except (DecodeError, ValueError) as exc:  # the kernel vouched for it: not expected
            raise CorruptFileError(f"fragment message does not decode: {exc}") from None

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))


@dataclass(frozen=True, slots=True)
class ScannedManifest:
    """A manifest message split by :func:`scan_manifest`: ``rest`` (the message without its
    fragments, to decode with protobuf), ``schema`` (the bytes of its schema fields, a key for
    caches of what is derived from the schema alone), ``fragments`` and their ``arrays``."""

    rest: bytes
    schema: bytes
    fragments: RawFragments
    arrays: FragmentArrays


def kernels_ready() -> bool:
    """True when lancejit has loaded Numba in this process and the wire-format kernels load
    without compiling (see :func:`lancejit.encoding.kernels.jit.ready`; loading a cached kernel
    is then cheap; see the module docstring)."""
    if getattr(_jit, "_NUMBA", None) is None:
        return False
    from lancejit.encoding.kernels import frag_index, pbwire

    return _jit.ready(pbwire.count_fragments) and _jit.ready(pbwire.scan_manifest) and _jit.ready(
        frag_index.index_arrays)


def scan_manifest(body: bytes | memoryview, force: bool = False) -> ScannedManifest | None:
    """Split the ``Manifest`` message ``body``, or None when the caller must decode it with
    protobuf: Numba is not loaded (unless ``force``), or the kernels do not vouch for the bytes
    (malformed or unusual input: protobuf then decodes it or raises)."""
    if not (force or kernels_ready()):
        return None
    from lancejit.encoding.kernels import pbwire

    buf = np.frombuffer(body, dtype=np.uint8)
    if buf.flags.writeable:  # kernels see read-only bytes only (one specialization)
        buf = readonly(buf)
    n = pbwire.count_fragments(buf)
    if n < 0:
        return None
    spans = np.zeros((3, n), dtype=np.int64)
    values = np.zeros((3, n), dtype=np.uint64)
    has_del = np.zeros(n, dtype=np.bool_)
    out = np.empty(2 * len(buf), dtype=np.uint8)
    status, schema_len, rest_len = pbwire.scan_manifest(buf, spans, values, has_del, out)
    if status != pbwire.OK:
        return None
    schema = out[:schema_len].tobytes()
    return ScannedManifest(
        schema + out[len(buf) : len(buf) + rest_len].tobytes(),
        schema,
        RawFragments(body, spans[0], spans[1]),
        FragmentArrays(values[0], values[1], values[2], has_del, spans[2]),
    )
