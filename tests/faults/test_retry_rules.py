"""Which store failures are retried, the backoff bounds, and the retry options."""

from __future__ import annotations

import asyncio

import pytest

from lancejit.core.errors import InvalidInputError, NotFoundError
from lancejit.io import fsspec_store
from lancejit.io.fsspec_store import RETRY_CAP_S, is_transient, retry_delay
from lancejit.io.registry import clear_store_cache, open_store


class _Boto(Exception):
    def __init__(self, code: str, status: int) -> None:
        super().__init__(code)
        self.response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}


class _Http(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _chained(inner: BaseException, outer: BaseException) -> BaseException:
    outer.__cause__ = inner
    return outer


@pytest.mark.parametrize("exc", [
    TimeoutError(), asyncio.TimeoutError(), ConnectionResetError(), ConnectionRefusedError(),
    _Boto("SlowDown", 503), _Boto("InternalError", 500), _Boto("Throttling", 400), _Boto("X", 502),
    _Http(429), _Http(503), _Http(500), _chained(_Boto("SlowDown", 503), OSError("wrapped")),
    type("ClientPayloadError", (Exception,), {})(), type("ServerDisconnectedError", (Exception,), {})(),
])
def test_transient(exc):
    assert is_transient(exc)


@pytest.mark.parametrize("exc", [
    FileNotFoundError(), FileExistsError(), PermissionError(), NotFoundError("x"), ValueError(),
    _Boto("PreconditionFailed", 412), _Boto("NoSuchKey", 404), _Boto("InvalidRange", 416),
    _Boto("AccessDenied", 403), _Http(404), _Http(412), _Http(416),
    _chained(_Boto("SlowDown", 503), FileExistsError()),
])
def test_not_transient(exc):
    assert not is_transient(exc)


def test_backoff_is_jittered_and_capped():
    for attempt in range(1, 30):
        delays = [retry_delay(attempt) for _ in range(50)]
        assert all(0 <= d <= RETRY_CAP_S for d in delays)
        assert max(delays) <= fsspec_store.RETRY_BASE_S * 2 ** attempt + 1e-9
        assert len(set(delays)) > 1


def test_retry_options():
    clear_store_cache()
    store, _ = open_store("s3://bkt/x", {"timeout": "250ms", "max_retries": "2", "aws_region": "us-east-1"})
    assert (store.timeout, store.max_retries) == (0.25, 2)
    store, _ = open_store("gs://bkt/x", {"timeout": "3s", "anonymous": "true"})
    assert store.timeout == 3.0
    for bad in ({"timeout": "soon"}, {"timeout": "0"}, {"max_retries": "-1"}, {"max_retries": "x"}):
        with pytest.raises(InvalidInputError):
            open_store("s3://bkt/y", bad)
