"""Hostile-size files: byte-level edits of real Lance files and datasets that claim huge row
counts or sizes, read in a child process whose address space is capped.

A hostile file must be refused (a lancejit ``CorruptFileError`` naming the file) or answered,
with at most :data:`ADDED_MEMORY` bytes of added memory: the child warms up on the unedited
originals, then for each case caps its address space (``RLIMIT_AS``) at its current size plus
:data:`ADDED_MEMORY`, runs the case, records the time, the outcome and the peak resident memory
added (``VmHWM`` after resetting it through ``/proc/self/clear_refs``), and lifts the cap.  An
allocation over the cap fails (``MemoryError``), which the parent reports as a failure.  The
child's wall time is guarded (``faulthandler`` per case, a timeout on the whole child); times
are reported, never asserted.

Loaded by path as ``tests_hostile`` (``tests/conftest.py``).

Editing helpers:

* :func:`rebuild_v2` re-assembles a 2.x file with edited column metadata / file descriptor
  (the data pages keep their bytes and positions).
* :func:`int_fields` lists every integer field of a protobuf message tree, to set each one to
  a hostile value (:data:`HUGE`).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

#: Memory a hostile case may add to the process (bytes).
ADDED_MEMORY = 100 * 1024 * 1024

#: Seconds one case may run before the child is stopped (a hang guard, not a timing assertion).
CASE_HANG_S = 120

#: Claimed counts: up to 2**40, and the edges of 32-bit fields.
HUGE = (2**31, 2**32 - 1, 2**40)


@dataclass
class Case:
    """One hostile input: ``kind`` is ``"file"`` (a Lance file) or ``"dataset"``; ``uri`` the
    edited copy; ``names`` the strings one of which a refusal must name (the edited file)."""

    name: str
    kind: str
    uri: str
    names: tuple[str, ...] = ()
    warm: bool = False
    #: lancejit error classes a refusal may raise (by name); others fail the case.
    allowed: tuple[str, ...] = ("CorruptFileError",)


@dataclass
class Outcome:
    name: str
    status: str  # "answered", "refused" or "failed"
    seconds: float
    added_bytes: int
    detail: str = ""
    case: Case | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        if self.status == "answered":
            return self.added_bytes <= ADDED_MEMORY
        if self.status == "refused":
            names = self.case.names if self.case else ()
            allowed = self.case.allowed if self.case else ("CorruptFileError",)
            cls = self.detail.partition(":")[0]
            return (self.added_bytes <= ADDED_MEMORY and cls in allowed
                    and (not names or any(n in self.detail for n in names)))
        return False


CHILD = r"""
import faulthandler, gc, json, os, resource, sys, time, traceback

import numpy as np

import lancejit
from lancejit.core.errors import LanceJitError

HANG, LIMIT = float(sys.argv[1]), int(sys.argv[2])
cases = json.loads(sys.stdin.read())


def status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def file_ops(uri):
    r = lancejit.LanceFileReader(uri)
    n = r.num_rows
    r.metadata()
    r.read_range(0, min(n, 5))
    if n:
        r.take_rows(sorted({0, min(n, 5) - 1, n - 1}))
    for _ in r.to_batches(batch_size=1024):
        break


def dataset_ops(uri):
    ds = lancejit.dataset(uri)
    n = ds.count_rows()
    ds.to_table(limit=5)
    if n:
        ds.take(sorted({0, n - 1}))
    for _ in ds.to_batches(batch_size=1024):
        break
    ds.count_rows(filter="true")
    ds.to_table(limit=5, with_row_id=True)
    ds.take_rows([0])


OPS = {"file": file_ops, "dataset": dataset_ops}

for case in cases:
    if case["warm"]:
        OPS[case["kind"]](case["uri"])
gc.collect()
unlimited = resource.getrlimit(resource.RLIMIT_AS)
for case in cases:
    if case["warm"]:
        continue
    print(json.dumps({"start": case["name"]}), flush=True)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    rss0 = status_kb("VmRSS")
    cap = status_kb("VmSize") * 1024 + LIMIT
    faulthandler.dump_traceback_later(HANG, exit=True)
    resource.setrlimit(resource.RLIMIT_AS, (cap, unlimited[1]))
    t0 = time.perf_counter()
    try:
        OPS[case["kind"]](case["uri"])
        status, detail = "answered", ""
    except LanceJitError as exc:
        status, detail = "refused", f"{type(exc).__name__}: {exc}"[:600]
    except BaseException as exc:
        status, detail = "failed", "".join(traceback.format_exception(exc))[-1500:]
    seconds = time.perf_counter() - t0
    resource.setrlimit(resource.RLIMIT_AS, unlimited)
    faulthandler.cancel_dump_traceback_later()
    added = max(0, status_kb("VmHWM") - rss0) * 1024
    print(json.dumps({"name": case["name"], "status": status, "seconds": seconds, "added": added,
                      "detail": detail}), flush=True)
