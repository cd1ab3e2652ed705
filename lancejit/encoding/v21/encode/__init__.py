"""2.1 / 2.2 encoders: Arrow arrays -> rep/def levels -> compressed page buffers + ``PageLayout``.

Modules: ``levels`` (rep/def from Arrow), ``stats`` (bit widths, runs, cardinality),
``values`` (mini-block value compressors), ``blocks`` (block compressors for levels and
dictionaries), ``miniblock`` / ``fullzip`` / ``allnull`` (structural layouts), ``strategy``
(choosing a layout and compression as the reference does), ``field`` (one top-level field:
leaf columns, page accumulation).
"""
