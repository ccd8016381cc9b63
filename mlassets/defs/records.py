"""The IO manager that hands typed records between assets: one JSON file per asset and partition."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from mlassets.core import paths
from mlassets.core.records import Record, RecordFiles


def _partition(context: dg.OutputContext | dg.InputContext) -> str | None:
    return context.asset_partition_key if context.has_asset_partitions else None


class RecordIOManager(dg.ConfigurableIOManager):
    """Stores an asset's ``Record`` output as JSON under ``root/<asset key>/<partition>.json`` and loads it back
    as the type the consuming asset annotates. Large things (features, checkpoints, models) never pass here."""

    root: str = Field(default="", description="directory of the records (default $MLASSETS_HOME/records)")

    def files(self) -> RecordFiles:
        return RecordFiles(self.root or paths.records_root())

    def handle_output(self, context: dg.OutputContext, obj: object) -> None:
        if obj is None:
            return
        if not isinstance(obj, Record):
            raise TypeError(f"{context.asset_key.to_user_string()}: outputs a {type(obj).__name__}, not a record")
        path = self.files().write(context.asset_key.path, _partition(context), obj)
        context.add_output_metadata({"record": dg.MetadataValue.path(str(path))})

    def load_input(self, context: dg.InputContext) -> Record:
        wanted = getattr(context.dagster_type, "typing_type", None)
        cls = wanted if isinstance(wanted, type) and issubclass(wanted, Record) else None
        return self.files().read(context.asset_key.path, _partition(context), cls)
