"""A dataset's data versions as one table: the partitions each added, its gate decision, its model version, and
which version is the champion's (by the promotion log). Read from the records the assets handed on."""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from mlassets.core import paths
from mlassets.core.config import PipelineConfig
from mlassets.core.data.store import VersionedStore, open_store
from mlassets.core.data.version_keys import added_partitions, shown
from mlassets.core.evaluate.gate import GateResult
from mlassets.core.records import RecordError, RecordFiles
from mlassets.core.registry.promotion import PromotionLog
from mlassets.core.registry.record import RegisteredVersion
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.partitions import data_versions as versions_def


@dataclass
class VersionInfo:
    version: str  # its partition key (2013-03.6870220f; a home made before readable keys: the commit id)
    partitions: list[str]  # what its ingest added or changed
    gate: str  # pass, reject, or "-" (not gated yet, or failed before the gate)
    model_version: str  # "-" when nothing was registered
    champion: bool
    commit: str = ""  # the full store commit id
    dropped_missing_target: int = 0  # rows without a target its gate saw left out


def _read(files: RecordFiles, key: dg.AssetKey, partition: str, cls: type) -> object | None:
    try:
        return files.read(key.path, partition, cls) if files.exists(key.path, partition) else None
    except RecordError:
        return None


def data_versions(instance: dg.DagsterInstance, cfg: PipelineConfig,
                  store: VersionedStore | None = None) -> list[VersionInfo]:
    """Oldest first, as the ingests created them; the partition each added is in its store commit's metadata."""
    from mlassets.core.data.version_keys import is_commit_id, version_map

    keys, files = DatasetKeys.of(cfg), RecordFiles(paths.records_root())
    store = store or open_store()
    live = PromotionLog().live(cfg.model.registered_name)
    commits = version_map(store, cfg)
    out = []
    for version in instance.get_dynamic_partitions(versions_def(cfg).name):
        commit = version if is_commit_id(version) else commits.get(version, "")
        gate = _read(files, keys.gate_result, version, GateResult)
        registered = _read(files, keys.registered_model, version, RegisteredVersion)
        if not isinstance(gate, GateResult) and isinstance(registered, RegisteredVersion):
            gate = registered.record.gate_result  # a rejected version's verdict is in its registry record
        model = registered.version if isinstance(registered, RegisteredVersion) else "-"
        out.append(VersionInfo(version=version, partitions=added_partitions(store, cfg, commit) if commit else [],
                               gate=("pass" if gate.passed else "reject") if isinstance(gate, GateResult) else "-",
                               model_version=model, champion=live is not None and live.to_version == model,
                               commit=commit, dropped_missing_target=gate.dropped_missing_target
                               if isinstance(gate, GateResult) else 0))
    return out


def format_versions(rows: list[VersionInfo], label: str = "partition") -> str:
    """One line per version; a ``no target`` column (rows left out for a missing target) when any has some."""
    if not rows:
        return "(no data versions yet)"
    dropped = any(r.dropped_missing_target for r in rows)
    header = ["data version", f"{label}s added", "gate", "model", "champion", *(["no target"] if dropped else [])]
    lines = [[shown(r.version), ", ".join(r.partitions) or "-", r.gate,
              f"v{r.model_version}" if r.model_version != "-" else "-", "yes" if r.champion else "",
              *([str(r.dropped_missing_target or "")] if dropped else [])] for r in rows]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                     for line in [header, *lines])
