"""Protobuf messages of the reference's vector indices, built at import from descriptors
(package ``lance.index.pb``; field numbers as the reference writes them).

* ``Tensor``: ``data_type`` (enum: 0 bfloat16, 1 float16, 2 float32, 3 float64, 4 uint8 ...),
  ``shape`` (repeated uint32), ``data`` (little-endian values);
* ``IVF``: ``centroids`` (deprecated floats), ``offsets`` (repeated uint64: first row of each
  partition), ``lengths`` (repeated uint32: rows per partition), ``centroids_tensor``
  (``(num_partitions, dim)``), ``loss`` (optional double);
* ``VectorIndexDetails`` (the manifest entry's ``index_details``): ``metric_type`` (1: 0 l2,
  1 cosine, 2 dot, 3 hamming), ``hnsw`` (3), ``pq`` (4: ``num_bits``, ``num_sub_vectors``),
  ``sq`` (5: ``num_bits``), ``flat`` (8, empty), ``runtime_hints`` (9: string map).
"""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "lance.index.pb"


def _build() -> dict[str, type[Message]]:
    fd = descriptor_pb2.FileDescriptorProto(name="lancejit_vector_index.proto", package=_PACKAGE, syntax="proto3")

    def msg(name: str, fields: list[tuple], nested: list | None = None) -> None:
        m = fd.message_type.add(name=name)
        for fname, num, ftype, label, type_name, *rest in fields:
            f = m.field.add(name=fname, number=num, type=ftype, label=label)
            if type_name:
                f.type_name = type_name
            if rest and rest[0] == "optional":
                f.proto3_optional = True
                m.oneof_decl.add(name=f"_{fname}")
                f.oneof_index = len(m.oneof_decl) - 1
        for n in nested or []:
            m.nested_type.add().CopyFrom(n)

    opt, rep = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
    msg("Tensor", [("data_type", 1, _F.TYPE_UINT32, opt, None), ("shape", 2, _F.TYPE_UINT32, rep, None),
                   ("data", 3, _F.TYPE_BYTES, opt, None)])
    msg("IVF", [("centroids", 1, _F.TYPE_FLOAT, rep, None), ("offsets", 2, _F.TYPE_UINT64, rep, None),
                ("lengths", 3, _F.TYPE_UINT32, rep, None),
                ("centroids_tensor", 4, _F.TYPE_MESSAGE, opt, f".{_PACKAGE}.Tensor"),
                ("loss", 5, _F.TYPE_DOUBLE, opt, None, "optional")])
    msg("VectorIndexDetailsHnsw", [("m", 1, _F.TYPE_UINT32, opt, None),
                                   ("ef_construction", 2, _F.TYPE_UINT32, opt, None),
                                   ("max_level", 3, _F.TYPE_UINT32, opt, None)])
    msg("VectorIndexDetailsPq", [("num_bits", 1, _F.TYPE_UINT32, opt, None),
                                 ("num_sub_vectors", 2, _F.TYPE_UINT32, opt, None)])
    msg("VectorIndexDetailsSq", [("num_bits", 1, _F.TYPE_UINT32, opt, None)])
    msg("VectorIndexDetailsFlat", [])
    entry = descriptor_pb2.DescriptorProto(name="RuntimeHintsEntry")
    entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=opt)
    entry.field.add(name="value", number=2, type=_F.TYPE_STRING, label=opt)
    entry.options.map_entry = True
    msg("VectorIndexDetails", [
        ("metric_type", 1, _F.TYPE_UINT32, opt, None),
        ("hnsw", 3, _F.TYPE_MESSAGE, opt, f".{_PACKAGE}.VectorIndexDetailsHnsw"),
        ("pq", 4, _F.TYPE_MESSAGE, opt, f".{_PACKAGE}.VectorIndexDetailsPq"),
        ("sq", 5, _F.TYPE_MESSAGE, opt, f".{_PACKAGE}.VectorIndexDetailsSq"),
        ("flat", 8, _F.TYPE_MESSAGE, opt, f".{_PACKAGE}.VectorIndexDetailsFlat"),
        ("runtime_hints", 9, _F.TYPE_MESSAGE, rep, f".{_PACKAGE}.VectorIndexDetails.RuntimeHintsEntry"),
    ], nested=[entry])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    names = ["Tensor", "IVF", "VectorIndexDetails"]
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{n}")) for n in names}


_CLASSES = _build()
Tensor = _CLASSES["Tensor"]
IVF = _CLASSES["IVF"]
VectorIndexDetails = _CLASSES["VectorIndexDetails"]

#: Tensor data types -> NumPy dtypes (bfloat16 is not read).
TENSOR_DTYPES: dict[int, np.dtype] = {1: np.dtype("<f2"), 2: np.dtype("<f4"), 3: np.dtype("<f8"), 4: np.dtype("u1"),
                 5: np.dtype("<u2"), 6: np.dtype("<u4"), 7: np.dtype("<u8")}
#: The manifest entry's type URL of a vector index.
DETAILS_TYPE_URL = "/lance.index.pb.VectorIndexDetails"


class TensorMessage(Protocol):
    """The fields of a ``Tensor`` message (its class is built at import: no static type)."""

    data_type: int
    shape: Sequence[int]
    data: bytes

    def SerializeToString(self) -> bytes:
        """The message's wire bytes."""
        ...


def tensor_array(t: TensorMessage) -> np.ndarray:
    """A Tensor's values as an array of its shape; ValueError when type, shape and bytes
    disagree."""
    dt = TENSOR_DTYPES.get(t.data_type)
    if dt is None:
        raise ValueError(f"tensor data type {t.data_type} is not supported")
    shape = tuple(int(s) for s in t.shape)
    count = int(np.prod(shape)) if shape else 0
    if count * dt.itemsize != len(t.data):
        raise ValueError(f"tensor of shape {shape} ({dt}) has {len(t.data)} bytes")
    return np.frombuffer(t.data, dtype=dt).reshape(shape)


def tensor_of(a: np.ndarray) -> TensorMessage:
    """A Tensor message holding ``a`` (float16/32/64 or unsigned ints)."""
    a = np.ascontiguousarray(a)
    code = next((c for c, dt in TENSOR_DTYPES.items() if dt == a.dtype.newbyteorder("<")), None)
    if code is None:
        raise ValueError(f"no tensor data type for {a.dtype}")
    return Tensor(data_type=code, shape=list(a.shape), data=a.astype(TENSOR_DTYPES[code], copy=False).tobytes())


__all__ = ["DETAILS_TYPE_URL", "IVF", "TENSOR_DTYPES", "Tensor", "VectorIndexDetails", "tensor_array", "tensor_of"]