"""


def run_cases(cases: list[Case], *, timeout: float = 1800) -> list[Outcome]:
    """Run ``cases`` (warm ones first, unmeasured) in one child process; one outcome per
    unwarmed case.  A child that dies mid-case gives that case a ``failed`` outcome."""
    payload = json.dumps([{"name": c.name, "kind": c.kind, "uri": c.uri, "warm": c.warm} for c in cases])
    env = dict(os.environ, LANCEJIT_DECODE_THREADS="0", PYTHONWARNINGS="ignore")
    proc = subprocess.run([sys.executable, "-c", CHILD, str(CASE_HANG_S), str(ADDED_MEMORY)],
                          input=payload, capture_output=True, text=True, timeout=timeout, env=env)
    by_name = {c.name: c for c in cases}
    out: list[Outcome] = []
    started = None
    for line in proc.stdout.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if "start" in rec:
            started = rec["start"]
            continue
        out.append(Outcome(rec["name"], rec["status"], rec["seconds"], rec["added"], rec["detail"],
                           by_name.get(rec["name"])))
        started = None
    if started is not None or proc.returncode != 0:
        out.append(Outcome(started or "<child>", "failed", float("nan"), 0,
                           f"child exited {proc.returncode}: {proc.stderr[-3000:]}", by_name.get(started)))
    return out


def _brief(detail: str) -> str:
    """The raising frame of a traceback and its last line."""
    lines = [ln for ln in detail.splitlines() if ln.strip()]
    frames = [ln.strip() for ln in lines if ln.strip().startswith('File "')]
    if not frames:  # a refusal: the error's class and message
        return detail[:700]
    return f"{frames[-1]} | {lines[-1]}"[-700:]


def failures(outcomes: list[Outcome]) -> list[str]:
    return [f"{o.name}: {o.status} {o.added_bytes >> 20} MiB {o.seconds:.2f} s {_brief(o.detail)}"
            for o in outcomes if not o.ok]


def report(outcomes: list[Outcome], path: str | None = None) -> str:
    """A markdown table of the outcomes (also appended to ``$LANCEJIT_HOSTILE_REPORT`` if set)."""
    lines = ["| case | outcome | time (ms) | added memory (MiB) |", "|---|---|---|---|"]
    for o in outcomes:
        lines.append(f"| {o.name} | {o.status} | {o.seconds * 1000:.1f} | {o.added_bytes / 2**20:.1f} |")
    text = "\n".join(lines) + "\n"
    target = path or os.environ.get("LANCEJIT_HOSTILE_REPORT")
    if target:
        with open(target, "a") as f:
            f.write(text)
    return text


# ------------------------------------------------------------------------ protobuf integer fields


def int_fields(msg: Any, where: str = "") -> Iterator[tuple[str, Any, Any]]:
    """``(dotted path, message, field descriptor)`` of every set integer field (scalar or
    repeated) in ``msg`` and its sub-messages, including messages inside ``Any`` wrappers
    is left to the caller."""
    from google.protobuf.descriptor import FieldDescriptor as FD

    ints = {FD.TYPE_UINT32, FD.TYPE_UINT64, FD.TYPE_INT32, FD.TYPE_INT64, FD.TYPE_FIXED32,
            FD.TYPE_FIXED64, FD.TYPE_SINT32, FD.TYPE_SINT64}
    for fd, value in msg.ListFields():
        name = f"{where}.{fd.name}" if where else fd.name
        if fd.type in ints:
            yield name, msg, fd
        elif fd.message_type is not None and not fd.message_type.GetOptions().map_entry:
            if fd.is_repeated:
                for i, item in enumerate(value):
                    yield from int_fields(item, f"{name}[{i}]")
            else:
                yield from int_fields(value, name)


def huge_values(fd: Any) -> list[int]:
    """The hostile values a field of ``fd``'s type can hold."""
    from google.protobuf.descriptor import FieldDescriptor as FD

    if fd.type in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
        return [2**31, 2**32 - 1]
    if fd.type in (FD.TYPE_INT32, FD.TYPE_SINT32):
        return [2**31 - 1, -(2**31)]
    if fd.type in (FD.TYPE_INT64, FD.TYPE_SINT64):
        return [2**31, 2**40, -1]
    return list(HUGE)


