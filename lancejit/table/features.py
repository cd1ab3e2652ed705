"""Reader/writer feature flags of a manifest (bit values as the reference defines them)."""

from __future__ import annotations

from lancejit.core.errors import NotSupportedError

FLAG_DELETION_FILES = 1
FLAG_STABLE_ROW_IDS = 2
FLAG_USE_V2_FORMAT_DEPRECATED = 4
FLAG_TABLE_CONFIG = 8
FLAG_BASE_PATHS = 16
FLAG_DISABLE_TRANSACTION_FILE = 32
#: First bit no reader knows; any flag >= this one makes the dataset unreadable.
FLAG_UNKNOWN = 64

FLAG_NAMES = {
    FLAG_DELETION_FILES: "deletion_files",
    FLAG_STABLE_ROW_IDS: "stable_row_ids",
    FLAG_USE_V2_FORMAT_DEPRECATED: "v2_format_deprecated",
    FLAG_TABLE_CONFIG: "table_config",
    FLAG_BASE_PATHS: "base_paths",
    FLAG_DISABLE_TRANSACTION_FILE: "disable_transaction_file",
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
    unknown = flags & ~(FLAG_UNKNOWN - 1)
    if unknown:
        raise NotSupportedError(
            f"dataset {dataset} version {version} ({path}) requires reader feature flags "
            f"{unknown:#x} (reader_feature_flags={flags:#x}) that lancejit does not support"
        )
