"""2.1 / 2.2 encoders: Arrow arrays -> rep/def levels -> compressed page buffers + ``PageLayout``.

Modules (each small, named after its concept):

* ``levels``   rep/def level slots of a leaf column from an Arrow array; layer kinds; def numbering
* ``data``     value blocks (fixed / variable / fixed-size list / packed struct) built from Arrow
* ``stats``    bit widths per 1024 values, run counts, HyperLogLog cardinality
* ``values``   mini-block value compressors (flat, inline bit-packing, RLE, BSS, variable, FSL,
               packed struct, general wrapper) and their chunking
* ``blocks``   block compressors (rep/def levels, dictionaries, all-null levels)
* ``fsst``     FSST symbol-table training and page compression
* ``general``  LZ4 / zstd framing;  ``pbutil`` CompressiveEncoding constructors
* ``miniblock`` / ``fullzip`` / ``allnull`` / ``blob``  the structural layouts
* ``strategy`` layout and compression choice (as the reference), ``lance-encoding:*`` keys
* ``field``    one top-level field: leaf columns, page accumulation (bounded memory)
* ``page``     ``EncodedPage`` (buffers + layout + row count)

Kernels live in ``lancejit.encoding.kernels`` (``bitpack``, ``enc_rle``, ``enc_fsst``, ``enc_hll``).
"""
