"""A dataset's data versions as one table: the partitions each added, its gate decision, its model version, and
which version is the champion's (by the promotion log). Read from the store's watched branch (every commit is a
data version), the records the assets handed on, and the promotion log: no Dagster instance, no MLflow."""

from __future__ import annotations

from dataclasses import dataclass

from mlassets.core import paths
from mlassets.core.automation.commits import new_commits
from mlassets.core.config import PipelineConfig
from mlassets.core.data.raw import WATCHED_BRANCH, raw_repo
from mlassets.core.data.store import VersionedStore, open_store
from mlassets.core.data.version_keys import added_partitions, shown, version_key
from mlassets.core.evaluate.gate import GateResult
from mlassets.core.naming import asset_path
from mlassets.core.records import RecordError, RecordFiles, read_record_file
from mlassets.core.registry.promotion import PromotionLog
from mlassets.core.registry.record import RegisteredVersion


@dataclass
class VersionInfo:
    version: str  # its partition key (2013-03.6870220f; a home made before readable keys: the commit id)
    partitions: list[str]  # what its ingest added or changed
    gate: str  # pass, reject, or "-" (not gated yet, or failed before the gate)
    model_version: str  # "-" when nothing was registered
    champion: bool
    family: str = "-"  # the registered version's model family (mlp, torch, lightgbm, xgboost)
    commit: str = ""  # the full store commit id
    dropped_missing_target: int = 0  # rows without a target its gate saw left out


def _read(files: RecordFiles, key: list[str], partition: str, cls: type) -> object | None:
    try:
        return files.read(key, partition, cls) if files.exists(key, partition) else None
    except RecordError:
        return None


def data_versions(cfg: PipelineConfig, store: VersionedStore | None = None) -> list[VersionInfo]:
    """Oldest first, as the ingests created them; the partition each added is in its store commit's metadata. A
    version's records are found under its key (or, in a home made before readable keys, its commit id)."""
    files, name = RecordFiles(paths.records_root()), cfg.dataset.name
    store = store or open_store()
    commits = new_commits(store, raw_repo(cfg), WATCHED_BRANCH, None).commits
    live = PromotionLog().live(cfg.model.registered_name)
    gate_key, registered_key = asset_path(name, "gate_result"), asset_path(name, "registered_model")
    out = []
    for commit in commits:
        added = added_partitions(store, cfg, commit)
        version = version_key(added, commit.id)
        if not files.exists(gate_key, version) and files.exists(gate_key, commit.id):
            version = commit.id  # an old home's key
        gate = _read(files, gate_key, version, GateResult)
        registered = _read(files, registered_key, version, RegisteredVersion)
        if not isinstance(gate, GateResult) and isinstance(registered, RegisteredVersion):
            gate = registered.record.gate_result  # an older home's rejected version: its verdict is registered
        model = registered.version if isinstance(registered, RegisteredVersion) else "-"
        family = registered.record.family if isinstance(registered, RegisteredVersion) else "-"
        out.append(VersionInfo(version=version, partitions=added,
                               gate=("pass" if gate.passed else "reject") if isinstance(gate, GateResult) else "-",
                               model_version=model, champion=live is not None and live.to_version == model,
                               family=family, commit=commit.id, dropped_missing_target=gate.dropped_missing_target
                               if isinstance(gate, GateResult) else 0))
    return out


def champion_elsewhere(cfg: PipelineConfig, rows: list[VersionInfo]) -> str:
    """When the registered model's champion (by the promotion log) is none of these versions' models: a line naming
    the dataset whose records registered it and the config that holds it; else nothing."""
    name = cfg.model.registered_name
    live = PromotionLog().live(name)
    if live is None or any(r.model_version == live.to_version for r in rows):
        return ""
    for path in sorted(paths.records_root().glob("*/registered_model/*.json")):
        dataset = path.parent.parent.name
        if dataset == cfg.dataset.name:
            continue
        try:
            record = read_record_file(path, RegisteredVersion)
        except (RecordError, OSError):
            continue
        if record.name == name and record.version == live.to_version:
            config = paths.configs_dir() / f"{dataset}.yaml"
            where = f"; its config: {config}" if config.is_file() else ""
            return (f"champion: {name} v{live.to_version} came from dataset {dataset!r}, not {cfg.dataset.name!r} "
                    f"(both configs name model.registered_name {name!r}){where}; `mlassets versions --config "
                    f"{config if config.is_file() else dataset}` lists it")
    return f"champion: {name} v{live.to_version} is none of these versions' models (registered from another config)"


def format_versions(rows: list[VersionInfo], label: str = "partition") -> str:
    if not rows:
        return "(no data versions yet)"
    dropped = any(r.dropped_missing_target for r in rows)
    header = ["data version", f"{label}s added", "gate", "model", "family", "champion",
              *(["no target"] if dropped else [])]
    lines = [[shown(r.version), ", ".join(r.partitions) or "-", r.gate,
              f"v{r.model_version}" if r.model_version != "-" else "-", r.family, "yes" if r.champion else "",
              *([str(r.dropped_missing_target or "")] if dropped else [])] for r in rows]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                     for line in [header, *lines])
