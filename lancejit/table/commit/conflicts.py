"""Whether a transaction can still commit after others committed since its read version.

The rules are the reference's (``conflict_resolver.rs``, the Lance file format specification).  "mine" is checked
against each committed "theirs", oldest first; the outcome for each pair is one of

* compatible -- rebuild the manifest on top of the latest version and commit;
* rebase -- both deleted rows in the same fragments without touching its data files: merge the
  deletion vectors (possible only when the committer knows the rows "mine" deleted);
* retryable -- the caller must re-read the dataset and redo its work
  (:class:`~lancejit.core.errors.RetryableCommitError`);
* incompatible -- :class:`~lancejit.core.errors.CommitConflictError`.

A committed version without a readable transaction is treated as incompatible (be conservative).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from lancejit.core.errors import CommitConflictError, RetryableCommitError

from .operations import (
    REWRITE_COLUMNS,
    Append,
    CreateIndex,
    Delete,
    Merge,
    Operation,
    OtherOperation,
    Overwrite,
    Project,
    ReserveFragments,
    Restore,
    Rewrite,
    Transaction,
    Update,
    UpdateConfig,
    modified_fragment_ids,
)
from .operations import Fragment


#: Operation names whose compatibility rules are known; anything else conflicts.
_KNOWN = frozenset({
    "Append", "Delete", "Overwrite", "CreateIndex", "Rewrite", "Merge", "Restore", "ReserveFragments",
    "Update", "Project", "UpdateConfig", "DataReplacement", "UpdateMemWalState", "Clone", "UpdateBases",
})


def _kind(op: Operation | None) -> str:
    if op is None:
        return "Missing"
    return op.name


def _retryable(mine: Transaction, theirs: Transaction | None, version: int) -> RetryableCommitError:
    return RetryableCommitError(
        f"this {_kind(mine.operation)} transaction (read version {mine.read_version}) was preempted by "
        f"concurrent {_kind(theirs.operation if theirs else None)} at version {version}; re-read and retry"
    )


def _incompatible(mine: Transaction, theirs: Transaction | None, version: int) -> CommitConflictError:
    return CommitConflictError(
        f"this {_kind(mine.operation)} transaction (read version {mine.read_version}) is incompatible "
        f"with concurrent {_kind(theirs.operation if theirs else None)} committed at version {version}"
    )


def _upsert_keys(op: Operation) -> set[str]:
    if isinstance(op, Overwrite):
        return set(op.config_upsert_values)
    if isinstance(op, UpdateConfig):
        return op.config_keys()
    return set()


@dataclass
class ConflictChecker:
    """Checks one pending transaction against the transactions committed after its read version.

    ``initial_fragments``: the fragments "mine" modifies as they were at its read version (only
    needed for Delete/Update).  ``rows_known``: True when the committer knows which rows "mine"
    deleted per fragment, so overlapping deletions can be rebased.  After the checks,
    ``needs_merge`` holds the fragment ids whose deletion vectors must be merged.
    """

    mine: Transaction
    initial_fragments: Mapping[int, Fragment] = field(default_factory=dict)
    rows_known: bool = False
    needs_merge: set[int] = field(default_factory=set)

    @property
    def modified_ids(self) -> set[int]:
        return modified_fragment_ids(self.mine.operation)

    def check(self, theirs: Transaction | None, version: int) -> None:
        """Raise if ``theirs`` (committed as ``version``) rules "mine" out; record rebase needs."""
        mine = self.mine.operation
        other = theirs.operation if theirs is not None else None
        if theirs is None or other is None:
            raise _incompatible(self.mine, theirs, version)
        okind = other.name
        if okind not in _KNOWN:
            raise _incompatible(self.mine, theirs, version)
        if isinstance(mine, (Delete, Update)):
            self._check_delete_update(theirs, okind, version)
        elif isinstance(mine, Append):
            if okind in ("Overwrite", "Restore", "UpdateMemWalState"):
                raise _incompatible(self.mine, theirs, version)
        elif isinstance(mine, Overwrite):
            if okind in ("Overwrite", "UpdateConfig") and _upsert_keys(mine) & _upsert_keys(other):
                raise _incompatible(self.mine, theirs, version)
            if okind == "UpdateMemWalState":
                raise _incompatible(self.mine, theirs, version)
        elif isinstance(mine, Merge):
            if okind in ("Update", "Append", "Delete", "Rewrite", "Merge", "DataReplacement"):
                raise _retryable(self.mine, theirs, version)
            if okind in ("Overwrite", "Restore", "Project", "UpdateMemWalState"):
                raise _incompatible(self.mine, theirs, version)
        elif isinstance(mine, Project):
            if okind in ("Merge", "Project"):
                raise _retryable(self.mine, theirs, version)
            if okind in ("Overwrite", "Restore", "UpdateMemWalState"):
                raise _incompatible(self.mine, theirs, version)
        elif isinstance(mine, Restore):
            if okind == "UpdateMemWalState":
                raise _incompatible(self.mine, theirs, version)
        elif isinstance(mine, ReserveFragments):
            if okind in ("Overwrite", "Restore"):
                raise _incompatible(self.mine, theirs, version)
        elif isinstance(mine, Rewrite):
            self._check_rewrite(theirs, okind, version)
        elif isinstance(mine, UpdateConfig):
            if okind in ("Overwrite", "UpdateConfig") and _upsert_keys(mine) & _upsert_keys(other):
                raise _incompatible(self.mine, theirs, version)
        elif isinstance(mine, CreateIndex):
            self._check_create_index(mine, theirs, okind, version)
        else:
            # Operations lancejit only carries: be conservative.
            if okind not in ("Append", "UpdateConfig", "ReserveFragments"):
                raise _retryable(self.mine, theirs, version)

    def _check_create_index(self, mine: CreateIndex, theirs: Transaction, okind: str, version: int) -> None:
        """The reference's rules: indices are identified by uuid, so concurrent index commits,
        appends, deletes, merges and projections are compatible (rows an index lists that were
        deleted or moved meanwhile are dropped when it is read); a rewrite of a fragment a new
        index covers, or a data replacement of an indexed field, must be redone.  In addition
        (never a stale answer), an update that rewrote an indexed field in place in a fragment
        a new index covers must be redone: the index holds the field's old values there."""
        other = theirs.operation
        if okind in ("Overwrite", "Restore", "UpdateMemWalState"):
            raise _incompatible(self.mine, theirs, version)
        covered: set[int] = set()
        fields: set[int] = set()
        for ix in mine.new_indices:
            fields.update(int(f) for f in ix.fields)
            if not ix.fragment_bitmap:
                if okind in ("Rewrite",):
                    raise _retryable(self.mine, theirs, version)
                continue
            from pyroaring import BitMap

            covered.update(BitMap.deserialize(bytes(ix.fragment_bitmap)))
        if okind == "Rewrite":
            if modified_fragment_ids(other) & covered:
                raise _retryable(self.mine, theirs, version)
            return
        if okind == "DataReplacement":
            assert isinstance(other, OtherOperation)  # carried, not modelled
            for r in getattr(other.message, "replacements", ()):
                if fields & {int(f) for f in r.new_file.fields}:
                    raise _retryable(self.mine, theirs, version)
            return
        if isinstance(other, Update) and other.update_mode == REWRITE_COLUMNS:
            touched = {f.id for f in other.updated_fragments}
            if fields & set(other.fields_modified) and touched & covered:
                raise _retryable(self.mine, theirs, version)

    def _check_rewrite(self, theirs: Transaction, okind: str, version: int) -> None:
        """A compaction loses (retryable) to any commit that touched one of its old fragments:
        re-planning on the new version never brings back rows deleted meanwhile."""
        if okind in ("Append", "ReserveFragments", "Project", "Clone", "UpdateConfig", "UpdateMemWalState",
                     "UpdateBases"):
            return
        if okind in ("Delete", "Update", "Rewrite", "DataReplacement"):
            if modified_fragment_ids(theirs.operation) & self.modified_ids:
                raise _retryable(self.mine, theirs, version)
            return
        if okind in ("Overwrite", "Restore"):
            raise _incompatible(self.mine, theirs, version)
        # Merge, CreateIndex (lancejit cannot remap an index built meanwhile): redo on the new version
        raise _retryable(self.mine, theirs, version)

    def _check_delete_update(self, theirs: Transaction, okind: str, version: int) -> None:
        other = theirs.operation
        mods = self.modified_ids
        if okind in ("CreateIndex", "ReserveFragments", "Clone", "Project", "Append", "UpdateConfig",
                     "UpdateBases"):
            return
        if okind in ("Rewrite", "DataReplacement"):
            if modified_fragment_ids(other) & mods:
                raise _retryable(self.mine, theirs, version)
            return
        if okind in ("Delete", "Update"):
            if isinstance(other, Delete):
                updated, removed = other.updated_fragments, other.deleted_fragment_ids
            else:
                assert isinstance(other, Update)  # okind "Update"
                updated, removed = other.updated_fragments, other.removed_fragment_ids
            if not ({f.id for f in updated} | set(removed)) & mods:
                return
            if not self.rows_known:
                raise _retryable(self.mine, theirs, version)
            for frag in updated:
                initial = self.initial_fragments.get(frag.id)
                if initial is None:
                    continue
                if list(initial.files) != list(frag.files):
                    raise _retryable(self.mine, theirs, version)
                if initial.deletion_file != frag.deletion_file:
                    self.needs_merge.add(frag.id)
            for fid in removed:
                if fid in self.initial_fragments:
                    raise _retryable(self.mine, theirs, version)
            return
        if okind == "Merge":
            raise _retryable(self.mine, theirs, version)
        if okind in ("Overwrite", "Restore"):
            raise _incompatible(self.mine, theirs, version)
        if okind == "UpdateMemWalState" and isinstance(self.mine.operation, Delete):
            raise _incompatible(self.mine, theirs, version)


__all__ = ["ConflictChecker"]
