"""``open_store(uri, storage_options)``: pick, configure and cache the store for a URI.

Schemes: no scheme or ``file://`` -> :class:`~lancejit.io.local.LocalStore` (path = absolute OS
path); ``memory://name/key`` -> :class:`~lancejit.io.memory.MemoryStore`; ``s3://bucket/key`` ->
:class:`~lancejit.io.s3_store.S3Store`; ``s3+ddb://bucket/key?ddbTableName=TABLE`` -> an S3
store whose ``external_manifest`` (:class:`ExternalManifestConfig`) names the DynamoDB table that
commits go through (``lancejit.table.meta.external_store``); ``gs://`` and ``gcs://bucket/key`` ->
:class:`~lancejit.io.gcs_store.GCSStore`.  For bucket stores the returned path is the key.

``storage_options`` use the reference's keys; values may be strings (``"true"``, ``"65536"``):

* S3: ``aws_endpoint`` / ``endpoint`` / ``aws_endpoint_url`` / ``endpoint_url``;
  ``aws_region`` / ``region``; ``aws_access_key_id`` / ``access_key_id``;
  ``aws_secret_access_key`` / ``secret_access_key``; ``aws_session_token`` / ``session_token`` /
  ``token``; ``allow_http`` (required for an ``http://`` endpoint); ``anonymous`` / ``skip_signature``;
  ``conditional_put`` / ``aws_conditional_put``: ``"etag"`` (default) or ``"disabled"`` for stores
  without ``If-None-Match`` (plain commits then refuse; use ``s3+ddb://``).
* ``s3+ddb://``: the S3 keys plus ``dynamodb_endpoint`` (default: the ``DYNAMODB_ENDPOINT``
  environment variable, else AWS's endpoint for the region).
* GCS: ``gcs_endpoint`` / ``endpoint`` / ``google_endpoint``; ``google_service_account`` /
  ``service_account`` / ``google_service_account_path`` / ``google_application_credentials`` /
  ``token`` (anything gcsfs takes as ``token``); ``anonymous`` (token ``"anon"``);
  ``google_project_id`` / ``project``.
* All: ``block_size``, ``max_iop_size`` / ``max_request_size``, ``io_parallelism``,
  ``max_bytes_in_flight`` (override the :class:`~lancejit.core.config.IOConfig`), ``part_size``
  (S3/GCS upload part bytes), ``timeout`` (seconds per S3/GCS request attempt) and
  ``max_retries`` (retries of a transient S3/GCS failure).  Unknown keys raise
  :class:`InvalidInputError`; values must be strings (``bool``/``int`` accepted).

Stores are cached per (scheme, bucket, options) so a process reuses sessions and budgets.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from typing import Any, Mapping, Sequence
from urllib.parse import parse_qsl, unquote, urlsplit

from lancejit.core.config import IOConfig, cloud_io, local_io
from lancejit.core.errors import InvalidInputError
from lancejit.io.store import ObjectStore

_CACHE: dict[tuple[Any, ...], ObjectStore] = {}
#: The query key naming the DynamoDB table in ``s3+ddb://`` URIs (the reference's).
DDB_TABLE_QUERY_KEY = "ddbTableName"
_CACHE_LOCK = threading.Lock()

_TRUE = {"1", "true", "yes", "on", "t", "y"}
_FALSE = {"0", "false", "no", "off", "f", "n", ""}

_CONFIG_KEYS = {
    "block_size": "block_size",
    "max_iop_size": "max_request_size",
    "max_request_size": "max_request_size",
    "io_parallelism": "io_parallelism",
    "max_bytes_in_flight": "max_bytes_in_flight",
}
_S3_KEYS = {
    "aws_endpoint": "endpoint", "endpoint": "endpoint", "aws_endpoint_url": "endpoint",
    "endpoint_url": "endpoint",
    "aws_region": "region", "region": "region", "aws_default_region": "region",
    "aws_access_key_id": "key", "access_key_id": "key",
    "aws_secret_access_key": "secret", "secret_access_key": "secret",
    "aws_session_token": "token", "session_token": "token", "aws_token": "token", "token": "token",
    "allow_http": "allow_http", "aws_allow_http": "allow_http",
    "anonymous": "anonymous", "aws_skip_signature": "anonymous", "skip_signature": "anonymous",
    "part_size": "part_size",
    "aws_conditional_put": "conditional_put", "conditional_put": "conditional_put",
    # the external manifest store's (s3+ddb://); accepted (unused) by plain s3:// too, as the
    # data files of an s3+ddb:// dataset are opened through s3:// URIs with the same options
    "dynamodb_endpoint": "dynamodb_endpoint", "aws_dynamodb_endpoint": "dynamodb_endpoint",
    "timeout": "timeout", "request_timeout": "timeout", "max_retries": "max_retries",
}
_GCS_KEYS = {
    "gcs_endpoint": "endpoint", "endpoint": "endpoint", "google_endpoint": "endpoint",
    "endpoint_url": "endpoint",
    "google_service_account": "token", "service_account": "token",
    "google_service_account_path": "token", "service_account_path": "token",
    "google_application_credentials": "token", "application_credentials": "token", "token": "token",
    "anonymous": "anonymous", "skip_signature": "anonymous",
    "google_project_id": "project", "project": "project", "project_id": "project",
    "allow_http": "allow_http",
    "part_size": "part_size",
    "timeout": "timeout", "request_timeout": "timeout", "max_retries": "max_retries",
}


def parse_bool(value: Any, key: str = "option") -> bool:
    """``True``/``False`` from a bool or a string such as ``"true"``/``"0"``."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidInputError(f"storage option {key!r}: expected a boolean, got {value!r}")


