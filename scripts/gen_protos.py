#!/usr/bin/env python
"""Regenerate ``lancejit/pb/*_pb2.py`` from ``protos/*.proto``.

Runs ``python -m grpc_tools.protoc`` (grpcio-tools, a dev dependency) and rewrites the
imports between generated modules to relative ones (``from . import file_pb2``) so the
package works wherever it is installed.  The generated files are committed; at runtime
only ``protobuf`` is needed.

Usage: ``.venv/bin/python scripts/gen_protos.py [--out DIR]`` (default ``lancejit/pb``).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "protos"
OUT_DIR = ROOT / "lancejit" / "pb"

INIT_TEXT = '''"""Generated protobuf modules of the Lance format (from ``protos/``; see ``scripts/gen_protos.py``).

Never edit the ``*_pb2.py`` files by hand.  Message full names match the Lance reference
(``lance.file``, ``lance.file.v2``, ``lance.encodings``, ``lance.encodings21``, ``lance.table``)
so ``google.protobuf.Any`` type URLs found in files resolve to these classes.
"""

from . import file_pb2, file2_pb2, encodings_v2_0_pb2, encodings_v2_1_pb2  # noqa: F401
from . import table_pb2, rowids_pb2, transaction_pb2  # noqa: F401

__all__ = [
    "encodings_v2_0_pb2",
    "encodings_v2_1_pb2",
    "file2_pb2",
    "file_pb2",
    "rowids_pb2",
    "table_pb2",
    "transaction_pb2",
]
'''


def _protoc_include() -> str:
    import grpc_tools

    return str(Path(grpc_tools.__file__).parent / "_proto")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output package directory")
    args = parser.parse_args(argv)
    out_dir: Path = args.out.resolve()
    protos = sorted(PROTO_DIR.glob("*.proto"))
    if not protos:
        print(f"no .proto files in {PROTO_DIR}", file=sys.stderr)
        return 1
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*_pb2.py*"):
        old.unlink()
    cmd = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"-I{PROTO_DIR}",
        f"-I{_protoc_include()}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        *[p.name for p in protos],
    ]
    subprocess.run(cmd, check=True, cwd=PROTO_DIR)

    local = {p.stem + "_pb2" for p in protos}
    pattern = re.compile(r"^import (\w+_pb2)( as \w+)?$", re.MULTILINE)

    def relative(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in local:
            return match.group(0)
        return f"from . import {name}{match.group(2) or ''}"

    for path in sorted(out_dir.glob("*_pb2.py")) + sorted(out_dir.glob("*_pb2.pyi")):
        text = path.read_text()
        new = pattern.sub(relative, text)
        if new != text:
            path.write_text(new)
    (out_dir / "__init__.py").write_text(INIT_TEXT)
    print(f"generated {len(protos)} modules into {out_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
