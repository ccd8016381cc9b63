"""Versioned object stores: the data versions every model traces back to."""

from __future__ import annotations

from mlassets.core.data.store.base import (
    Change,
    Commit,
    Conflict,
    InvalidName,
    NotFound,
    StoreError,
    Transaction,
    VersionedStore,
)

BACKENDS = ("local", "lakefs")


def open_store(backend: str = "local", **options: str) -> VersionedStore:
    """Open a store backend by name.

    ``local`` (default): ``root`` (default ``$MLASSETS_HOME/store``). ``lakefs``: ``endpoint``,
    ``access_key_id``, ``secret_access_key`` (each defaulting to the SDK's ``LAKECTL_*`` variables) and
    ``namespace`` (storage namespace of new repositories). Empty options count as unset.
    """
    options = {k: v for k, v in options.items() if v}
    if backend == "local":
        from mlassets.core.data.store.local import LocalStore
        from mlassets.core.paths import store_root

        return LocalStore(options.get("root") or store_root())
    if backend == "lakefs":
        from mlassets.core.data.store.lakefs import LakeFSStore

        return LakeFSStore(**options)
    raise ValueError(f"store backend {backend!r} is not known (choose: {', '.join(BACKENDS)})")


__all__ = [
    "BACKENDS", "Change", "Commit", "Conflict", "InvalidName", "NotFound", "StoreError", "Transaction",
    "VersionedStore", "open_store",
]
