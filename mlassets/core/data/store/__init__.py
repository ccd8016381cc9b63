"""Versioned object stores: the data versions every model traces back to."""

from __future__ import annotations

from mlassets.core import settings
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


STORE_ENV = "MLASSETS_STORE"  # the backend when none is named: local (default) or lakefs


def default_backend() -> str:
    """``$MLASSETS_STORE``; when unset, ``local`` (embedded profile) or ``lakefs`` (``MLASSETS_PROFILE=production``)."""
    return settings.store_backend()


def open_store(backend: str = "", **options: str) -> VersionedStore:
    """Open a store backend by name (default: ``default_backend()``).

    ``local``: ``root`` (default ``$MLASSETS_HOME/store``). ``lakefs``: ``endpoint``,
    ``access_key_id``, ``secret_access_key`` (each defaulting to the SDK's ``LAKECTL_*`` variables) and
    ``namespace`` (storage namespace of new repositories). Empty options count as unset.
    """
    options = {k: v for k, v in options.items() if v}
    backend = backend or default_backend()
    if backend == "local":
        from mlassets.core.data.store.local import LocalStore
        from mlassets.core.paths import store_root

        return LocalStore(options.get("root") or store_root())
    if backend == "lakefs":
        from mlassets.core.data.store.lakefs import LakeFSStore

        return LakeFSStore(**options)
    raise ValueError(f"store backend {backend!r} is not known (choose: {', '.join(BACKENDS)})")


__all__ = [
    "BACKENDS", "STORE_ENV", "Change", "Commit", "Conflict", "InvalidName", "NotFound", "StoreError", "Transaction",
    "VersionedStore", "default_backend", "open_store",
]