def set_int(msg: Any, fd: Any, value: int, index: int | None = None) -> None:
    if fd.is_repeated:
        container = getattr(msg, fd.name)
        for i in range(len(container)) if index is None else [index]:
            container[i] = value
    else:
        setattr(msg, fd.name, value)


# ------------------------------------------------------------------------------- 2.x files


@dataclass
class V2File:
    """A 2.x file taken apart: page bytes, global buffers, descriptor and column metadata."""

    data: bytes
    major: int
    minor: int
    global_buffers: list[bytes]
    columns: list[Any]  # file2_pb2.ColumnMetadata
    body_end: int  # where the data pages end (first global buffer)

    @classmethod
    def parse(cls, data: bytes) -> "V2File":
        from lancejit.pb import file2_pb2

        n = len(data)
        cm_start, cmo, gbo, n_gb, n_col, major, minor = struct.unpack_from("<QQQIIHH", data, n - 40)
        gbs = [struct.unpack_from("<QQ", data, gbo + 16 * i) for i in range(n_gb)]
        cols = []
        for c in range(n_col):
            pos, size = struct.unpack_from("<QQ", data, cmo + 16 * c)
            cm = file2_pb2.ColumnMetadata()
            cm.ParseFromString(data[pos : pos + size])
            cols.append(cm)
        body_end = min([p for p, _ in gbs] + [cm_start])
        return cls(data, major, minor, [data[p : p + s] for p, s in gbs], cols, body_end)

    def descriptor(self) -> Any:
        from lancejit.pb import file_pb2

        fd = file_pb2.FileDescriptor()
        fd.ParseFromString(self.global_buffers[0])
        return fd

    def set_descriptor(self, fd: Any) -> None:
        self.global_buffers[0] = fd.SerializeToString()

    def page_encoding(self, col: int, page: int) -> tuple[str, Any]:
        """``(type_url, message)`` of a page's encoding (ArrayEncoding or PageLayout)."""
        return unwrap(self.columns[col].pages[page].encoding.direct.encoding)

    def set_page_encoding(self, col: int, page: int, url: str, msg: Any) -> None:
        self.columns[col].pages[page].encoding.direct.encoding = wrap(url, msg)

    def build(self) -> bytes:
        """The file's bytes: pages unchanged, then global buffers, column metadata, tables, footer."""
        out = bytearray(self.data[: self.body_end])
        gb = []
        for buf in self.global_buffers:
            out += b"\0" * (-len(out) % 64)
            gb.append((len(out), len(buf)))
            out += buf
        cm_start = len(out)
        cms = []
        for cm in self.columns:
            raw = cm.SerializeToString()
            cms.append((len(out), len(raw)))
            out += raw
        cmo = len(out)
        for p, s in cms:
            out += struct.pack("<QQ", p, s)
        gbo = len(out)
        for p, s in gb:
            out += struct.pack("<QQ", p, s)
        out += struct.pack("<QQQIIHH", cm_start, cmo, gbo, len(gb), len(cms), self.major, self.minor)
        out += b"LANC"
        return bytes(out)


def unwrap(data: bytes) -> tuple[str, Any]:
    from google.protobuf import any_pb2

    from lancejit.pb import encodings_v2_0_pb2, encodings_v2_1_pb2

    types = {
        "/lance.encodings.ColumnEncoding": encodings_v2_0_pb2.ColumnEncoding,
        "/lance.encodings.ArrayEncoding": encodings_v2_0_pb2.ArrayEncoding,
        "/lance.encodings21.PageLayout": encodings_v2_1_pb2.PageLayout,
    }
    wrapper = any_pb2.Any()
    wrapper.ParseFromString(data)
    msg = types[wrapper.type_url]()
    msg.ParseFromString(wrapper.value)
    return wrapper.type_url, msg


def wrap(url: str, msg: Any) -> bytes:
    from google.protobuf import any_pb2

    wrapper = any_pb2.Any(type_url=url, value=msg.SerializeToString())
    return wrapper.SerializeToString()


def write_case(directory: Path, name: str, data: bytes, suffix: str = ".lance") -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
    path = directory / f"{safe}{suffix}"
    path.write_bytes(data)
    return str(path)


# ------------------------------------------------------------------- corpora of real files

