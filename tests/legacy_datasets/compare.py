"""Compare lancejit with the reference (pylance 14) on one dataset, every version."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import lancejit
from lancejit.core.errors import LanceJitError


def _outcome(fn):
    try:
        return "ok", fn()
    except LanceJitError as exc:
        return "lancejit-error", exc
    except BaseException as exc:  # the reference's errors (OSError, ValueError...)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return "error", exc


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([(t.column_names[0], "ascending")]) if t.num_rows and t.num_columns else t


def _reads(open_ds, take_rows, take_idx, row_ids):
    def run():
        ds = open_ds()
        return {
            "table": ds.to_table(),
            "count": ds.count_rows(),
            "take": ds.take(take_idx) if len(take_idx) else None,
            "take_rows": take_rows(ds, row_ids) if len(row_ids) else None,
        }
    return _outcome(run)


def reference_reads(lance, path: str, version: int, take_idx, row_ids):
    return _reads(lambda: lance.dataset(path, version=version), lambda ds, r: ds._take_rows(r),
                  take_idx, row_ids)


def lancejit_reads(path: str, version: int, take_idx, row_ids):
    return _reads(lambda: lancejit.dataset(path, version=version), lambda ds, r: ds.take_rows(r),
                  take_idx, row_ids)


def versions_of(lance, path: str) -> list[int]:
    return [v["version"] for v in lance.dataset(path).versions()]


def assert_same_as_reference(lance, path: str, *, versions: list[int] | None = None, seed: int = 0,
                             expect_refusal: bool | None = None) -> list[str]:
    """For every version: lancejit's ``to_table``, ``count_rows``, ``take`` and ``take_rows`` equal
    the reference's, or both refuse (lancejit with a LanceJitError).  Returns one outcome word per
    version ("rows" or "refused")."""
    rng = np.random.default_rng(seed)
    versions = versions if versions is not None else versions_of(lance, path)
    out = []
    for v in versions:
        # indices / row ids chosen from the reference's view when it reads the version
        kind, ref = reference_reads(lance, path, v, [], [])
        if kind == "ok":
            n = ref["count"]
            take_idx = sorted(set(rng.integers(0, n, size=min(n, 25)).tolist())) if n else []
            ids = lance.dataset(path, version=v).to_table(columns=[], with_row_id=True)["_rowid"].to_numpy()
            row_ids = sorted(set(rng.choice(ids, size=min(len(ids), 25), replace=False).tolist())) if len(ids) else []
            kind, ref = reference_reads(lance, path, v, take_idx, row_ids)
        else:
            take_idx, row_ids = [], []
        mine_kind, mine = lancejit_reads(path, v, take_idx, row_ids)
        if kind != "ok":
            assert mine_kind == "lancejit-error", (v, ref, mine)
            out.append("refused")
            continue
        assert mine_kind == "ok", (v, mine)
        assert mine["count"] == ref["count"], (v, mine["count"], ref["count"])
        assert mine["table"].num_rows == ref["table"].num_rows
        assert _sorted(mine["table"]).equals(_sorted(ref["table"])), v
        for key in ("take", "take_rows"):
            if ref[key] is not None:
                assert mine[key].equals(ref[key]), (v, key, mine[key], ref[key])
        out.append("rows")
    if expect_refusal is not None:
        assert all((o == "refused") == expect_refusal for o in out), out
    return out
