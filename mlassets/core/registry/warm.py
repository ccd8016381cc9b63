"""Where a warm start begins: the bundle of a registered version, checked against its registry record."""

from __future__ import annotations

from mlassets.core.registry import versions
from mlassets.core.train.artifact import check_weights


def verified_bundle(name: str, version: str) -> str:
    """The local folder of ``name`` version ``version``'s bundle, refused unless its weights are the recorded ones."""
    registered = versions.get_version(name, version)
    directory = versions.bundle_dir(registered)
    try:
        check_weights(directory, versions.record_of(registered).weights_sha256,
                      f"the registry record of {name!r} version {version}")
    except ValueError as exc:
        raise versions.RegistryError(str(exc)) from None
    return str(directory)


def warm_start_refusal(name: str, version: str, family: str) -> str:
    """Why a ``family`` model cannot begin from ``name`` version ``version`` ("" when it can): weights carry over
    only within a family that starts from another model's weights (``supports_warm_start``)."""
    from mlassets.core.train.family import family_of

    recorded = versions.record_of(versions.get_version(name, version)).family
    if recorded != family:
        return f"champion v{version} is a {recorded} model and this one is {family}"
    if not family_of(family).supports_warm_start:
        return f"family {family!r} does not begin from another model's weights"
    return ""
