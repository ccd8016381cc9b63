"""What drift compares: the rows a data version adds, and the champion's training rows.

The champion is the promotion log's live version; its registry record names the dataset and data commit it trained
on, and that version's train split (the features manifest in that dataset's derived repository) is the reference
(datasets that share a registered model, like ``flights`` and ``flights_lightgbm``, compare with whichever trained
it). The new rows are built from the raw tables of the partitions the version added, with the source's
``build_frame``, so that a report needs neither features nor training of the new version.

Both sides are read in batches of the memory budget into a bounded sample with exact counts (``sample``); the
reference is built once per champion's data version and kept in the store (``reference_store``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from mlassets.core.config import PipelineConfig
from mlassets.core.data.raw import partition_objects
from mlassets.core.data.store import NotFound, VersionedStore
from mlassets.core.features.build import partition_batches
from mlassets.core.monitor.drift import DriftReport, drift_report, no_champion
from mlassets.core.monitor.reference_store import drift_columns, reference
from mlassets.core.monitor.sample import SAMPLE_ROWS, Rows, RowSample
from mlassets.core.registry import promote, versions


@dataclass(frozen=True)
class Champion:
    version: str
    data_commit: str  # the data version it trained on
    dataset: str = ""  # ... of this dataset ("": the config's own)


def live_champion(cfg: PipelineConfig) -> Champion | None:
    """The live champion (by the promotion log) and its data commit (by its registry record); None before one."""
    name = cfg.model.registered_name
    live = promote.live_version(name)
    if live is None:
        return None
    record = versions.record_of(versions.get_version(name, live))
    return Champion(live, record.data_commit, record.dataset)


def new_rows(store: VersionedStore, cfg: PipelineConfig, commit: str, partitions: Sequence[str],
             limit: int = SAMPLE_ROWS) -> Rows:
    """The rows of ``partitions`` at ``commit``, built by the dataset's source batch by batch: a sample of at most
    ``limit`` of them (of the columns drift reads) and their exact counts."""
    objects = partition_objects(store, cfg, commit)
    missing = [p for p in partitions if p not in objects]
    if missing:
        raise ValueError(f"drift: data version {commit} holds no partition {missing[0]!r}")
    columns, sample = drift_columns(cfg), RowSample(cfg.dataset.slices, limit)
    for partition in partitions:
        for frame in partition_batches(store, cfg, commit, objects[partition]):
            sample.add(frame[columns])
            del frame
    return sample.rows(columns)


def reference_rows(store: VersionedStore, cfg: PipelineConfig, champion: Champion, limit: int = SAMPLE_ROWS) -> Rows:
    """The champion's training rows: the stored sample of the train split of the data version it was trained on
    (in its own dataset), built the first time it is asked for."""
    if champion.dataset and champion.dataset != cfg.dataset.name:
        cfg = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, name=champion.dataset))
    try:
        return reference(store, cfg, champion.data_commit, limit)
    except NotFound:
        raise ValueError(f"drift: the features of data version {champion.data_commit} (champion v{champion.version}'s "
                         "training data) are not in the derived repository; materialize its features first") from None


def version_drift(store: VersionedStore, cfg: PipelineConfig, commit: str, partitions: Sequence[str]) -> DriftReport:
    """The drift report of data version ``commit``, whose new partitions are ``partitions``."""
    rows = new_rows(store, cfg, commit, partitions)
    champion = live_champion(cfg)
    if champion is None:
        return no_champion(commit, list(partitions), rows.total)
    return drift_report(reference_rows(store, cfg, champion), rows, cfg, data_version=commit,
                        new_partitions=list(partitions), champion_version=champion.version,
                        reference_data_version=champion.data_commit)
