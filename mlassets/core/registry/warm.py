"""Where a warm start begins: the bundle of a registered version, checked against its registry record."""

from __future__ import annotations

from mlassets.core.config.families import facts_of
from mlassets.core.registry import versions


def verified_bundle(name: str, version: str) -> str:
    """The local folder of ``name`` version ``version``'s bundle, refused unless the logged model it lies in and its
    weights are the ones the registry records (``versions.verified_bundle_dir``)."""
    return str(versions.verified_bundle_dir(versions.get_version(name, version)))


def warm_start_refusal(name: str, version: str, family: str) -> str:
    """Why a ``family`` model cannot begin from ``name`` version ``version`` ("" when it can): weights carry over
    only within a family that starts from another model's weights (its ``warm_start`` fact)."""
    recorded = versions.record_of(versions.get_version(name, version)).family
    if recorded != family:
        return f"champion v{version} is a {recorded} model and this one is {family}"
    if not facts_of(family).warm_start:
        return f"family {family!r} does not begin from another model's weights"
    return ""
