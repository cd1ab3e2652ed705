"""``lancejit bench dataset URI``: random takes and full scans, with read amplification and the
latency the model predicts, optionally beside the reference and a Parquet copy.

For every take size ``N`` (capped at the dataset's rows) the benchmark draws ``repeats`` sets
of ``N`` distinct random row offsets (seeded, the same sets for every system), times each take
and counts its physical requests and bytes; ``scan_repeats`` full scans of the chosen columns
follow.  Per operation it reports latency percentiles (p50/p90/p99 over the repeats), mean
requests and bytes read per operation, bytes returned (Arrow ``nbytes`` of the result) and read
amplification = bytes read / bytes returned.  For lancejit it also shows the plan's request
count (:mod:`lancejit.bench.explain`) and the latency the :class:`~lancejit.bench.model.LatencyModel`
predicts from it (I/O time only, decoding is not modelled; the median over the plans of the
repeats); ``planned`` is the mean planned request count over the repeats.  Every system opens
(and loads metadata) and does one warm-up take before timing.  Sizes are bytes, times seconds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from lancejit.core.errors import InvalidInputError, LanceJitError

DEFAULT_TAKE_SIZES = (1, 10, 100, 1000, 10000)


@dataclass(slots=True)
class OpStats:
    """Figures of one (operation, size, system): ``op`` is ``"take"`` or ``"scan"``; ``rows``
    rows asked for per operation; latencies in seconds; requests/bytes means per operation."""

    op: str
    rows: int
    system: str
    repeats: int
    p50: float
    p90: float
    p99: float
    requests: float
    bytes_read: float
    bytes_returned: float
    planned_requests: float | None = None
    predicted_s: float | None = None

    @property
    def amplification(self) -> float:
        return self.bytes_read / self.bytes_returned if self.bytes_returned else float("nan")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["amplification"] = self.amplification
        return d


@dataclass(slots=True)
class DatasetResult:
    """One ``bench dataset`` run (``kind`` ``"dataset"``)."""

    uri: str
    num_rows: int
    columns: list[str]
    data_storage_version: str
    systems: list[str]
    stats: list[OpStats] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    model: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        from lancejit.bench.report import clean_json

        return clean_json({
            "kind": "dataset",
            "uri": self.uri,
            "num_rows": self.num_rows,
            "columns": self.columns,
            "data_storage_version": self.data_storage_version,
            "systems": self.systems,
            "results": [s.to_dict() for s in self.stats],
            "errors": self.errors,
            "model": self.model,
        })

    def get(self, op: str, rows: int, system: str) -> OpStats | None:
        for s in self.stats:
            if s.op == op and s.rows == rows and s.system == system:
                return s
        return None

    def table(self) -> str:
        from lancejit.bench.report import format_table, human_bytes, human_seconds

        rows = []
        for s in self.stats:
            rows.append([
                s.op, s.rows, s.system, s.repeats, human_seconds(s.p50), human_seconds(s.p90),
                human_seconds(s.p99), human_seconds(s.predicted_s), f"{s.requests:.1f}",
                "-" if s.planned_requests is None else f"{s.planned_requests:.1f}",
                human_bytes(s.bytes_read), human_bytes(s.bytes_returned), f"{s.amplification:.2f}",
            ])
        title = (f"dataset {self.uri} (Lance {self.data_storage_version}, {self.num_rows} rows, "
                 f"columns {', '.join(self.columns)})")
        out = format_table(["op", "rows", "system", "reps", "p50", "p90", "p99", "pred. I/O", "requests",
                            "planned", "bytes read", "returned", "ampl"], rows, title)
        ratios = self.ratio_table()
        if ratios:
            out += "\n\n" + ratios
        if self.errors:
            out += "\n\n" + "\n".join(f"{k}: not run ({v})" for k, v in self.errors.items())
        return out

    def ratio_table(self) -> str:
        """lancejit / other system, per operation: latency p50, requests, bytes read."""
        from lancejit.bench.report import format_table, ratio

        others = [s for s in self.systems if s != "lancejit"]
        rows = []
        for s in self.stats:
            if s.system != "lancejit":
                continue
            for other in others:
                o = self.get(s.op, s.rows, other)
                if o is None:
                    continue
                rows.append([s.op, s.rows, f"lancejit / {other}", ratio(s.p50, o.p50),
                             ratio(s.requests, o.requests), ratio(s.bytes_read, o.bytes_read)])
        if not rows:
            return ""
        return format_table(["op", "rows", "ratio", "p50", "requests", "bytes read"], rows,
                            "ratios (below 1: lancejit is faster / reads less)")

    def plot(self, path: str) -> None:
        """PNG: take latency p50 (lancejit's prediction dashed), requests and read amplification
        against rows per take, one line per system."""
        from lancejit.bench.report import pyplot, save_figure

        plt = pyplot()
        fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
        for system in self.systems:
            pts = sorted((s for s in self.stats if s.op == "take" and s.system == system), key=lambda s: s.rows)
            if not pts:
                continue
            xs = [s.rows for s in pts]
            line = axes[0].plot(xs, [s.p50 * 1e3 for s in pts], marker="o", label=f"{system} p50")[0]
            if any(s.predicted_s is not None for s in pts):
                axes[0].plot(xs, [(s.predicted_s or float("nan")) * 1e3 for s in pts], linestyle="--",
                             color=line.get_color(), label=f"{system} predicted I/O")
            axes[1].plot(xs, [max(s.requests, 0.5) for s in pts], marker="o", label=system)
            axes[2].plot(xs, [s.amplification for s in pts], marker="o", label=system)
        titles = [("take latency (ms)", "p50 latency per take (ms)"), ("requests per take", "requests"),
                  ("read amplification", "bytes read / bytes returned")]
        for ax, (title, ylabel) in zip(axes, titles):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("rows per take")
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle(f"lancejit bench dataset: {self.uri} (Lance {self.data_storage_version})", fontsize=9)
        save_figure(fig, path)


def _summary(op: str, rows: int, system: str, secs: list[float], reqs: list[int], nbytes: list[int],
             returned: list[int]) -> OpStats:
    p50, p90, p99 = (float(v) for v in np.percentile(np.asarray(secs), [50, 90, 99]))
    return OpStats(op, rows, system, len(secs), p50, p90, p99, float(np.mean(reqs)), float(np.mean(nbytes)),
                   float(np.mean(returned)))


def _scan_steps(ds: Any, columns: Sequence[str] | None, max_request: int) -> list[list[int]]:
    """Request sizes of a full scan as one step: each column's encoded bytes per data file in
    requests of at most ``max_request`` bytes (8 MiB windows)."""
    from lancejit.bench.explain import _field_columns
    from lancejit.io.sync import run_sync
    from lancejit.table.read.datafile import open_data_file

    sizes: list[int] = []
    names = set(columns) if columns else None
    for frag in ds.context.manifest.fragments:
        for df in frag.files:
            handle = run_sync(open_data_file(ds.context, df))
            md = handle.reader.file_metadata
            try:
                cols = _field_columns(md)
            except ImportError:  # pragma: no cover
                continue
            for name, rng in cols.items():
                if names is not None and name not in names:
                    continue
                total = sum(sum(p.buffer_sizes) for c in rng for p in md.columns[c].pages)
                while total > 0:
                    sizes.append(min(total, max_request))
                    total -= max_request
    return [sizes]


def bench_dataset(
    uri: str,
    storage_options: dict[str, Any] | None = None,
    *,
    sizes: Sequence[int] = DEFAULT_TAKE_SIZES,
    columns: Sequence[str] | None = None,
    repeats: int = 5,
    scan_repeats: int = 1,
    scan: bool = True,
    compare: bool = False,
    model: Any = None,
    parquet_row_group_size: int | None = None,
    seed: int = 0,
    on_progress: Callable[[int], None] | None = None,
) -> DatasetResult:
    """Run the dataset benchmark (see the module docstring); ``model``: a
    :class:`~lancejit.bench.model.LatencyModel` (None: no predictions)."""
    from lancejit.bench.explain import TakeTarget, plan_take
    from lancejit.bench.systems import LancejitSystem, ParquetSystem, ReferenceSystem, reference_available
    from lancejit.io.sync import run_sync

    if repeats < 1 or scan_repeats < 1:
        raise InvalidInputError("repeats must be >= 1")
    tick = on_progress or (lambda n: None)
    lj = LancejitSystem(uri, storage_options)
    ds = lj.ds
    num_rows = int(ds.count_rows())
    if num_rows == 0:
        raise InvalidInputError(f"dataset {uri} has no rows")
    cols = list(columns) if columns else list(ds.schema.names)
    systems: list[Any] = [lj]
    result = DatasetResult(ds.uri, num_rows, cols, ds.data_storage_version, [], model=model.to_dict() if model else None)
    try:
        if compare:
            if reference_available():
                try:
                    systems.append(ReferenceSystem(uri, storage_options))
                except Exception as exc:  # e.g. an emulator the reference cannot talk to
                    result.errors["reference"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            else:
                result.errors["reference"] = "pylance is not installed"
            try:
                systems.append(ParquetSystem(uri, storage_options, ds.to_table(cols), parquet_row_group_size))
            except (LanceJitError, OSError, ValueError) as exc:
                result.errors["parquet"] = f"{type(exc).__name__}: {exc}"
        result.systems = [s.name for s in systems]
        rng = np.random.default_rng(seed)
        warm = np.array([num_rows // 2], dtype=np.int64)
        for s in systems:
            s.take(warm, cols)
        target = TakeTarget(ds.uri, "dataset", ds.store, ds)
        for n in sorted({min(int(x), num_rows) for x in sizes if int(x) > 0}):
            draws = [np.sort(rng.choice(num_rows, n, replace=False)).astype(np.int64) for _ in range(repeats)]
            plans = []
            for s in systems:
                secs, reqs, nbytes, returned = [], [], [], []
                for idx in draws:
                    if s is lj:  # planned just before it runs (metadata and page caches warm)
                        plans.append(run_sync(plan_take(target, idx, cols, model)))
                    op = s.take(idx, cols)
                    secs.append(op.seconds)
                    reqs.append(op.requests)
                    nbytes.append(op.bytes_read)
                    returned.append(op.table.nbytes)
                    tick(1)
                st = _summary("take", n, s.name, secs, reqs, nbytes, returned)
                if s is lj:
                    st.planned_requests = float(np.mean([p.num_requests for p in plans]))
                    if model is not None:
                        st.predicted_s = float(np.median([p.predicted_seconds for p in plans]))
                result.stats.append(st)
        if scan:
            for s in systems:
                secs, reqs, nbytes, returned = [], [], [], []
                for _ in range(scan_repeats):
                    op = s.scan(cols)
                    secs.append(op.seconds)
                    reqs.append(op.requests)
                    nbytes.append(op.bytes_read)
                    returned.append(op.table.nbytes)
                    tick(1)
                st = _summary("scan", num_rows, s.name, secs, reqs, nbytes, returned)
                if s is lj and model is not None:
                    st.predicted_s = model.predict(_scan_steps(ds, cols, ds.store.config.max_request_size))
                result.stats.append(st)
    finally:
        for s in systems:
            s.close()
    return result


def total_operations(num_sizes: int, repeats: int, scan_repeats: int, scan: bool, num_systems: int) -> int:
    """Progress-bar length: timed operations of a run."""
    return num_systems * (num_sizes * repeats + (scan_repeats if scan else 0))


__all__ = ["DEFAULT_TAKE_SIZES", "DatasetResult", "OpStats", "bench_dataset", "total_operations"]
