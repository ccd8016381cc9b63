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
from mlassets.core.evaluate.gate import GateResult
from mlassets.core.naming import asset_path
from mlassets.core.records import RecordError, RecordFiles
from mlassets.core.registry.promotion import PromotionLog
from mlassets.core.registry.record import RegisteredVersion


@dataclass
class VersionInfo:
    version: str
    partitions: list[str]  # what its ingest added or changed
    gate: str  # pass, reject, or "-" (not gated yet, or failed before the gate)
    model_version: str  # "-" when nothing was registered
    champion: bool
    family: str = "-"  # the registered version's model family (mlp, torch, lightgbm, xgboost)


def _read(files: RecordFiles, key: list[str], partition: str, cls: type) -> object | None:
    try:
        return files.read(key, partition, cls) if files.exists(key, partition) else None
    except RecordError:
        return None


def data_versions(cfg: PipelineConfig, store: VersionedStore | None = None) -> list[VersionInfo]:
    """Oldest first, as the ingests created them; the partition each added is in its store commit's metadata."""
    files, name = RecordFiles(paths.records_root()), cfg.dataset.name
    commits = new_commits(store or open_store(), raw_repo(cfg), WATCHED_BRANCH, None).commits
    live = PromotionLog().live(cfg.model.registered_name)
    out = []
    for commit in commits:
        version, added = commit.id, commit.metadata.get("partition", "")
        gate = _read(files, asset_path(name, "gate_result"), version, GateResult)
        registered = _read(files, asset_path(name, "registered_model"), version, RegisteredVersion)
        model = registered.version if isinstance(registered, RegisteredVersion) else "-"
        family = registered.record.family if isinstance(registered, RegisteredVersion) else "-"
        out.append(VersionInfo(version=version, partitions=[added] if added else [],
                               gate=("pass" if gate.passed else "reject") if isinstance(gate, GateResult) else "-",
                               model_version=model, champion=live is not None and live.to_version == model,
                               family=family))
    return out


def format_versions(rows: list[VersionInfo], label: str = "partition") -> str:
    if not rows:
        return "(no data versions yet)"
    header = ["data version", f"{label}s added", "gate", "model", "family", "champion"]
    lines = [[r.version[:12], ", ".join(r.partitions) or "-", r.gate,
              f"v{r.model_version}" if r.model_version != "-" else "-", r.family, "yes" if r.champion else ""]
             for r in rows]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                     for line in [header, *lines])