def _parse_int(value: Any, key: str) -> int:
    try:
        out = int(str(value).strip())
    except ValueError:
        raise InvalidInputError(f"storage option {key!r}: expected an integer, got {value!r}") from None
    if out <= 0 and key != "block_size" or out < 0:
        raise InvalidInputError(f"storage option {key!r} must be positive, got {value!r}")
    return out


def _split_options(options: Mapping[str, Any], known: Mapping[str, str], scheme: str
                   ) -> tuple[dict[str, Any], dict[str, int]]:
    backend: dict[str, Any] = {}
    config: dict[str, int] = {}
    for raw_key, value in options.items():
        key = raw_key.strip().lower()
        if value is None:
            continue
        if key in _CONFIG_KEYS:
            config[_CONFIG_KEYS[key]] = _parse_int(value, key)
        elif key in known:
            backend[known[key]] = value
        else:
            raise InvalidInputError(f"unknown storage option {raw_key!r} for {scheme}://")
    return backend, config


def _retry_kwargs(opts: Mapping[str, Any]) -> dict[str, Any]:
    """``timeout`` (seconds per request attempt; ``"30"``, ``"2.5s"`` or ``"500ms"``) and
    ``max_retries`` (retries of a transient failure) for the S3 and GCS stores."""
    out: dict[str, Any] = {}
    if "timeout" in opts:
        text = str(opts["timeout"]).strip().lower()
        scale = 1e-3 if text.endswith("ms") else 1.0
        try:
            seconds = float(text.removesuffix("ms").removesuffix("s")) * scale
        except ValueError:
            seconds = -1.0
        if not seconds > 0:
            raise InvalidInputError(f"storage option 'timeout': expected seconds > 0, got {opts['timeout']!r}")
        out["timeout"] = seconds
    if "max_retries" in opts:
        try:
            out["max_retries"] = int(str(opts["max_retries"]).strip())
        except ValueError:
            out["max_retries"] = -1
        if out["max_retries"] < 0:
            raise InvalidInputError(
                f"storage option 'max_retries': expected an int >= 0, got {opts['max_retries']!r}")
    return out


def _with_overrides(base: IOConfig, overrides: dict[str, int]) -> IOConfig:
    return dataclasses.replace(base, **overrides) if overrides else base


def _cache_key(scheme: str, bucket: str, options: Mapping[str, Any]) -> tuple[Any, ...]:
    return (scheme, bucket, tuple(sorted((str(k).lower(), str(v)) for k, v in options.items())))


def _make_local(options: Mapping[str, Any]) -> ObjectStore:
    from lancejit.io.local import LocalStore

    _, config = _split_options(options, {}, "file")
    return LocalStore(_with_overrides(local_io(), config))


def _make_memory(name: str, options: Mapping[str, Any]) -> ObjectStore:
    from lancejit.io.memory import MemoryStore

    _, config = _split_options(options, {}, "memory")
    return MemoryStore(name, _with_overrides(cloud_io(), config))


