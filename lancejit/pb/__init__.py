"""Generated protobuf modules of the Lance format (from ``protos/``; see ``scripts/gen_protos.py``).

Never edit the ``*_pb2.py`` files by hand.  Message full names match the Lance reference
(``lance.file``, ``lance.file.v2``, ``lance.encodings``, ``lance.encodings21``, ``lance.table``)
so ``google.protobuf.Any`` type URLs found in files resolve to these classes.
"""

from . import file_pb2, file2_pb2, encodings_v2_0_pb2, encodings_v2_1_pb2  # noqa: F401
from . import table_pb2, rowids_pb2, transaction_pb2  # noqa: F401

__all__ = [
    "encodings_v2_0_pb2",
    "encodings_v2_1_pb2",
    "file2_pb2",
    "file_pb2",
    "rowids_pb2",
    "table_pb2",
    "transaction_pb2",
]
