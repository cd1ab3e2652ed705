"""External manifest store: the key-value store that orders commits to object stores without
put-if-absent (``s3+ddb://``), and how versions are found and finalized through it.

The protocol (the reference's, so both engines can commit to one dataset through one table):

1. write the new manifest under a *staging* name, ``_versions/<final name>-<uuid4>``;
2. ``put_if_not_exists`` the item ``(base_uri, version) -> path of the staged manifest`` into the
   key-value store; when the item already exists another writer won: delete the staged file and
   retry (:class:`~lancejit.core.errors.AlreadyExistsError`);
3. copy the staged manifest to its final name ``_versions/<final name>``;
4. ``put_if_exists`` the item again with the final path ("mark it done"), delete the staged file.

A writer killed after step 2 leaves the version committed but staged: whoever next resolves the
latest version (a reader or the next writer, lancejit or the reference) finishes steps 3-4.
Readers that do not know the store list ``_versions/`` and see every finalized version: at most
the one staged version behind.

Items: ``base_uri`` (S, hash key: the dataset's path in the bucket, no bucket, no slashes at
the ends), ``version`` (N, range key), ``path`` (S: the manifest's key in the bucket), ``size``
(N: bytes), ``committer`` (S).  A path not ending in ``.manifest`` is a staged one.

:class:`ExternalManifestStore` is the small key-value interface; :class:`DynamoDBManifestStore`
implements it with aiobotocore (one client per event loop, closed with lancejit's stores at exit).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import threading
import uuid
import weakref
from dataclasses import dataclass
from typing import Any, AsyncIterator

from lancejit.core.errors import (
    AlreadyExistsError,
    InvalidInputError,
    LanceJitError,
    NotFoundError,
    StoreError,
)
from lancejit.io.loop_close import LoopCloser, close_with_loop
from lancejit.io.store import ObjectStore, join_path, register_for_close

from .naming import MANIFEST_SUFFIX, VERSIONS_DIR, ManifestLocation, NamingScheme, detect_scheme

#: The ``committer`` attribute lancejit writes (the reference writes ``"lancedb"``).
COMMITTER_NAME = "lancejit"


@dataclass(frozen=True, slots=True)
class ExternalVersion:
    """One item of the external store: ``version``'s manifest at store ``path`` (``size`` bytes,
    None if unknown).  ``staged`` while the path is still the temporary name."""

    version: int
    path: str
    size: int | None = None

    @property
    def staged(self) -> bool:
        return not self.path.endswith(MANIFEST_SUFFIX)


class ExternalManifestStore(abc.ABC):
    """A key-value store mapping ``(base_uri, version)`` to a manifest path, with conditional puts."""

    @abc.abstractmethod
    async def get(self, base_uri: str, version: int) -> ExternalVersion | None:
        """The item of ``version`` (None when absent)."""

    @abc.abstractmethod
    async def get_latest(self, base_uri: str) -> ExternalVersion | None:
        """The item with the highest version (None when the dataset has none)."""

    @abc.abstractmethod
    async def put_if_not_exists(self, base_uri: str, version: int, path: str, size: int) -> None:
        """Create the item; :class:`AlreadyExistsError` when ``version`` already has one."""

    @abc.abstractmethod
    async def put_if_exists(self, base_uri: str, version: int, path: str, size: int) -> None:
        """Replace the existing item's path/size; :class:`NotFoundError` when there is none."""


