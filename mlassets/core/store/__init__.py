"""Versioned object stores: the data versions every model traces back to."""

from __future__ import annotations

from mlassets.core.store.base import (
    Change,
    Commit,
    Conflict,
    InvalidName,
    NotFound,
    StoreError,
    VersionedStore,
)


def open_store(backend: str = "local", **options: str) -> VersionedStore:
    """Open a store backend by name: ``local`` (default, under ``$MLASSETS_HOME/store``)."""
    if backend == "local":
        from mlassets.core.paths import store_root
        from mlassets.core.store.local import LocalStore

        return LocalStore(options.get("root") or store_root())
    raise ValueError(f"store backend {backend!r} is not known (choose: local)")


__all__ = [
    "Change", "Commit", "Conflict", "InvalidName", "NotFound", "StoreError", "VersionedStore", "open_store",
]
