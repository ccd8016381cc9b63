"""The ``scaling_profile`` asset (group ops): real 1- and 2-rank runs, metadata, and the file the page reads."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from dashboard import data
from mlassets.core.config import load_config, shipped_configs
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.ops import build

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore:torch.distributed is disabled")]


def test_scaling_profile_measures_one_and_two_ranks(home: str) -> None:
    cfg = load_config(shipped_configs()["flights"])
    (asset,) = build(cfg, DatasetKeys.of(cfg))
    assert asset.group_names_by_key[dg.AssetKey(["flights", "scaling_profile"])] == "ops"
    result = dg.materialize([asset], instance=dg.DagsterInstance.ephemeral(),
                            run_config={"ops": {asset.op.name: {"config": {"max_ranks": 2, "rows": 4096}}}})
    assert result.success
    meta = result.asset_materializations_for_node(asset.op.name)[0].metadata
    assert 0 < meta["efficiency_per_doubling"].value <= 1
    assert meta["samples_per_s_1_ranks"].value > 0 and meta["samples_per_s_2_ranks"].value > 0
    assert meta["restart_s"].value > 0 and meta["checkpoint_stall_s"].value >= 0
    assert meta["dashboard"].value.endswith("/scaling")
    profile = data.scaling_profile()
    assert profile is not None and profile["ranks"] == [1, 2] and Path(meta["path"].value).is_file()
    assert profile["dagster_run_url"].endswith(result.run_id)
