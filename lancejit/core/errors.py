"""The single exception hierarchy of lancejit.

Every error lancejit raises derives from :class:`LanceJitError`.  Where a builtin exception
has the same meaning, the subclass inherits it too, so ``except FileNotFoundError`` or
``except IndexError`` keeps working for callers that do not know lancejit.  Code inside
lancejit matches errors by class, never by message text.
"""

from __future__ import annotations


class LanceJitError(Exception):
    """Root of every error raised by lancejit."""


class NotFoundError(LanceJitError, FileNotFoundError, ValueError):
    """A file, object, dataset, version or tag does not exist (also a ``ValueError``: what the
    reference raises for a missing dataset, version or tag)."""


class AlreadyExistsError(LanceJitError, FileExistsError):
    """A create-if-absent write found the target already present."""


class CorruptFileError(LanceJitError, ValueError):
    """A file's bytes are not a valid Lance file (bad magic, truncation, bad offsets...).

    The message names the file and what was wrong.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class NotSupportedError(LanceJitError, NotImplementedError):
    """A valid input uses a feature lancejit does not implement (unknown flag, encoding...)."""


class RowIndexError(LanceJitError, IndexError, OSError, ValueError):
    """A row index or row id is outside the file or dataset (also an ``OSError`` and a
    ``ValueError``: the reference raises the first for datasets, the second for files)."""


class NegativeIndexError(RowIndexError, OverflowError):
    """A negative row index or row id (also an ``OverflowError``, as the reference raises it)."""


class InvalidInputError(LanceJitError, ValueError):
    """An argument is malformed: bad URI, bad filter, mismatched schema, bad option."""


class FilterSyntaxError(InvalidInputError):
    """A filter's SQL text does not parse.  ``position`` is the 1-based character of the filter
    text where parsing stopped (``None`` when it cannot be told); the message names it."""

    def __init__(self, message: str, *, position: int | None = None) -> None:
        self.position = position
        super().__init__(message)


class UnknownColumnError(InvalidInputError):
    """A name (``name``, dotted for nested fields) matches no column.  ``suggestions``: the
    closest existing names, best first (possibly none); the message names them."""

    def __init__(self, message: str, *, name: str, suggestions: tuple[str, ...] = ()) -> None:
        self.name = name
        self.suggestions = suggestions
        super().__init__(message)


class InvalidTypeError(InvalidInputError, TypeError):
    """An argument or column has the wrong type for the operation (e.g. a vector search on a
    column that holds no vectors); a ``TypeError``, as the reference raises it."""


class SchemaMismatchError(InvalidInputError, OSError):
    """Data written does not match the schema of the file or dataset (also an ``OSError``, as
    the reference raises it)."""


class InvalidChangeError(InvalidInputError, OSError):
    """A change to a dataset (delete, adding or altering columns) refused for its input; also an
    ``OSError``, as the reference raises those."""


class StoreError(LanceJitError, OSError):
    """A storage backend failed (network, permission, protocol) in a way not covered above."""


class CommitConflictError(LanceJitError, OSError, RuntimeError):
    """A concurrent commit made this transaction impossible to apply (an ``OSError`` like the
    reference's ``lance.commit.CommitConflictError``; ``retryable`` tells whether redoing the
    operation on the newer version can succeed)."""

    retryable = False


class RetryableCommitError(CommitConflictError):
    """A concurrent commit requires re-reading and redoing the operation."""

    retryable = True


class ExecutionError(LanceJitError, OSError):
    """A write stopped on a condition its caller asked for (``merge_insert(...).when_matched_fail()``
    meeting a matched row); an ``OSError``, as the reference raises it."""


class IndexStateError(LanceJitError, RuntimeError):
    """An index operation does not fit the dataset's indices: an index of that name exists
    (creating one without ``replace``) or none does (dropping one)."""


class FieldNotFoundError(LanceJitError, KeyError):
    """An operation names a column the schema does not have (e.g. indexing a missing column)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


__all__ = [
    "AlreadyExistsError",
    "CommitConflictError",
    "CorruptFileError",
    "ExecutionError",
    "FieldNotFoundError",
    "FilterSyntaxError",
    "IndexStateError",
    "InvalidChangeError",
    "InvalidInputError",
    "InvalidTypeError",
    "LanceJitError",
    "NegativeIndexError",
    "NotFoundError",
    "NotSupportedError",
    "RetryableCommitError",
    "RowIndexError",
    "SchemaMismatchError",
    "StoreError",
    "UnknownColumnError",
]
