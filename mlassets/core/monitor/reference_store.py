"""The drift reference of a data version, built once and kept: a sample of its train split and exact counts.

A champion's reference is the train split of the data version it trained on. Reading that split whole on every
drift report grows with the data, so it is streamed once (``split_tables``, batches of the memory budget) into a
``RowSample`` of the columns drift compares, and the sample (Parquet) and its counts (JSON) are committed to the
dataset's derived repository (never watched), keyed by what they depend on: the version's features manifest, the
columns, the slices and the sample size. Every later report of any version compared with that champion reads
them back.

    monitor/reference/<key>.parquet   the sampled rows      monitor/reference/<key>.json   total and slice counts
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

from mlassets.core.config import PipelineConfig
from mlassets.core.data.batches import object_file
from mlassets.core.data.raw import derived_repo
from mlassets.core.data.store import Conflict, NotFound, VersionedStore
from mlassets.core.features.store import BRANCH, manifest_path, split_tables
from mlassets.core.monitor.sample import SAMPLE_ROWS, Rows, RowSample

PREFIX = "monitor/reference/"
REFERENCE_CODE_VERSION = "1"  # bump when what a stored reference holds changes


def drift_columns(cfg: PipelineConfig) -> list[str]:
    """The columns drift reads: slices, features and the target."""
    ds, feats = cfg.dataset, cfg.features
    return list(dict.fromkeys([*ds.slices, *feats.categorical, *feats.numeric, ds.target]))


def reference_key(store: VersionedStore, cfg: PipelineConfig, data_version: str, limit: int) -> str:
    """sha256 of what the reference depends on; NotFound when the version has no features."""
    manifest = store.read(derived_repo(cfg), BRANCH, manifest_path(data_version))
    blob = json.dumps({"code": REFERENCE_CODE_VERSION, "data_version": data_version,
                       "manifest": hashlib.sha256(manifest).hexdigest(), "columns": drift_columns(cfg),
                       "slices": list(cfg.dataset.slices), "limit": limit}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def sample_split(store: VersionedStore, cfg: PipelineConfig, data_version: str, limit: int = SAMPLE_ROWS,
                 budget_mb: int | None = None) -> RowSample:
    """The train split of ``data_version`` streamed into a sample (batches of ``budget_mb``, at most the
    dataset's budget)."""
    sample = RowSample(cfg.dataset.slices, limit)
    for table in split_tables(store, cfg, data_version, "train", drift_columns(cfg), budget_mb):
        sample.add(table.to_pandas())
        del table
    return sample


def _read(store: VersionedStore, repo: str, key: str) -> Rows:
    import pyarrow.parquet as pq

    counts = json.loads(store.read(repo, BRANCH, f"{PREFIX}{key}.json"))
    with object_file(store, repo, BRANCH, f"{PREFIX}{key}.parquet") as file:
        frame = pq.read_table(file).to_pandas()
    return Rows(frame, int(counts["total"]), counts["slices"])


def reference(store: VersionedStore, cfg: PipelineConfig, data_version: str, limit: int = SAMPLE_ROWS,
              budget_mb: int | None = None) -> Rows:
    """The stored reference of ``data_version`` (in ``cfg``'s dataset), built and committed first if it is not
    stored yet; NotFound when the version has no features."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    repo = derived_repo(cfg)
    key = reference_key(store, cfg, data_version, limit)
    try:
        return _read(store, repo, key)
    except NotFound:
        pass
    rows = sample_split(store, cfg, data_version, limit, budget_mb).rows(drift_columns(cfg))
    counts = {"data_version": data_version, "total": rows.total, "sampled": len(rows.frame), "slices": rows.slices}
    try:
        with (tempfile.TemporaryDirectory(prefix="mlassets-reference-") as tmp,
              store.transaction(repo, BRANCH, f"Drift reference of {data_version[:12]}") as tx):
            file = Path(tmp) / "reference.parquet"
            pq.write_table(pa.Table.from_pandas(rows.frame, preserve_index=False), file)
            tx.put_file(f"{PREFIX}{key}.parquet", file)
            tx.put(f"{PREFIX}{key}.json", json.dumps(counts, indent=1, sort_keys=True).encode())
            tx.metadata.update({"data_version": data_version, "drift_reference": key})
    except Conflict:  # a concurrent report stored the same reference first
        pass
    return _read(store, repo, key)
