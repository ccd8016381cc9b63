"""The model registry in MLflow: every candidate is a model version whose tags are its ``RegistryRecord``.

Aliases are moved only by ``mlassets.core.registry.promote`` (through the promotion log).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mlassets.core.registry.client import RegistryError, mlflow_client, record_of
from mlassets.core.registry.record import GATE_PASSED, RegistryRecord

if TYPE_CHECKING:
    import pandas as pd
    from mlflow.entities.model_registry import ModelVersion

    from mlassets.core.evaluate.gate import GateResult
    from mlassets.core.train.artifact import ModelBundle

CHAMPION = "champion"
CHALLENGER = "challenger"  # a passing version that waits for `mlassets promote` (promotion: manual)
DESCRIPTION_MAX = 5000  # what MLflow's stores keep of a description


def register(name: str, model_uri: str, record: RegistryRecord, *, description: str = "",
             links: dict[str, str] | None = None) -> ModelVersion:
    """A new version of ``name`` for the logged model, whose tags are ``record`` (and ``links``, e.g. the
    Dagster run's URL, for people), described by ``description`` (see ``describe``)."""
    from mlflow.exceptions import MlflowException

    client = mlflow_client()
    try:
        client.get_registered_model(name)
    except MlflowException:
        client.create_registered_model(name, description="Registered by mlassets; tags hold each record.")
    model_id = model_uri.removeprefix("models:/") if model_uri.startswith("models:/m-") else None  # a LoggedModel
    # its id too: an MLflow server refuses a LoggedModel's URI as a version's source without it (sqlite does not)
    version = client.create_model_version(name, model_uri, tags={**(links or {}), **record.to_tags()},
                                          model_id=model_id, description=description[:DESCRIPTION_MAX] or None)
    from mlassets.core.registry import registrations

    registrations.record(version)  # its entry in the registration history: what every loader checks
    return version


def registered_by(name: str, model_uri: str, tag: str, value: str) -> ModelVersion | None:
    """The version of ``name`` registered from ``model_uri`` with tag ``tag`` = ``value``, if there is one (what a
    registration step run again, in a retry of its run, finds instead of registering the model twice)."""
    from mlflow.exceptions import MlflowException

    try:
        found = mlflow_client().search_model_versions(f"name = '{name}'")
    except MlflowException:
        return None
    version = next((v for v in found if v.source == model_uri and v.tags.get(tag) == value), None)
    if version is not None:  # a registration killed before its entry was written: written now
        from mlassets.core.registry import registrations

        registrations.record(version)
    return version


def describe(record: RegistryRecord, version_name: str, dagster_run_url: str = "") -> str:
    """A version's description in MLflow's UI: the first line (what the versions table shows, as plain text) names
    the data version and the gate's verdict with its first reason; then the data commit, every failed rule, and a
    link back to the Dagster run that registered it (markdown, rendered on the version's page)."""
    gate = record.gate_result
    against = f"champion v{gate.gated_against}" if gate.gated_against not in ("", "none") else "absolute thresholds"
    reasons = gate.reasons()
    if gate.passed:
        notes = gate.summary().removeprefix("pass").lstrip("; ")  # rows left out, slices too small to judge
        first = f"gate passed against {against}" + (f"; {notes}." if notes else ".")
    else:
        more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
        first = f"gate rejected it against {against}: {reasons[0] if reasons else 'failed'}{more}."
    lines = [f"{record.dataset} · {version_name}: {first}", "", f"Trained on data commit `{record.data_commit}`."]
    if not gate.passed:
        lines += ["", "Failed rules:", *(f"- {r}" for r in reasons or ["failed"])]
    run = record.dagster_run_id
    lines += ["", f"Registered by Dagster run [{run[:8]}]({dagster_run_url})." if dagster_run_url
              else f"Registered by Dagster run {run}."]
    return "\n".join(lines)


def set_signature(model_uri: str, bundle: ModelBundle, rows: pd.DataFrame, n: int = 20) -> None:
    """Record the signature of an already logged model (see ``signature_of``)."""
    import mlflow

    from mlassets.core.train.mlflow_model import signature_of

    mlflow.models.set_signature(model_uri, signature_of(bundle, rows, n))


def check_model(name: str) -> None:
    from mlflow.exceptions import MlflowException

    try:
        mlflow_client().get_registered_model(name)
    except MlflowException:
        raise RegistryError(f"model {name!r} is not registered") from None


def get_version(name: str, version: str | int) -> ModelVersion:
    from mlflow.exceptions import MlflowException

    try:
        return mlflow_client().get_model_version(name, str(version))
    except MlflowException:
        raise RegistryError(f"model {name!r} has no version {version!r}") from None


def alias_version(name: str, alias: str = CHAMPION) -> ModelVersion | None:
    """The version an alias points at, or None when the model or alias does not exist."""
    from mlflow.exceptions import MlflowException

    try:
        return mlflow_client().get_model_version_by_alias(name, alias)
    except MlflowException:
        return None


def set_alias(name: str, alias: str, version: str | int) -> None:
    mlflow_client().set_registered_model_alias(name, alias, str(version))


def gate_passed(version: ModelVersion) -> bool:
    """Whether the version's record holds a passing gate result (read from the tag that mirrors it)."""
    return version.tags.get(GATE_PASSED) == "true"


def gate_result_of(record: RegistryRecord) -> GateResult:
    """The whole gate result of a registered version (each rule's value, limit and reason, the rows left out): the
    ``gate_result.json`` of its training run; the record's verdict alone when the run has none."""
    import mlflow
    from mlflow.exceptions import MlflowException

    from mlassets.core.evaluate.gate import GateResult
    from mlassets.core.registry.record import GATE_FILE

    try:
        return GateResult.from_json(mlflow.artifacts.load_text(f"runs:/{record.mlflow_run_id}/{GATE_FILE}"))
    except (MlflowException, OSError):
        return record.gate_result


def bundle_dir(version: ModelVersion) -> Path:
    """The local directory of a version's bundle (downloaded from the artifact store if it is remote)."""
    from mlassets.core.train.mlflow_model import bundle_path

    return bundle_path(version.source)


def verified_bundle_dir(version: ModelVersion) -> Path:
    """The version's bundle folder, refused (``RegistryError``) unless mlassets registered the version, every file of
    its model folder is the one sealed at registration (``verify_seal``), the folder is the version's logged model
    (its run and logged model) with the weights its record names, and a bundled plug-in source is the code the
    record names. Nothing from the folder is parsed before its seal is checked."""
    from mlassets.core.registry import registrations, seal
    from mlassets.core.registry.folder import check_folder
    from mlassets.core.train.mlflow_model import bundle_in

    record_of(version)  # an incomplete record is refused by name
    registrations.check(version)  # one mlassets registered, bound to its run and record
    root = seal.model_folder(version)
    registrations.verify_seal(version, root)
    directory = bundle_in(root)
    try:
        check_folder(root, version, directory)
    except ValueError as exc:
        raise RegistryError(str(exc)) from None
    seal.check_plugin(version, directory)
    return directory


def load_version_bundle(version: ModelVersion) -> ModelBundle:
    """The version's bundle, refused unless its folder and weights are the ones the registry records."""
    from mlassets.core.train.artifact import load_bundle

    return load_bundle(verified_bundle_dir(version))
