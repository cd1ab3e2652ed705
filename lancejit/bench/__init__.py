"""Benchmarks and read plans: ``lancejit bench store|dataset`` and ``lancejit explain take``.

* :mod:`lancejit.bench.store_bench` — latency percentiles / IOPS / throughput of a store,
  measured through lancejit's own :class:`~lancejit.io.FileScheduler`.
* :mod:`lancejit.bench.dataset_bench` — random takes and full scans of a dataset (optionally
  beside the reference and a Parquet copy), with read amplification and predicted latency.
* :mod:`lancejit.bench.explain` — the plan of a take (pages, ranges, coalesced requests) before
  it runs, and measured against planned afterwards.
* :mod:`lancejit.bench.observe` — the probes ``explain`` plans through: the batches the file
  reader hands to its scheduler, planned as the scheduler plans them.
* :mod:`lancejit.bench.model` — the latency model fitted to ``bench store`` figures.
* :mod:`lancejit.bench.report` — terminal tables, JSON, PNG plots (matplotlib) and progress
  bars (tqdm); plotting and progress need the ``bench`` extra.

Byte ranges are half-open ``(start, end)``; sizes are bytes; times are seconds.
"""

from __future__ import annotations

__all__ = ["dataset_bench", "explain", "model", "observe", "report", "store_bench"]
