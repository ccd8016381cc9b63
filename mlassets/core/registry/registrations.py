"""The registration history: every version mlassets registered, a row in a hash chain beside the promotion log
(same database, same row hash, anchored in MLflow as ``mlassets.registration_log_head``).

A row binds the version number to what it was registered as: its MLflow run, its source (the logged model),
a sha256 of its registry record's tags and the seal of its model folder (``seal``: every file's sha256 and one
digest over them). A model folder copied and registered by hand, under any name or number, has no row; a version
whose tags were edited no longer matches its row. Every loader and ``promote`` call ``check``
(``versions.verified_bundle_dir``, ``pyfunc_loader``, ``promote.promote``); they check the seal with ``verify_seal``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlassets.core.registry.client import RegistryError, mlflow_client, record_of
from mlassets.core.registry.promotion import REGISTRATIONS, Entry, PromotionLog
from mlassets.core.registry.record import bound_keys
from mlassets.core.registry.seal import SealBroken, digest, files_of, model_folder, seal_of

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion

REGISTER = "register"
SEAL = "seal"  # the key of a row that holds its model folder's seal (``seal.seal_of``)
ANCHOR_TAG = "mlassets.registration_log_head"


class RegistrationLog(PromotionLog):
    """The ``registrations`` table of the promotion log's database."""

    table = REGISTRATIONS


def _canonical(data: dict) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def binding(version: ModelVersion) -> dict[str, str]:
    """What a registration row holds of ``version``: its run, source, logged model and record."""
    tags = {k: version.tags.get(k, "") for k in bound_keys(record_of(version), version.tags)}
    return {"run_id": version.run_id or "", "source": version.source or "",
            "model_id": getattr(version, "model_id", None) or "",
            "record_sha256": hashlib.sha256(_canonical(tags).encode()).hexdigest()}


def _rows(log: PromotionLog, name: str, number: str) -> list[Entry]:
    return [e for e in log.entries(name) if e.action == REGISTER and e.to_version == number]


def record(version: ModelVersion, log: PromotionLog | None = None, who: str = "") -> Entry:
    """Append the row of a version mlassets just registered (once: its existing row is returned), then anchor
    the history's head in MLflow; ``who``: the row's author (default: the user running this)."""
    log = log or RegistrationLog()
    name, number = version.name, str(version.version)
    found = _rows(log, name, number)
    if found:
        return found[0]
    row = {**binding(version), SEAL: seal_of(model_folder(version))}
    entry = log.append_next(name, {"action": REGISTER, "to_version": number, "who": who or None,
                                    "reason": _canonical(row)})
    head = log.head(name) or entry
    mlflow_client().set_registered_model_tag(name, ANCHOR_TAG, f"{head.seq}:{head.hash}")
    return entry


def _anchor_problem(name: str, log: PromotionLog, entries: list[Entry]) -> str | None:
    seq, _, digest = mlflow_client().get_registered_model(name).tags.get(ANCHOR_TAG, "").partition(":")
    if not seq.isdigit():
        return None
    at = next((e for e in entries if e.seq == int(seq)), None)
    if at is None:
        return f"it ends at seq {entries[-1].seq if entries else 0}, but its anchor in MLflow says seq {seq}"
    return None if at.hash == digest else f"seq {seq} is not the row anchored in MLflow"


def bound(version: ModelVersion, log: PromotionLog | None = None) -> dict:
    """What ``version``'s registration row holds (its ``binding`` and seal); {} when the history has no row."""
    rows = _rows(log or RegistrationLog(), version.name, str(version.version))
    return json.loads(rows[0].reason) if rows else {}


def check(version: ModelVersion, log: PromotionLog | None = None) -> None:
    """``RegistryError`` unless ``version`` is one mlassets registered: an intact, anchored registration history
    holds its row, and its run, source and record are the ones the row binds."""
    log = log or RegistrationLog()
    name, number = version.name, str(version.version)
    entries = log.entries(name)
    damage = (log.verify(name) or [None])[0] or _anchor_problem(name, log, entries)
    if damage:
        raise RegistryError(f"the registration history of {name!r} in the promotion log is damaged ({damage}); "
                            f"refusing version {number}")
    rows = _rows(log, name, number)
    if not rows:
        raise RegistryError(f"model {name!r} version {number} was not registered by mlassets: the promotion log's "
                            "registration history has no entry for it (a model registered by hand, or copied under "
                            "another name or number); refusing it")
    held, now = json.loads(rows[0].reason), binding(version)
    changed = [k for k in sorted(held) if k != SEAL and held[k] != now.get(k)]
    if changed:
        raise RegistryError(f"model {name!r} version {number}: its {', '.join(changed)} differ from what mlassets "
                            f"registered (registration history seq {rows[0].seq}); refusing it")


def recorded_seal(version: ModelVersion) -> dict[str, Any]:
    """The seal the registration history holds for ``version`` (``SealBroken`` when its row has none)."""
    seal = bound(version).get(SEAL)
    where = f"model {version.name!r} version {version.version}"
    if not isinstance(seal, dict) or not isinstance(seal.get("files"), dict):
        raise SealBroken(f"{where} has no seal of its model folder in the registration history (registered before "
                         "folders were sealed); retrain its data version (mlassets run --again)")
    if digest(seal["files"]) != seal.get("sha256"):
        raise SealBroken(f"{where}: its seal in the registration history does not add up; refusing it")
    return seal


def verify_seal(version: ModelVersion, folder: str | Path) -> None:
    """``SealBroken`` naming each file of ``folder`` that differs from the version's seal (changed, missing or not
    registered), unless every file is the one registered. Reads bytes only: nothing is parsed or run."""
    want = recorded_seal(version)["files"]
    have = files_of(folder)
    changed = [p for p in sorted(want) if p in have and have[p] != want[p]]
    missing = [p for p in sorted(want) if p not in have]
    extra = [p for p in sorted(have) if p not in want]
    if changed or missing or extra:
        parts = [*(f"{p} differs from the file registered" for p in changed),
                 *(f"{p} is missing" for p in missing), *(f"{p} was not registered" for p in extra)]
        raise SealBroken(f"model {version.name!r} version {version.version}: its model folder {folder} does not match "
                         f"the seal in the registration history: {'; '.join(parts)}; refusing to load it")