def _make_s3(bucket: str, options: Mapping[str, Any]) -> ObjectStore:
    from lancejit.io.fsspec_store import OBJECT_STORE_IO
    from lancejit.io.s3_store import S3Store

    opts, config = _split_options(options, _S3_KEYS, "s3")
    endpoint = opts.get("endpoint") or os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT")
    allow_http = parse_bool(opts.get("allow_http", os.environ.get("AWS_ALLOW_HTTP", "false")), "allow_http")
    if endpoint and str(endpoint).lower().startswith("http://") and not allow_http:
        raise InvalidInputError(
            f"S3 endpoint {endpoint} uses http://; set storage option allow_http='true' to allow it"
        )
    kwargs: dict[str, Any] = {
        "endpoint": endpoint,
        "region": opts.get("region"),
        "key": opts.get("key"),
        "secret": opts.get("secret"),
        "token": opts.get("token"),
        "anonymous": parse_bool(opts.get("anonymous", False), "anonymous"),
        "config": _with_overrides(OBJECT_STORE_IO, config),
    }
    if "part_size" in opts:
        kwargs["part_size"] = _parse_int(opts["part_size"], "part_size")
    kwargs.update(_retry_kwargs(opts))
    store = S3Store(bucket, **kwargs)
    store.conditional_put = _parse_conditional_put(opts.get("conditional_put", "etag"))
    return store


def _parse_conditional_put(value: Any) -> bool:
    """``conditional_put`` / ``aws_conditional_put``: ``"etag"`` (default: S3 ``If-None-Match``)
    or ``"disabled"`` (the store has no put-if-absent; commit through ``s3+ddb://``)."""
    text = str(value).strip().lower()
    if text in ("etag", "true", "1", "enabled"):
        return True
    if text in ("disabled", "false", "0", "none"):
        return False
    raise InvalidInputError(f"storage option 'conditional_put': expected 'etag' or 'disabled', got {value!r}")


@dataclasses.dataclass(frozen=True, slots=True)
class ExternalManifestConfig:
    """Where an ``s3+ddb://`` dataset's external manifest store lives: the DynamoDB ``table_name``
    and the endpoint/region/credentials to reach it (the S3 ones unless ``dynamodb_endpoint`` is
    given; ``DYNAMODB_ENDPOINT`` from the environment otherwise)."""

    table_name: str
    endpoint: str | None
    region: str | None
    key: str | None
    secret: str | None
    token: str | None


