"""One partition's feature frame, built batch by batch: what ``split.partition_frame`` gives for the whole
partition, without holding it.

The main table is read in batches of the memory budget; the partition's other tables (the weather joined to
the flights) are small and read whole, joined to each batch. Each batch's rows are written to the cached frame
as they are built, and only counts are kept: rows per local day (time split) or per split (hash split), and the
rows dropped for a missing target. A source's ``build_frame`` is row-wise, so the batches' rows together are the
partition's rows in the same order.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlassets.core.config import PipelineConfig
from mlassets.core.data.batches import TableWriter, iter_frames, object_file, open_parquet
from mlassets.core.data.raw import main_table, raw_repo
from mlassets.core.data.store import VersionedStore
from mlassets.core.features.split import (
    day_histogram,
    hash_split,
    partition_frame,
    split_by_hash,
    without_missing_target,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


def partition_batches(store: VersionedStore, cfg: PipelineConfig, ref: str, paths: Mapping[str, str],
                      hints: dict[str, pa.DataType] | None = None) -> Iterator[pd.DataFrame]:
    """The partition's joined rows (``split.partition_frame``) one batch of the memory budget at a time (at least
    one batch, empty for an empty partition); ``hints`` gets each raw column's type before the first batch."""
    repo, main, budget = raw_repo(cfg), main_table(cfg), cfg.dataset.memory_budget_mb
    with contextlib.ExitStack() as stack:
        readers = {table: open_parquet(stack.enter_context(object_file(store, repo, ref, path)),
                                       f"{repo}@{ref[:12]}:{path}") for table, path in paths.items()}
        others = {table: reader.read().to_pandas() for table, reader in readers.items() if table != main}
        if hints is not None:
            hints.update({f.name: f.type for reader in readers.values() for f in reader.schema_arrow})
        reader = readers[main]
        batches = (iter_frames(reader, budget, name=f"{repo}@{ref[:12]}:{paths[main]}") if reader.metadata.num_rows
                   else [reader.schema_arrow.empty_table().to_pandas()])
        for batch in batches:
            frame = partition_frame({main: batch, **others}, cfg)
            del batch
            yield frame
            del frame  # before the next batch is read


def build_partition(store: VersionedStore, cfg: PipelineConfig, ref: str, partition: str,
                    paths: Mapping[str, str], out: Path) -> dict[str, Any]:
    """Write the partition's feature frame to ``out``; return what the manifest needs of it (rows, rows per day
    or per split, rows dropped for a missing target)."""
    days: Counter[str] = Counter()
    splits: Counter[str] = Counter()
    dropped = 0
    hints: dict[str, pa.DataType] = {}
    writer: TableWriter | None = None
    for frame in partition_batches(store, cfg, ref, paths, hints):
        writer = writer or TableWriter(out, hints)
        kept, n = without_missing_target(frame, cfg)
        dropped += n
        if cfg.features.split == "hash":  # a row's split is its own: counted once, here
            splits.update({name: int(c) for name, c in split_by_hash(kept, hash_split(cfg)).value_counts().items()})
        else:
            days.update(day_histogram(kept, cfg))
        writer.write(kept)
        del frame, kept  # before the next batch is read
    assert writer is not None  # partition_batches yields at least one batch
    rows = writer.close()
    info: dict[str, Any] = {"partition": partition, "rows": rows}
    if cfg.features.split == "hash":
        info["splits"] = dict(splits)
    else:
        info["days"] = dict(sorted(days.items()))
    info["dropped_missing_target"] = dropped
    return info
