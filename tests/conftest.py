"""Shared pytest fixtures: loopback S3/GCS emulators and fresh store roots.

See ``tests/emulators.py`` (module docstring) for the fixture API:
``s3_endpoint``, ``gcs_endpoint`` (session), ``any_store_root`` (parametrized over local, memory,
s3, gcs), ``store_root`` / ``store_uri`` (parametrize indirectly with kinds).
Tests that use an emulator (directly or through a kind) get the ``s3`` / ``gcs`` marker, so
``-m "not s3 and not gcs"`` runs without starting any server.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

# Keep gcsfs on its plain HTTP client whoever imports it first.
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
# Kernel tests call kernels with types no caller uses: compile them here, as before, rather than
# interpreting them while a background process compiles (tests/api/test_background_compile.py
# turns it on in its own processes).
os.environ.setdefault("LANCEJIT_BACKGROUND_COMPILE", "0")


def _load_emulators():
    # Tests run with --import-mode=importlib, so ``tests`` is not importable as a package:
    # load the sibling module by path under a stable name (``import tests_emulators`` then works
    # in any test module too).
    name = "tests_emulators"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("emulators.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


emulators = _load_emulators()


def _load_hostile():
    # the hostile-size harness (tests/hostile.py), importable as ``tests_hostile``
    name = "tests_hostile"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("hostile.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_load_hostile()
StoreRoot = emulators.StoreRoot
Endpoint = emulators.Endpoint

_KIND_MARKS = {"s3": pytest.mark.s3, "gcs": pytest.mark.gcs}


def store_kind_params(kinds=emulators.STORE_KINDS):
    """``pytest.param`` objects for ``kinds`` with the s3/gcs markers attached."""
    return [pytest.param(k, id=k, marks=[_KIND_MARKS[k]] if k in _KIND_MARKS else []) for k in kinds]


@pytest.fixture(scope="session")
def s3_endpoint():
    """A moto S3 server on 127.0.0.1 for the whole session (an ``emulators.Endpoint``)."""
    with emulators.s3_server() as ep:
        yield ep


@pytest.fixture(scope="session")
def gcs_endpoint():
    """A fake-gcs-server on 127.0.0.1 for the whole session (an ``emulators.Endpoint``)."""
    with emulators.gcs_server() as ep:
        yield ep


def _make_root(request, kind: str, tmp_path) -> "StoreRoot":
    if kind == "local":
        return emulators.local_root(tmp_path)
    if kind == "memory":
        return emulators.memory_root()
    if kind == "s3":
        return request.getfixturevalue("s3_endpoint").new_root()
    if kind == "gcs":
        return request.getfixturevalue("gcs_endpoint").new_root()
    raise ValueError(f"unknown store kind {kind!r}; expected one of {emulators.STORE_KINDS}")


@pytest.fixture(params=store_kind_params())
def any_store_root(request, tmp_path):
    """A fresh, unique root (``emulators.StoreRoot``) on each of local, memory, s3 and gcs."""
    return _make_root(request, request.param, tmp_path)


@pytest.fixture
def store_root(request, tmp_path):
    """A fresh root for the kind given by indirect parametrization (default ``local``)."""
    kind = getattr(request, "param", "local")
    return _make_root(request, kind, tmp_path)


@pytest.fixture
def store_uri(request, tmp_path):
    """Alias of ``store_root`` (same indirect parametrization)."""
    kind = getattr(request, "param", "local")
    return _make_root(request, kind, tmp_path)


@pytest.fixture
def knobs():
    """``knobs(name=value, ...)`` sets lancejit's configuration knobs (:mod:`lancejit.core.config`)
    for the rest of the test, process-wide; they are back to their defaults afterwards."""
    from lancejit.core import config as lj_config

    yield lj_config.configure
    lj_config.reset()


def pytest_collection_modifyitems(config, items):
    # Tests using an emulator, directly or through an indirect "s3"/"gcs" kind, get its marker.
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "s3_endpoint" in names:
            item.add_marker(pytest.mark.s3)
        if "gcs_endpoint" in names:
            item.add_marker(pytest.mark.gcs)
        callspec = getattr(item, "callspec", None)
        if callspec is None:
            continue
        for name in ("store_root", "store_uri"):
            kind = callspec.params.get(name)
            if isinstance(kind, str) and kind in _KIND_MARKS:
                item.add_marker(_KIND_MARKS[kind])