def _make_s3_ddb(bucket: str, table: str, options: Mapping[str, Any]) -> ObjectStore:
    store = _make_s3(bucket, options)
    opts, _ = _split_options(options, _S3_KEYS, "s3+ddb")
    endpoint = opts.get("dynamodb_endpoint") or os.environ.get("DYNAMODB_ENDPOINT")
    if endpoint and str(endpoint).lower().startswith("http://") and not parse_bool(
            opts.get("allow_http", os.environ.get("AWS_ALLOW_HTTP", "false")), "allow_http"):
        raise InvalidInputError(
            f"DynamoDB endpoint {endpoint} uses http://; set storage option allow_http='true' to allow it"
        )
    store.external_manifest = ExternalManifestConfig(
        table, endpoint, opts.get("region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
        opts.get("key"), opts.get("secret"), opts.get("token"),
    )
    return store


def _ddb_table(uri: str, query: str) -> str:
    """The ``ddbTableName`` of an ``s3+ddb://`` URI's query (exactly that one key, non-empty)."""
    pairs = parse_qsl(query, keep_blank_values=True)
    if len(pairs) != 1 or pairs[0][0] != DDB_TABLE_QUERY_KEY:
        raise InvalidInputError(f"s3+ddb:// URI expects exactly one query parameter "
                                f"{DDB_TABLE_QUERY_KEY!r}: {uri}")
    if not pairs[0][1]:
        raise InvalidInputError(f"s3+ddb:// URI needs a non-empty DynamoDB table name: {uri}")
    return pairs[0][1]


def _make_gcs(bucket: str, options: Mapping[str, Any]) -> ObjectStore:
    from lancejit.io.fsspec_store import OBJECT_STORE_IO
    from lancejit.io.gcs_store import GCSStore

    opts, config = _split_options(options, _GCS_KEYS, "gs")
    token = opts.get("token")
    if parse_bool(opts.get("anonymous", False), "anonymous"):
        token = "anon"
    endpoint = opts.get("endpoint") or os.environ.get("STORAGE_EMULATOR_HOST")
    kwargs: dict[str, Any] = {
        "endpoint": endpoint,
        "token": token,
        "project": opts.get("project"),
        "config": _with_overrides(OBJECT_STORE_IO, config),
    }
    if "part_size" in opts:
        kwargs["part_size"] = _parse_int(opts["part_size"], "part_size")
    kwargs.update(_retry_kwargs(opts))
    return GCSStore(bucket, **kwargs)


def parse_uri(uri: str) -> tuple[str, str, str]:
    """``(scheme, bucket, path)`` of a URI; ``scheme`` is ``file``, ``memory``, ``s3`` or ``gs``.

    For ``file`` the bucket is empty and the path absolute; otherwise the path is the key.
    ``s3+ddb://bucket/key?ddbTableName=TABLE`` gives scheme ``s3+ddb`` (the table name is read
    by :func:`open_store`).
    """
    if not isinstance(uri, str) or not uri:
        raise InvalidInputError(f"expected a non-empty URI string, got {uri!r}")
    if "://" not in uri:
        return "file", "", os.path.abspath(os.path.expanduser(uri))
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise InvalidInputError(f"file:// URI with a host is not supported: {uri}")
        return "file", "", os.path.abspath(unquote(parts.path) or "/")
    if scheme in ("gs", "gcs"):
        scheme = "gs"
    if scheme == "s3+ddb":
        if parts.fragment or not parts.netloc:
            raise InvalidInputError(f"s3+ddb:// URI needs a bucket and no fragment: {uri}")
        _ddb_table(uri, parts.query)
        return scheme, parts.netloc, parts.path.strip("/")
    if scheme not in ("memory", "s3", "gs"):
        raise InvalidInputError(f"unsupported URI scheme {parts.scheme!r} in {uri}")
    if parts.query or parts.fragment:
        raise InvalidInputError(f"URI must not have a query or fragment: {uri}")
    bucket = parts.netloc
    if scheme != "memory" and not bucket:
        raise InvalidInputError(f"{scheme}:// URI needs a bucket: {uri}")
    return scheme, bucket, parts.path.strip("/")


def check_options(storage_options: Any) -> dict[str, Any]:
    """``storage_options`` as a dict after checking its shape: a mapping of ``str`` keys to
    ``str`` values (``bool``/``int`` also accepted; None values are ignored)."""
    if storage_options is None:
        return {}
    if not isinstance(storage_options, Mapping):
        raise InvalidInputError(
            f"storage_options must be a dict of str to str, got {type(storage_options).__name__}")
    for key, value in storage_options.items():
        if not isinstance(key, str):
            raise InvalidInputError(f"storage option names must be strings, got {key!r}")
        if value is not None and not isinstance(value, (str, bool, int)):
            raise InvalidInputError(
                f"storage option {key!r} must be a string, got {type(value).__name__} {value!r}")
    return dict(storage_options)


def open_store(uri: str, storage_options: Mapping[str, Any] | None = None) -> tuple[ObjectStore, str]:
    """The (cached) store for ``uri`` and the object path inside it."""
    scheme, bucket, path = parse_uri(uri)
    options = check_options(storage_options)
    table = _ddb_table(uri, urlsplit(uri).query) if scheme == "s3+ddb" else ""
    key = _cache_key(scheme, f"{bucket}?{table}" if table else bucket, options)
    with _CACHE_LOCK:
        store = _CACHE.get(key)
        if store is not None and not store.is_current():
            store = None  # the namespace was renewed
        if store is None:
            if scheme == "file":
                store = _make_local(options)
            elif scheme == "memory":
                store = _make_memory(bucket, options)
            elif scheme == "s3":
                store = _make_s3(bucket, options)
            elif scheme == "s3+ddb":
                store = _make_s3_ddb(bucket, table, options)
            else:
                store = _make_gcs(bucket, options)
            _CACHE[key] = store
    return store, path


def clear_store_cache() -> None:
    """Forget cached stores (tests; sessions of dropped stores close when collected)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def parse_storage_options(items: Sequence[str] | None) -> dict[str, str] | None:
    """``KEY=VALUE`` strings (``--storage-option`` arguments of the command line) as storage
    options; None when there are none."""
    if not items:
        return None
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInputError(f"--storage-option expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


__all__ = ["DDB_TABLE_QUERY_KEY", "ExternalManifestConfig", "clear_store_cache", "open_store", "parse_bool",
           "parse_storage_options", "parse_uri"]
