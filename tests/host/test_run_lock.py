"""One data version, one candidate per config and code (issue 33, case 4): `mlassets run` of a version that was
trained already starts nothing and names the model version; two at once, the second is refused at once; a run of
the version in progress from another door (the daemon) is refused too; ``--again`` is a deliberate retrain,
recorded as such on its run."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import mlflow
import pytest

from mlassets.cli import main
from mlassets.cli.versions import data_versions
from mlassets.core import tracking
from mlassets.core.config import load_config
from mlassets.core.registry.promotion import PromotionLog
from mlassets.host.instance import get_instance
from mlassets.host.run_lock import only_run

pytestmark = pytest.mark.e2e


def test_a_data_version_is_trained_once_from_the_cli_unless_again(home: str, tmp_path: Path, capsys) -> None:
    assert main(["example", "sales", str(tmp_path / "sales"), "--months", "1"]) == 0
    config = str(tmp_path / "sales" / "sales.yaml")
    cfg = load_config(config)
    assert main(["ingest", "--config", config, "--partition", "2024-01"]) == 0
    (version,) = data_versions(cfg)
    instance = get_instance()
    with only_run(instance, cfg, version.commit):  # a first `mlassets run` of this version, training now
        capsys.readouterr()
        assert main(["run", "--config", config]) == 2
        assert "is running data version" in capsys.readouterr().err
    assert main(["run", "--config", config]) == 0
    capsys.readouterr()
    assert main(["run", "--config", config]) == 0  # one after the other: the second starts nothing
    out = capsys.readouterr().out
    assert f"was trained with this config and code already: model {cfg.model.registered_name} v1" in out
    tracking.configure()
    name = cfg.model.registered_name
    assert [str(v.version) for v in mlflow.MlflowClient().search_model_versions(f"name = '{name}'")] == ["1"]
    assert [e.to_version for e in PromotionLog().entries(name) if e.applied] == ["1"]
    runs = instance.get_runs(dg.RunsFilter(job_name=f"{cfg.dataset.name}_pipeline"))
    assert len(runs) == 1
    assert main(["run", "--config", config, "--again"]) in (0, 3)  # a deliberate retrain: a second candidate
    versions = mlflow.MlflowClient().search_model_versions(f"name = '{name}'")
    assert sorted(int(v.version) for v in versions) == [1, 2]
    newest = instance.get_runs(dg.RunsFilter(job_name=f"{cfg.dataset.name}_pipeline"), limit=1)[0]
    assert newest.tags["mlassets/again"] == "retrain of v1"
