"""Version 2.1 / 2.2 encodings: compressive decoders and structural layouts.

Public entry point: :func:`make_field_decoders` (called by ``lancejit.file.reader``), which
returns one :class:`StructuralFieldDecoder` (the ``FieldDecoder`` protocol) per top-level field.

Structural modules (rows are half-open ``[start, end)``; byte ranges half-open):

* ``columns``  - which columns a field owns (leaves in pre-order; packed/blob/empty structs = 1)
* ``repdef``   - canonical rep/def numbering of a schema path, page-layer translation, unravel
* ``levels``   - ``LeafRows`` (levels + stored values) and row-range extraction
* ``miniblock`` / ``fullzip`` / ``constant`` (all-null + 2.2 constant) / ``blob`` (v1, v2 helpers)
* ``batch``    - many mini-block chunks at once (vectorized headers, plain/bit-packed fast paths)
* ``leaf``     - decoded values -> Arrow leaf arrays; ``field`` - assembly + ``make_field_decoders``
* ``repdef_kernels`` - Numba kernels (full-zip unzip, gathers, batched bit-unpacking)

Compression (``values``, ``compression`` and its submodules) is decoded per the
``CompressiveEncoding`` messages; see those modules.
"""

from lancejit.encoding.v21.field import StructuralFieldDecoder, make_field_decoders

__all__ = ["StructuralFieldDecoder", "make_field_decoders"]
