"""Reader/writer feature flags of a manifest (bit values as the reference defines them)."""

from __future__ import annotations

from lancejit.core.errors import NotSupportedError

FLAG_DELETION_FILES = 1
FLAG_STABLE_ROW_IDS = 2
FLAG_USE_V2_FORMAT_DEPRECATED = 4
FLAG_TABLE_CONFIG = 8
FLAG_BASE_PATHS = 16
FLAG_DISABLE_TRANSACTION_FILE = 32
#: First bit the snapshot reference does not know.
FLAG_UNKNOWN = 64
#: pylance 14: data files of several format versions in one dataset (lancejit reads each file
#: with its own version's decoders).
FLAG_MIXED_FILE_VERSIONS = 256
#: Every reader flag lancejit understands; any other set bit makes the dataset unreadable.
KNOWN_READER_FLAGS = (FLAG_UNKNOWN - 1) | FLAG_MIXED_FILE_VERSIONS

FLAG_NAMES = {
    FLAG_DELETION_FILES: "deletion_files",
    FLAG_STABLE_ROW_IDS: "stable_row_ids",
    FLAG_USE_V2_FORMAT_DEPRECATED: "v2_format_deprecated",
    FLAG_TABLE_CONFIG: "table_config",
    FLAG_BASE_PATHS: "base_paths",
    FLAG_DISABLE_TRANSACTION_FILE: "disable_transaction_file",
    FLAG_MIXED_FILE_VERSIONS: "mixed_file_versions",
}


def flag_names(flags: int) -> list[str]:
    """Names of the set bits (unknown bits as ``"unknown(N)"``)."""
    names = []
    bit = 1
    while bit <= flags:
        if flags & bit:
            names.append(FLAG_NAMES.get(bit, f"unknown({bit})"))
        bit <<= 1
    return names


def check_reader_flags(flags: int, *, dataset: str, version: int, path: str) -> None:
    """Raise :class:`NotSupportedError` if ``flags`` has a bit this reader does not know."""
    unknown = flags & ~KNOWN_READER_FLAGS
    if unknown:
        raise NotSupportedError(
            f"dataset {dataset} version {version} ({path}) requires reader feature flags "
            f"{unknown:#x} (reader_feature_flags={flags:#x}) that lancejit does not support"
        )