#: Rows of the ``narrow`` corpus table and of the ``wide`` one.
N = 3000
WIDE_N = 300


def corpus_tables(seed: int = 3, struct_nulls: bool = True) -> dict[str, Any]:
    """One column per layout and compression: bit-packed, plain, float, FSST, dictionary, RLE,
    constant, all-null, lists, structs, lists of strings (``narrow``, N rows); full-zip
    binaries, vectors and blobs (``wide``, fewer rows).  ``struct_nulls=False`` for 2.0 files
    (which do not store struct validity)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)

    def nulls_in(arr: pa.Array, p: float = 0.2) -> pa.Array:
        mask = pa.array(rng.random(len(arr)) < p)
        return pc.if_else(mask, pa.nulls(len(arr), arr.type), arr)

    def lists(child: pa.Array, n: int) -> pa.Array:
        lens = rng.integers(0, 6, n)
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        return nulls_in(pa.ListArray.from_arrays(pa.array(offsets), child.slice(0, int(offsets[-1]))))

    letters = np.array(list("abcdefghij"))

    def strings(n: int, card: int | None = None) -> pa.Array:
        pool = ["".join(rng.choice(letters, size=int(rng.integers(0, 12)))) for _ in range(card or n)]
        return nulls_in(pa.array([pool[i] for i in rng.integers(0, len(pool), n)]))

    narrow = pa.table({
        "bp": pa.array(rng.integers(0, 100, N), pa.int64()),
        "plain": nulls_in(pa.array(rng.integers(-(2**40), 2**40, N), pa.int64())),
        "f32": nulls_in(pa.array(rng.standard_normal(N).astype(np.float32))),
        "fsst": pa.array([f"prefix-{i * 7919}-common-suffix-{i % 7}" for i in range(N)]),
        "dict": strings(N, card=5),
        "rle": pa.array(np.repeat(np.arange(N // 100, dtype=np.int32), 100)),
        "const": pa.array(np.full(N, 7, np.int32)),
        "nulls": pa.nulls(N, pa.int64()),
        "lst": lists(pa.array(rng.integers(-1000, 1000, 5 * N), pa.int32()), N),
        "st": pa.StructArray.from_arrays(
            [nulls_in(pa.array(rng.integers(0, 1000, N), pa.int32())), nulls_in(pa.array(rng.random(N) < 0.5))],
            names=["x", "y"], mask=pa.array(rng.random(N) < 0.2) if struct_nulls else None),
        "ls": lists(strings(5 * N), N),
    })
    n = WIDE_N
    big = [bytes(rng.integers(0, 256, size=int(rng.integers(300, 400)), dtype=np.uint8)) for _ in range(n)]
    wide = pa.table(
        [pa.array(big, pa.large_binary()),
         pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(64 * n).astype(np.float32)), 64),
         pa.array(big, pa.large_binary())],
        schema=pa.schema([pa.field("big", pa.large_binary()), pa.field("vec", pa.list_(pa.float32(), 64)),
                          pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})]))
    return {"narrow": narrow, "wide": wide}


def write_pylance(path: Path, table: Any, version: str) -> Path:
    import numpy as np
    import pyarrow as pa
    from lance.file import LanceFileWriter

    with LanceFileWriter(str(path), table.schema, version=version) as w:
        step = table.num_rows // 3
        for a in range(0, table.num_rows, step):
            # take() gives offset-0 arrays (pylance mis-handles sliced struct validity)
            w.write_batch(table.take(pa.array(np.arange(a, min(a + step, table.num_rows)))))
    return path


def write_lancejit(path: Path, table: Any, version: str) -> Path:
    import lancejit

    with lancejit.LanceFileWriter(str(path), table.schema, version=version) as w:
        w.write_batch(table)
    return path


WRITERS = {"pylance": write_pylance, "lancejit": write_lancejit}


# ------------------------------------------------------------------- edits of 2.x files


def _first_pages(f: V2File):
    for c, cm in enumerate(f.columns):
        if len(cm.pages):
            yield c, 0


def layout_cases(f: V2File):
    """(name, edited bytes): every integer field of each column's first page layout."""
    for c, p in _first_pages(f):
        url, enc = f.page_encoding(c, p)
        seen = set()
        for path, _msg, fd in list(int_fields(enc)):
            for v in huge_values(fd):
                if (path, v) in seen:
                    continue
                seen.add((path, v))
                g = V2File.parse(f.data)
                url2, enc2 = g.page_encoding(c, p)
                target = dict((q, (m, d)) for q, m, d in int_fields(enc2))[path]
                set_int(target[0], target[1], v)
                g.set_page_encoding(c, p, url2, enc2)
                yield f"c{c}.{path}={v}", g.build()


