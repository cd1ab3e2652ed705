"""Loads ``raw_lance.py`` as module ``tests_core_raw`` (tests run with --import-mode=importlib)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def _load(name: str, filename: str) -> None:
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(filename))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


_load("tests_core_raw", "raw_lance.py")
