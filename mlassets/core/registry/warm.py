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