def page_meta_cases(f: V2File):
    """Page lengths, buffer offsets and sizes; the descriptor's row count (alone and with
    every column's pages made to agree)."""
    for c, p in _first_pages(f):
        page = f.columns[c].pages[p]
        for v in HUGE:
            g = V2File.parse(f.data)
            g.columns[c].pages[p].length = v
            yield f"c{c}.length={v}", g.build()
            for b in range(len(page.buffer_sizes)):
                for fieldname in ("buffer_sizes", "buffer_offsets"):
                    g = V2File.parse(f.data)
                    getattr(g.columns[c].pages[p], fieldname)[b] = v
                    yield f"c{c}.{fieldname}[{b}]={v}", g.build()
    for c, cm in enumerate(f.columns):  # column buffers (2.0 dictionaries, 2.1 column metadata)
        for b in range(len(cm.buffer_sizes)):
            for fieldname in ("buffer_sizes", "buffer_offsets"):
                for v in HUGE:
                    g = V2File.parse(f.data)
                    getattr(g.columns[c], fieldname)[b] = v
                    yield f"c{c}.column_{fieldname}[{b}]={v}", g.build()
    for v in HUGE:
        g = V2File.parse(f.data)
        d = g.descriptor()
        d.length = v
        g.set_descriptor(d)
        yield f"descriptor.length={v}", g.build()


def claim_cases(f: V2File):
    """A file that claims more rows than it holds, consistently: every column's first page and
    the descriptor claim ``v - held`` more rows, and every count in the page layouts equal to
    the page's row count says the same (all-null/constant pages hold nothing per row, so
    such a file can be valid: reads must allocate for the rows asked)."""
    held = f.descriptor().length
    for v in HUGE:
        g = V2File.parse(f.data)
        for c, p in _first_pages(g):
            page = g.columns[c].pages[p]
            old = page.length
            page.length = old + v - held
            url, enc = g.page_encoding(c, p)
            for _, msg, fd in int_fields(enc):
                if not fd.is_repeated and getattr(msg, fd.name) == old:
                    try:
                        setattr(msg, fd.name, page.length)
                    except ValueError:  # a 32-bit count: as large as it goes
                        setattr(msg, fd.name, 2**32 - 1)
            g.set_page_encoding(c, p, url, enc)
        d = g.descriptor()
        d.length = v
        g.set_descriptor(d)
        yield f"claims={v}", g.build()


#: ``(struct format, position, value)`` of the words written into buffers: a negative
#: position counts from the buffer's end (chunk tables and repetition indices often end there).
WORDS = [("<H", 0, 0xFFFF), ("<H", 2, 0xFFFF), ("<I", 0, 0xFFFFFFF0), ("<I", 4, 0xFFFFFFF0),
         ("<I", 8, 0xFFFFFFF0), ("<Q", 0, 2**40), ("<Q", 8, 2**40),
         ("<H", -2, 0xFFFF), ("<I", -4, 0xFFFFFFF0), ("<Q", -8, 2**40), ("<Q", -16, 2**40)]


def word_at(size: int, fmt: str, at: int) -> int | None:
    """The buffer-relative position of a :data:`WORDS` entry in a buffer of ``size`` bytes."""
    pos = at if at >= 0 else size + at
    return pos if 0 <= pos and pos + struct.calcsize(fmt) <= size else None


def buffer_word_cases(f: V2File):
    """Counts inside page buffers: words at the start of each buffer of each first page."""
    for c, p in _first_pages(f):
        page = f.columns[c].pages[p]
        for b, (off, size) in enumerate(zip(page.buffer_offsets, page.buffer_sizes)):
            for fmt, at, v in WORDS:
                pos = word_at(size, fmt, at)
                if pos is None:
                    continue
                data = bytearray(f.data)
                struct.pack_into(fmt, data, off + pos, v)
                yield f"c{c}.buf{b}@{at}{fmt}={v:#x}", bytes(data)


def build_cases(tmp: Path, key: str, f: V2File, gens) -> list[Case]:
    cases = []
    for gen in gens:
        for name, data in gen(f):
            uri = write_case(tmp, f"{key}-{name}", data)
            cases.append(Case(f"{key} {name}", "file", uri, (Path(uri).name,)))
    return cases


