"""``lancejit.spark.explain(df)``: what lancejit reads for each lancejit scan of a DataFrame.

pyspark (4.1 - 4.3) gives a Python data source no say in ``df.explain()``: the scan node prints
the constant description ``(Python)``, Spark's ``PushedFilters`` and the ``ReadSchema``.  This
helper finds the lancejit scans in the DataFrame's optimized plan (their options and output
columns, through the JVM) and plans them as the reader does: dataset and version, the columns
and filter lancejit applies, the fragments and the partitions (tasks) the read makes.
"""

from __future__ import annotations

from typing import Any

from .source import SOURCE_NAME


def _jmap(jmap: Any) -> dict[str, str]:
    out = {}
    it = jmap.entrySet().iterator()
    while it.hasNext():
        e = it.next()
        out[str(e.getKey())] = str(e.getValue())
    return out


def lancejit_scans(df: Any) -> list[tuple[dict[str, str], list[str], str]]:
    """Per lancejit scan of ``df``'s optimized plan: ``(options, output columns, pushed filters
    as Spark prints them)``."""
    plan = df._jdf.queryExecution().optimizedPlan()
    leaves = plan.collectLeaves()
    out = []
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        kind = leaf.getClass().getSimpleName()
        if kind == "DataSourceV2ScanRelation":
            rel, scan = leaf.relation(), leaf.scan()
        elif kind == "DataSourceV2Relation":
            rel, scan = leaf, None
        else:
            continue
        if str(rel.table().name()) != SOURCE_NAME:
            continue
        attrs = leaf.output()
        cols = [str(attrs.apply(j).name()) for j in range(attrs.size())]
        pushed = ""
        if scan is not None:
            try:
                pushed = str(scan.getMetaData().get("PushedFilters").get())
            except Exception:  # noqa: BLE001 - not every scan reports it
                pushed = ""
        out.append((_jmap(rel.options().asCaseSensitiveMap()), cols, pushed))
    return out


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover


def explain(df: Any) -> str:
    """A description of every lancejit scan ``df`` runs (see the module docstring)."""
    from lancejit.io.sync import run_sync
    from lancejit.table.read.version_index import dataset_index

    from .options import ReadOptions
    from .partitions import default_min_partitions
    from .reader import open_dataset, plan_read

    lines = []
    for options, cols, pushed in lancejit_scans(df):
        opts = ReadOptions.parse(options)
        ds = open_dataset(opts.uri, opts.version, opts.storage_options)
        index = run_sync(dataset_index(ds.context), store=ds.store)
        plan = plan_read(opts, ds)
        rows = [sum(p.hi - p.lo for p in part) for part in plan.partitions]
        lines.append(f"lancejit scan of {opts.uri} version {ds.version}")
        lines.append(f"  columns read: {', '.join(cols)}" + ("" if opts.columns is not None else
                                                              "  (every column: Spark does not push projections; "
                                                              "use option('columns', ...))"))
        lines.append(f"  filter applied by lancejit: {opts.filter or '(none)'}")
        if pushed and pushed != "[]":
            lines.append(f"  filters Spark pushed: {pushed}")
        lines.append(f"  fragments: {len(index)} ({index.total_rows:,} rows, {_size(plan.total_bytes)} "
                     "with open costs)")
        lines.append(f"  partitions (tasks): {len(plan.partitions)}, at most {_size(plan.max_split_bytes)} each, "
                     f"{min(rows, default=0):,}-{max(rows, default=0):,} rows (maxPartitionBytes="
                     f"{opts.max_partition_bytes}, openCostInBytes={opts.open_cost}, minPartitionNum="
                     f"{opts.min_partitions or default_min_partitions()})")
    return "\n".join(lines) if lines else "(no lancejit scan)"


__all__ = ["explain", "lancejit_scans"]
