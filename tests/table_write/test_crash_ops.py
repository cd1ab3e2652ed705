"""Every operation killed (SIGKILL, in a child process) at random points leaves the dataset as
it was or as the operation made it: it opens (pylance and lancejit read the same rows), its rows
equal the model before or after the operation (after exactly when the operation's commit
landed), and the next writer succeeds.  The kill comes right before the k-th mutating call of
the store (data file created, written, closed; deletion, transaction, manifest and hint files
put; files deleted), k drawn at random (seeded) from the calls the operation makes."""

from __future__ import annotations

import multiprocessing as mp
import random
import shutil
import signal

import numpy as np
import op_crash_workers as W
import pytest

import lance
import lancejit

OPS = ["delete", "update", "add_columns", "merge_insert", "compact_files", "append", "overwrite"]
KILLS_PER_OP = 3


def _sorted(t):
    return t.sort_by("id")


def _prepare(uri: str) -> None:
    lance.write_dataset(W.base_table(), uri, max_rows_per_file=W.FRAGMENT_ROWS)
    lance.dataset(uri).delete("id % 11 = 0 OR (id >= 1000 AND id < 1400)")  # compaction has work


def _model_after(tmp_path, base: str, op: str) -> tuple:
    """(calls the operation makes, rows after it, versions it adds), from a run on a copy."""
    copy = str(tmp_path / f"model-{op}.lance")
    shutil.copytree(base, copy)
    count, restore = W.install_counter(None)
    v0 = lance.dataset(copy).version
    try:
        W.run_op(op, copy)
    finally:
        restore()
    return count[0], _sorted(lance.dataset(copy).to_table()), lance.dataset(copy).version - v0


@pytest.mark.parametrize("op", OPS)
def test_killed_operation_leaves_dataset_consistent(tmp_path, op):
    base = str(tmp_path / "base.lance")
    _prepare(base)
    before = _sorted(lance.dataset(base).to_table())
    v0 = lance.dataset(base).version
    calls, after, added = _model_after(tmp_path, base, op)
    assert calls >= 3
    rng = random.Random(f"{op}-crash")
    points = sorted(set(rng.sample(range(1, calls + 1), min(KILLS_PER_OP, calls)) + [calls]))
    ctx = mp.get_context("spawn")
    for k in points:
        uri = str(tmp_path / f"k{k}.lance")
        shutil.copytree(base, uri)
        p = ctx.Process(target=W.killed_op, args=(op, uri, k))
        p.start()
        p.join(timeout=300)
        assert p.exitcode == -signal.SIGKILL, (op, k, p.exitcode)
        ds = lance.dataset(uri)
        got = _sorted(ds.to_table())
        assert _sorted(lancejit.dataset(uri).to_table()).equals(got)
        if ds.version == v0 + added:
            assert got.equals(after), (op, k)
        else:  # not committed (compaction: maybe its fragment-id reservation only)
            assert v0 <= ds.version < v0 + added, (op, k, ds.version)
            assert got.equals(before), (op, k)
        # the next writer succeeds on top
        lancejit.dataset(uri).delete("id = 5")
        expected = got.filter(np.asarray(got["id"]) != 5)
        assert _sorted(lance.dataset(uri).to_table()).equals(expected)
