"""Where a warm start begins: the bundle of a registered version, checked against its registry record."""

from __future__ import annotations

from mlassets.core.registry import versions


def verified_bundle(name: str, version: str) -> str:
    """The local folder of ``name`` version ``version``'s bundle, refused unless the logged model it lies in and its
    weights are the ones the registry records (``versions.verified_bundle_dir``)."""
    return str(versions.verified_bundle_dir(versions.get_version(name, version)))
