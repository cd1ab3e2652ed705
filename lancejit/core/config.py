"""Defaults shared by the layers, overridable per call or by environment variables.

Sizes are in bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

KiB = 1024
MiB = 1024 * KiB


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        return default


@dataclass(frozen=True, slots=True)
class IOConfig:
    """Scheduler settings for one store kind.

    ``block_size``: ranges closer than this are read as one request (bytes).
    ``max_request_size``: longer reads are split into parts read concurrently (bytes).
    ``io_parallelism``: requests in flight per store (the IOPS budget).
    ``max_bytes_in_flight``: backpressure bound on bytes requested but not yet consumed.
    """

    block_size: int
    max_request_size: int
    io_parallelism: int
    max_bytes_in_flight: int


LOCAL_IO = IOConfig(
    block_size=_env_int("LANCEJIT_LOCAL_BLOCK_SIZE", 4 * KiB),
    max_request_size=_env_int("LANCEJIT_MAX_IOP_SIZE", 8 * MiB),
    io_parallelism=_env_int("LANCEJIT_LOCAL_IO_THREADS", 8),
    max_bytes_in_flight=_env_int("LANCEJIT_MAX_BYTES_IN_FLIGHT", 256 * MiB),
)

CLOUD_IO = IOConfig(
    block_size=_env_int("LANCEJIT_CLOUD_BLOCK_SIZE", 64 * KiB),
    max_request_size=_env_int("LANCEJIT_MAX_IOP_SIZE", 8 * MiB),
    io_parallelism=_env_int("LANCEJIT_CLOUD_IO_THREADS", 64),
    max_bytes_in_flight=_env_int("LANCEJIT_MAX_BYTES_IN_FLIGHT", 256 * MiB),
)

#: Bytes read from the end of a file to find its footer and (usually) all its metadata.
FOOTER_PREFETCH_BYTES = 64 * KiB

#: Bound on the decoded-metadata search cache, in bytes.
METADATA_CACHE_BYTES = _env_int("LANCEJIT_METADATA_CACHE_BYTES", 512 * MiB)

#: Target bytes per column per scan read (page-sized requests).
SCAN_READ_BYTES = 8 * MiB

#: Default rows per record batch returned by scans.
DEFAULT_BATCH_SIZE = 8192
