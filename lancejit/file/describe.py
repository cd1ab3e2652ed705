"""Human-readable names of page layouts and compressions, for ``inspect`` and ``metadata()``.

Walks the decoded page messages (``lance.encodings21.PageLayout`` for 2.1/2.2,
``lance.encodings.ArrayEncoding`` for 2.0) and names them, e.g. ``mini_block(inline_bitpacking)``,
``full_zip(flat)``, ``all_null``, ``constant``, ``blob(mini_block(packed_struct(flat)))``,
``nullable(flat)``.  Purely presentational: decoders never parse these strings.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

_LZ4_ZSTD = {0: "none", 1: "lz4", 2: "zstd"}


def _set_fields(msg: Message) -> list[tuple[Any, Any]]:
    return [(fd, v) for fd, v in msg.ListFields()]


def compression_name(enc: Message | None) -> str:
    """Name of a 2.1 ``CompressiveEncoding`` tree, e.g. ``fsst(variable(flat))``, ``lz4(variable(flat))``."""
    if enc is None:
        return "none"
    which = enc.WhichOneof("compression")
    if which is None:
        return "none"
    inner = getattr(enc, which)
    if which == "general":
        scheme = _LZ4_ZSTD.get(int(inner.compression.scheme), f"scheme{int(inner.compression.scheme)}")
        return f"{scheme}({compression_name(inner.values) if inner.HasField('values') else 'none'})"
    if which == "flat" and inner.HasField("data"):
        return f"{_LZ4_ZSTD.get(int(inner.data.scheme), 'general')}(flat)"
    if which == "inline_bitpacking" and inner.HasField("values"):
        return f"{_LZ4_ZSTD.get(int(inner.values.scheme), 'general')}(inline_bitpacking)"
    if which == "variable_packed_struct":
        parts = [compression_name(f.value) if f.HasField("value") else "none" for f in inner.fields]
        return f"variable_packed_struct({', '.join(parts)})"
    if which == "dictionary":
        return f"dictionary({compression_name(inner.indices)}, {compression_name(inner.items)})"
    if which == "rle":
        return "rle"
    children = [
        compression_name(v)
        for fd, v in _set_fields(inner)
        if fd.message_type is not None and fd.message_type.name == "CompressiveEncoding"
    ]
    return f"{which}({', '.join(children)})" if children else which


def _all_null_name(layout: Message, num_buffers: int) -> str:
    if layout.HasField("inline_value") or num_buffers % 2 == 1:
        return "constant"
    return "all_null"


def layout_name(layout: Message | None, num_buffers: int = 0) -> str:
    """The 2.1/2.2 page layout kind: ``mini_block``, ``full_zip``, ``all_null``, ``constant``, ``blob``."""
    if layout is None:
        return "none"
    which = layout.WhichOneof("layout")
    if which == "mini_block_layout":
        return "mini_block"
    if which == "full_zip_layout":
        return "full_zip"
    if which == "all_null_layout":
        return _all_null_name(layout.all_null_layout, num_buffers)
    if which == "blob_layout":
        return "blob"
    return "unknown"


def page_layout_description(layout: Message | None, num_buffers: int = 0) -> str:
    """Full name of a 2.1/2.2 ``PageLayout``, e.g. ``mini_block(inline_bitpacking)``."""
    kind = layout_name(layout, num_buffers)
    if layout is None:
        return kind
    which = layout.WhichOneof("layout")
    if which == "mini_block_layout":
        mb = layout.mini_block_layout
        value = compression_name(mb.value_compression) if mb.HasField("value_compression") else "none"
        if mb.HasField("dictionary"):
            return f"mini_block({value}, dict={compression_name(mb.dictionary)})"
        return f"mini_block({value})"
    if which == "full_zip_layout":
        fz = layout.full_zip_layout
        value = compression_name(fz.value_compression) if fz.HasField("value_compression") else "none"
        return f"full_zip({value})"
    if which == "blob_layout":
        inner = layout.blob_layout.inner_layout if layout.blob_layout.HasField("inner_layout") else None
        return f"blob({page_layout_description(inner)})"
    return kind


def array_encoding_name(enc: Message | None) -> str:
    """Full name of a 2.0 ``ArrayEncoding`` tree, e.g. ``nullable(flat)``, ``list(nullable(flat))``."""
    if enc is None:
        return "none"
    which = enc.WhichOneof("array_encoding")
    if which is None:
        return "none"
    inner = getattr(enc, which)
    if which == "nullable":
        kind = inner.WhichOneof("nullability")
        if kind == "no_nulls":
            return f"nullable({array_encoding_name(inner.no_nulls.values)})"
        if kind == "some_nulls":
            sn = inner.some_nulls
            return f"nullable({array_encoding_name(sn.values)}, validity={array_encoding_name(sn.validity)})"
        return "nullable(all_null)"
    if which == "flat" and inner.HasField("compression") and inner.compression.scheme:
        return f"{inner.compression.scheme}(flat)"
    if which == "block":
        return f"block({inner.scheme})" if inner.scheme else "block"
    if which == "general_mini_block":
        scheme = inner.compression.scheme if inner.HasField("compression") else "general"
        return f"{scheme or 'general'}({array_encoding_name(inner.inner)})"
    children: list[str] = []
    for fd, v in _set_fields(inner):
        if fd.message_type is None or fd.message_type.name != "ArrayEncoding":
            continue
        if fd.is_repeated:
            children.extend(array_encoding_name(x) for x in v)
        else:
            children.append(array_encoding_name(v))
    return f"{which}({', '.join(children)})" if children else which


def array_encoding_kind(enc: Message | None) -> str:
    """The outermost 2.0 encoding name, e.g. ``nullable``, ``list``, ``struct``."""
    if enc is None:
        return "none"
    return enc.WhichOneof("array_encoding") or "none"


def describe_page(version: str, encoding: Message | None, num_buffers: int) -> tuple[str, str]:
    """``(layout kind, full description)`` of one page of a file of ``version``."""
    if version == "2.0":
        return array_encoding_kind(encoding), array_encoding_name(encoding)
    return layout_name(encoding, num_buffers), page_layout_description(encoding, num_buffers)


def column_encoding_name(enc: Message | None) -> str:
    """Name of a column-level ``ColumnEncoding`` (``values``, ``zone_index``, ``blob``)."""
    if enc is None:
        return "none"
    return enc.WhichOneof("column_encoding") or "none"


__all__ = [
    "array_encoding_kind",
    "array_encoding_name",
    "column_encoding_name",
    "compression_name",
    "describe_page",
    "layout_name",
    "page_layout_description",
]
