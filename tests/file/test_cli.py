"""``lancejit inspect`` reports what pylance reports (issue 2, acceptance 1)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import lance
import pytest

from lancejit.cli import main

KEYS = [(v, n) for n in ("flat", "nested", "many", "bigmeta") for v in ("2.0", "2.1", "2.2")]


def _inspect_json(capsys, *args) -> dict:
    assert main(["inspect", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[1]}-{k[0]}")
def test_inspect_json_matches_pylance(capsys, samples, key):
    path = samples[key]
    out = _inspect_json(capsys, str(path))
    ref = lance.file.LanceFileReader(str(path)).metadata()
    assert out["version"] == key[0]
    assert out["num_rows"] == ref.num_rows
    assert out["num_columns"] == len(ref.columns) == len(out["columns"])
    assert out["num_global_buffers"] == len(ref.global_buffers)
    assert [c["num_pages"] for c in out["columns"]] == [len(c.pages) for c in ref.columns]
    assert out["num_pages"] == sum(len(c.pages) for c in ref.columns)
    assert [f["name"] for f in out["schema"]["fields"]] == ref.schema.names
    assert [f["type"] for f in out["schema"]["fields"]] == [str(f.type) for f in ref.schema]
    assert out["schema_text"] == ref.schema.to_string(show_schema_metadata=False)
    for col, ref_col in zip(out["columns"], ref.columns):
        for page, ref_page in zip(col["pages"], ref_col.pages):
            assert page["num_bytes"] == sum(b.size for b in ref_page.buffers)
            assert page["layout"] and page["encoding"]
        assert col["num_bytes"] == sum(sum(b.size for b in p.buffers) for p in ref_col.pages) + sum(
            b.size for b in ref_col.column_buffers
        )


def test_inspect_text(capsys, samples):
    assert main(["inspect", str(samples[("2.2", "flat")])]) == 0
    text = capsys.readouterr().out
    assert "version: 2.2" in text
    assert "rows: 3000" in text
    assert "i32: int32 not null" in text
    assert "mini_block(inline_bitpacking)" in text
    assert "origin: lancejit-tests" in text


def test_inspect_text_limits_pages(capsys, samples):
    assert main(["inspect", str(samples[("2.2", "bigmeta")])]) == 0
    text = capsys.readouterr().out
    assert "more pages (--all-pages to list them)" in text
    assert main(["inspect", str(samples[("2.2", "bigmeta")]), "--all-pages"]) == 0
    assert "more pages" not in capsys.readouterr().out


def test_inspect_errors(capsys, tmp_path):
    assert main(["inspect", str(tmp_path / "missing.lance")]) == 1
    err = capsys.readouterr().err
    assert "lancejit: error:" in err and "missing.lance" in err
    bad = tmp_path / "bad.lance"
    bad.write_bytes(b"hello world, not lance")
    assert main(["inspect", str(bad)]) == 1
    assert "not a Lance file" in capsys.readouterr().err
    assert main(["inspect", str(bad), "--storage-option", "novalue"]) == 1
    assert "KEY=VALUE" in capsys.readouterr().err


@pytest.mark.s3
def test_inspect_s3_with_storage_options(capsys, s3_endpoint, samples):
    from lancejit.io import open_store, run_sync

    root = s3_endpoint.new_root()
    uri = root.join("flat.lance")
    store, path = open_store(uri, root.storage_options)
    run_sync(store.put(path, samples[("2.1", "flat")].read_bytes()))
    opts = [x for k, v in root.storage_options.items() for x in ("--storage-option", f"{k}={v}")]
    out = _inspect_json(capsys, uri, *opts)
    assert out["num_rows"] == 3000 and out["version"] == "2.1"


def test_console_script(samples):
    """The installed ``lancejit`` entry point runs (fresh interpreter)."""
    exe = Path(sys.executable).with_name("lancejit")
    proc = subprocess.run(
        [str(exe), "inspect", "--json", str(samples[("2.0", "nested")])],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["num_columns"] == 16


def test_inspect_legacy(capsys, samples):
    pytest.importorskip("lancejit.file.legacy")
    path = samples[("0.1", "flat")]
    ds = lance.dataset(str(path.parent.parent))
    out = _inspect_json(capsys, str(path))
    assert out["version"] == "0.1"
    assert out["num_rows"] == ds.count_rows()
    assert [f["name"] for f in out["schema"]["fields"]] == ds.schema.names
    assert out["num_columns"] == len(ds.schema.names)  # flat: one column per field
    assert out["num_pages"] == len(ds.schema.names) * 6  # 512-row batches: 6 per field


def test_inspect_dataset(capsys, tmp_path):
    """A dataset directory is described (versions, fragments); ``--dataset-version`` picks one."""
    import pyarrow as pa

    uri = str(tmp_path / "ds.lance")
    lance.write_dataset(pa.table({"a": list(range(10))}), uri)
    lance.write_dataset(pa.table({"a": list(range(5))}), uri, mode="append")
    ds = lance.dataset(uri)
    out = _inspect_json(capsys, uri)
    assert out["version"] == ds.version == 2
    assert int(out["summary"]["total_rows"]) == ds.count_rows() == 15
    assert len(out["fragments"]) == len(ds.get_fragments()) == 2
    old = _inspect_json(capsys, uri, "--dataset-version", "1")
    assert old["version"] == 1 and int(old["summary"]["total_rows"]) == 10
    assert main(["inspect", uri]) == 0
    assert "fragment 1: 5 rows" in capsys.readouterr().out


def test_inspect_plain_directory_is_an_error(capsys, tmp_path):
    assert main(["inspect", str(tmp_path)]) == 1
    assert "directory" in capsys.readouterr().err


def _many_fragments(uri: str) -> None:
    """2,000 fragments written by the reference: 10 of 1,000 rows then 1,990 of 20, a few rows
    deleted."""
    import numpy as np
    import pyarrow as pa
    from lance.fragment import write_fragments

    small = pa.table({"id": pa.array(np.arange(1990 * 20, dtype=np.int64))})
    big = pa.table({"id": pa.array(np.arange(10 * 1000, dtype=np.int64))})
    frags = write_fragments(big, uri, max_rows_per_file=1000) + write_fragments(small, uri, max_rows_per_file=20)
    ds = lance.LanceDataset.commit(uri, lance.LanceOperation.Overwrite(small.schema, frags))
    ds.delete("id >= 39790 OR id = 5")


def test_inspect_summarizes_many_fragments(capsys, tmp_path):
    """A 2,000-fragment dataset: counts, rows and bytes per fragment and a histogram of fragments
    by live rows, all as the reference counts them, then the first and last 5 fragments;
    ``--all`` lists every fragment and ``--json`` is always complete."""
    import re
    from collections import Counter

    import numpy as np

    uri = str(tmp_path / "many.lance")
    _many_fragments(uri)
    frags = lance.dataset(uri).get_fragments()
    ids = [f.fragment_id for f in frags]
    live = [f.count_rows() for f in frags]
    sizes = [sum(d.file_size_bytes for d in f.data_files()) for f in frags]
    assert len(frags) == 2000 and len(set(live)) > 2
    assert main(["inspect", uri]) == 0
    text = capsys.readouterr().out
    assert len(text.splitlines()) < 40
    assert f"fragments: 2000 (ids {ids[0]} to {ids[-1]})" in text
    assert (f"live rows per fragment: min {min(live):,}, median {np.median(live):,.0f}, "
            f"mean {np.mean(live):,.0f}, max {max(live):,}") in text
    hist = {(int(a.replace(",", "")), int(b.replace(",", ""))): int(n.replace(",", ""))
            for a, b, n in re.findall(r"\[([\d,]+), ([\d,]+)\)\s+([\d,]+) fragments?", text)}
    want = Counter(r.bit_length() for r in live)
    assert hist == {((1 << (k - 1)) if k else 0, 1 << k if k else 1): n for k, n in want.items()}
    listed = [int(x) for x in re.findall(r"^  fragment (\d+): ", text, re.M)]
    assert listed == ids[:5] + ids[-5:]
    for f in frags[:5] + frags[-5:]:
        assert f"  fragment {f.fragment_id}: {f.physical_rows} rows" in text
    assert "... 1990 more fragments (--all lists them)" in text
    assert main(["inspect", uri, "--all"]) == 0
    assert [int(x) for x in re.findall(r"^  fragment (\d+): ", capsys.readouterr().out, re.M)] == ids
    out = _inspect_json(capsys, uri)
    assert [f["id"] for f in out["fragments"]] == ids and [f["rows"] for f in out["fragments"]] == live
    stats = out["fragment_stats"]
    assert (stats["count"], stats["first_id"], stats["last_id"]) == (2000, ids[0], ids[-1])
    assert stats["rows"]["total"] == sum(live) and stats["bytes"]["total"] == sum(sizes)
    assert (stats["bytes"]["min"], stats["bytes"]["max"]) == (min(sizes), max(sizes))
    assert sum(h["bytes"] for h in stats["histogram"]) == sum(sizes)


def test_inspect_cuts_long_version_lists(capsys, tmp_path):
    import pyarrow as pa

    uri = str(tmp_path / "versions.lance")
    ds = lance.write_dataset(pa.table({"a": [0]}), uri)
    for i in range(1, 13):
        ds = lance.write_dataset(pa.table({"a": [i]}), uri, mode="append")
    versions = [v["version"] for v in ds.versions()]
    assert main(["inspect", uri]) == 0
    text = capsys.readouterr().out
    shown = ", ".join(map(str, versions[:5])) + ", ... 3 more ..., " + ", ".join(map(str, versions[-5:]))
    assert f"versions ({len(versions)}): {shown}" in text
    assert re.search(r"\[1, 2\)\s+13 fragments", text)  # 13 one-row fragments
    assert len(re.findall(r"^  fragment \d+: ", text, re.M)) == 10
    assert main(["inspect", uri, "--all"]) == 0
    assert f"versions ({len(versions)}): {', '.join(map(str, versions))}" in capsys.readouterr().out


def test_inspect_file_cuts_long_column_lists(capsys, samples):
    path = str(samples[("2.2", "many")])
    ref = lance.file.LanceFileReader(path).metadata()
    assert main(["inspect", path]) == 0
    text = capsys.readouterr().out
    assert f"... {len(ref.columns) - 20} more columns (--all lists them)" in text
    assert main(["inspect", path, "--all"]) == 0
    assert len(re.findall(r"^  column \d+", capsys.readouterr().out, re.M)) == len(ref.columns)