class DynamoDBManifestStore(ExternalManifestStore):
    """The reference's DynamoDB table (hash key ``base_uri`` S, range key ``version`` N)."""

    _checked_tables: set[tuple[str, str | None]] = set()
    _checked_lock = threading.Lock()

    def __init__(self, table_name: str, *, endpoint: str | None = None, region: str | None = None,
                 key: str | None = None, secret: str | None = None, token: str | None = None,
                 committer: str = COMMITTER_NAME) -> None:
        if not table_name:
            raise InvalidInputError("DynamoDB table name must not be empty")
        self.table_name = table_name
        self.endpoint = endpoint
        self.committer = committer
        self._client_kwargs: dict[str, Any] = {
            "endpoint_url": endpoint,
            "region_name": region or "us-east-1",
            "aws_access_key_id": key,
            "aws_secret_access_key": secret,
            "aws_session_token": token,
        }
        self._session: Any = None
        #: One client per event loop (its first request opens the connection, the slowest part).
        self._clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Future]" = (
            weakref.WeakKeyDictionary()
        )
        self._closers: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopCloser]" = (
            weakref.WeakKeyDictionary()
        )
        register_for_close(self)

    async def _open_client(self) -> tuple[Any, Any]:
        if self._session is None:
            from aiobotocore.session import get_session

            self._session = get_session()
        creator = self._session.create_client("dynamodb", **self._client_kwargs)
        client = await creator.__aenter__()
        return client, creator

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[Any]:
        """The running loop's client (created once), errors mapped to lancejit's."""
        loop = asyncio.get_running_loop()
        for old in [lp for lp in self._clients if lp.is_closed()]:
            del self._clients[old]
            closer = self._closers.pop(old, None)
            if closer is not None:
                closer.discard()
        fut = self._clients.get(loop)
        if fut is None:
            fut = self._clients[loop] = asyncio.ensure_future(self._open_client())
            if loop not in self._closers:  # closed when the loop shuts down (asyncio.run per call)
                self._closers[loop] = close_with_loop(self.aclose)
        try:
            client, _ = await asyncio.shield(fut)
        except (LanceJitError, asyncio.CancelledError):
            raise
        except Exception as exc:
            if self._clients.get(loop) is fut:
                del self._clients[loop]
            raise _translate(exc, self.table_name) from exc
        try:
            await self._check_table(client)
            yield client
        except (LanceJitError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise _translate(exc, self.table_name) from exc

    async def aclose(self) -> None:
        """Close the running loop's client (lancejit's loop at exit: :func:`register_for_close`)."""
        loop = asyncio.get_running_loop()
        fut = self._clients.pop(loop, None)
        if fut is not None and fut.done() and not fut.cancelled() and fut.exception() is None:
            _, creator = fut.result()
            await creator.__aexit__(None, None, None)

    async def _check_table(self, client: Any) -> None:
        """Once per (table, endpoint) and process: the key schema is ``base_uri`` HASH + ``version`` RANGE."""
        ident = (self.table_name, self.endpoint)
        if ident in self._checked_tables:
            return
        desc = await client.describe_table(TableName=self.table_name)
        keys = {(k.get("AttributeName"), k.get("KeyType")) for k in desc.get("Table", {}).get("KeySchema", [])}
        if keys != {("base_uri", "HASH"), ("version", "RANGE")}:
            raise InvalidInputError(
                f"DynamoDB table {self.table_name!r} must have keys base_uri (HASH) and version (RANGE), "
                f"has {sorted(keys)}"
            )
        with self._checked_lock:
            self._checked_tables.add(ident)

    def _item(self, base_uri: str, version: int, path: str, size: int) -> dict[str, Any]:
        return {
            "base_uri": {"S": base_uri},
            "version": {"N": str(int(version))},
            "path": {"S": path},
            "committer": {"S": self.committer},
            "size": {"N": str(int(size))},
        }

    async def get(self, base_uri: str, version: int) -> ExternalVersion | None:
        async with self._client() as client:
            resp = await client.get_item(
                TableName=self.table_name, ConsistentRead=True,
                Key={"base_uri": {"S": base_uri}, "version": {"N": str(int(version))}},
            )
        item = resp.get("Item")
        return _parse_item(item, self.table_name) if item else None

    async def get_latest(self, base_uri: str) -> ExternalVersion | None:
        async with self._client() as client:
            resp = await client.query(
                TableName=self.table_name, ConsistentRead=True, ScanIndexForward=False, Limit=1,
                KeyConditionExpression="base_uri = :b", ExpressionAttributeValues={":b": {"S": base_uri}},
            )
        items = resp.get("Items") or []
        return _parse_item(items[0], self.table_name) if items else None

    async def _put(self, base_uri: str, version: int, path: str, size: int, *, exists: bool) -> None:
        """Put the item on the condition that it exists (``exists``) or not."""
        cond = "attribute_exists" if exists else "attribute_not_exists"
        async with self._client() as client:
            try:
                await client.put_item(
                    TableName=self.table_name, Item=self._item(base_uri, version, path, size),
                    ConditionExpression=f"{cond}(base_uri) AND {cond}(version)",
                )
            except client.exceptions.ConditionalCheckFailedException:
                where = f"version {version} of {base_uri!r} in DynamoDB table {self.table_name!r}"
                if exists:
                    raise NotFoundError(f"{where} does not exist") from None
                raise AlreadyExistsError(f"{where} already exists") from None

    async def put_if_not_exists(self, base_uri: str, version: int, path: str, size: int) -> None:
        await self._put(base_uri, version, path, size, exists=False)

    async def put_if_exists(self, base_uri: str, version: int, path: str, size: int) -> None:
        await self._put(base_uri, version, path, size, exists=True)


def _translate(exc: Exception, table: str) -> LanceJitError:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code") if hasattr(exc, "response") else None
    if code == "ResourceNotFoundException":
        return NotFoundError(f"DynamoDB table {table!r} does not exist")
    return StoreError(f"DynamoDB table {table!r}: {type(exc).__name__}: {exc}")


def _parse_item(item: dict[str, Any], table: str) -> ExternalVersion:
    try:
        version = int(item["version"]["N"])
        path = item["path"]["S"]
        size = int(item["size"]["N"]) if "size" in item and "N" in item["size"] else None
    except (KeyError, TypeError, ValueError):
        raise StoreError(f"DynamoDB table {table!r}: malformed item {sorted(item)}") from None
    if version < 0 or not path:
        raise StoreError(f"DynamoDB table {table!r}: malformed item (version {version}, path {path!r})")
    return ExternalVersion(version, path, size)


# ------------------------------------------------------------------------------ store lookup
_STORES: dict[Any, ExternalManifestStore] = {}
_STORES_LOCK = threading.Lock()


def external_store_of(store: ObjectStore) -> ExternalManifestStore | None:
    """The external manifest store an ``s3+ddb://`` store commits through (None for others)."""
    cfg = getattr(store, "external_manifest", None)
    if cfg is None:
        return None
    with _STORES_LOCK:
        ext = _STORES.get(cfg)
        if ext is None:
            ext = _STORES[cfg] = DynamoDBManifestStore(
                cfg.table_name, endpoint=cfg.endpoint, region=cfg.region,
                key=cfg.key, secret=cfg.secret, token=cfg.token,
            )
    return ext


# ------------------------------------------------------------------------------- protocol
def staging_path(final_path: str) -> str:
    """The temporary name a manifest is written under before it is committed."""
    return f"{final_path}-{uuid.uuid4()}"


def _final_path(root: str, ev: ExternalVersion) -> tuple[str, NamingScheme]:
    name = ev.path.rsplit("/", 1)[-1]
    if ev.staged:
        # "<final name>-<uuid>": the uuid is 36 characters
        name = name[: -37] if len(name) > 37 and name[-37] == "-" else ""
    scheme = detect_scheme(name)
    if scheme is None:
        raise StoreError(f"external manifest store: version {ev.version} has an unknown path {ev.path!r}")
    return join_path(root, VERSIONS_DIR, name), scheme


async def finalize(store: ObjectStore, root: str, ext: ExternalManifestStore, ev: ExternalVersion,
                   data: bytes | None = None) -> ManifestLocation:
    """Finish a staged commit: copy the staged manifest to its final name, record the final path
    (the item must exist), delete the staged file.  Idempotent and safe to race: when the staged
    file is gone another process finished first.  ``data``: the staged bytes when the caller
    has them (the committing writer), else they are read."""
    final, scheme = _final_path(root, ev)
    try:
        if data is None:
            data = bytes(await store.read_all(ev.path))
    except NotFoundError:
        if not await store.exists(final):
            raise NotFoundError(
                f"{store.uri(ev.path)}: staged manifest of version {ev.version} is gone and "
                f"{store.uri(final)} does not exist"
            ) from None
        return ManifestLocation(ev.version, final, None, scheme)
    await store.put(final, data)
    await ext.put_if_exists(root, ev.version, final, len(data))
    await store.delete(ev.path)
    return ManifestLocation(ev.version, final, len(data), scheme)


async def _located(store: ObjectStore, root: str, ext: ExternalManifestStore, ev: ExternalVersion | None
                   ) -> ManifestLocation | None:
    if ev is None:
        return None
    if ev.staged:
        return await finalize(store, root, ext, ev)
    final, scheme = _final_path(root, ev)
    return ManifestLocation(ev.version, final, ev.size, scheme)


async def resolve_latest(store: ObjectStore, root: str) -> ManifestLocation | None:
    """The latest version according to the external store, finalized; None when the store has
    no item for this dataset (or ``store`` has no external store)."""
    ext = external_store_of(store)
    if ext is None:
        return None
    return await _located(store, root, ext, await ext.get_latest(root))


async def resolve_version(store: ObjectStore, root: str, version: int) -> ManifestLocation | None:
    """``version``'s manifest according to the external store, finalized (None when unknown)."""
    ext = external_store_of(store)
    if ext is None:
        return None
    return await _located(store, root, ext, await ext.get(root, version))


__all__ = [
    "COMMITTER_NAME",
    "DynamoDBManifestStore",
    "ExternalManifestStore",
    "ExternalVersion",
    "external_store_of",
    "finalize",
    "resolve_latest",
    "resolve_version",
    "staging_path",
]
