"""Adopt a version registered before the registration history existed: its row written into the hash chain, once
everything the registry keeps elsewhere says mlassets registered it (``mlassets adopt VERSION``).

Every loader refuses a version the history does not hold. A version registered by an older mlassets is refused
too, until it is adopted: its record is complete and names the version's own MLflow run, that run says it
registered this version number (the tag ``registered_version`` the registration step writes into it), the model
folder is the run's logged model with the weights the record names, no version the history holds came from the
same run, and the Dagster run its record names materialized it (checked by the command, which reads the
instance). A copy of a folder registered by hand fails one of these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlassets.core.registry.client import RegistryError, mlflow_client, record_of

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion

    from mlassets.core.registry.promotion import Entry, PromotionLog


def problems(version: ModelVersion, log: PromotionLog | None = None) -> list[str]:
    """Why ``version`` cannot be adopted (empty: it can); ``RegistryError`` for an incomplete record."""
    from mlflow.exceptions import MlflowException

    from mlassets.core.registry import registrations
    from mlassets.core.registry.folder import check_folder, model_root
    from mlassets.core.registry.versions import bundle_dir

    record = record_of(version)
    log = log or registrations.RegistrationLog()
    name, number, run_id = version.name, str(version.version), version.run_id or ""
    found: list[str] = []
    if record.mlflow_run_id != run_id:
        found.append(f"its record names MLflow run {record.mlflow_run_id or '(none)'}, but the version was registered "
                     f"from run {run_id or '(none)'}")
    try:
        said = mlflow_client().get_run(run_id).data.tags.get("registered_version") if run_id else None
    except MlflowException:
        said = None
    if said != number:
        found.append(f"MLflow run {run_id or '(none)'} says it registered version {said or '(none)'}, not {number}")
    try:
        directory = bundle_dir(version)
        check_folder(model_root(directory), version, directory)
    except (ValueError, OSError, MlflowException) as exc:
        found.append(f"its model folder: {exc}")
    held = {(e.model, e.to_version) for e in log.entries() if e.action == registrations.REGISTER}
    for other in mlflow_client().search_model_versions(f"run_id = '{run_id}'") if run_id else []:
        if (other.name, str(other.version)) != (name, number) and (other.name, str(other.version)) in held:
            found.append(f"{other.name!r} version {other.version}, registered by mlassets, came from the same run: "
                         "this one is a copy")
    return found


def adopt(version: ModelVersion, who: str, log: PromotionLog | None = None, more: list[str] | None = None) -> Entry:
    """Write ``version``'s row into the registration history (``RegistryError`` naming every problem, ``more``
    included (what the caller found, e.g. in the Dagster instance), or when the history holds it already or is
    damaged)."""
    from mlassets.core.registry import registrations

    log = log or registrations.RegistrationLog()
    name, number = version.name, str(version.version)
    damage = log.verify(name)
    if damage:
        raise RegistryError(f"the registration history of {name!r} is damaged ({damage[0]}); nothing adopted")
    if any(e.action == registrations.REGISTER and e.to_version == number for e in log.entries(name)):
        raise RegistryError(f"model {name!r} version {number} is in the registration history already; nothing to do")
    found = [*problems(version, log), *(more or [])]
    if found:
        raise RegistryError(f"model {name!r} version {number} cannot be adopted: {'; '.join(found)}. Nothing was "
                            "written; retrain its data version instead (mlassets run --again)")
    return registrations.record(version, log, who=who)
