"""What a config leaves in the home: a config whose first ingest is refused is not kept among the home's configs (the
code location would build its graphs for a dataset that has nothing); `mlassets versions` names the config whose
dataset registered the champion when it is another one's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from mlassets.cli import main
from mlassets.core import paths
from mlassets.core.records import RecordFiles
from mlassets.core.registry.promotion import PromotionLog
from mlassets.core.registry.record import RegisteredVersion
from mlassets.examples.sales import write_example
from tests.core.registry.test_promotion import record


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _bad_delivery(directory: Path, month: str) -> Path:
    bad = pd.read_csv(directory / "data" / f"sales_{month}.csv", dtype=str)
    bad.loc[3, "units"] = "12 units"
    path = directory / f"bad_{month}.csv"
    bad.to_csv(path, index=False)
    return path


def test_a_config_whose_first_ingest_is_refused_is_not_kept(home: str, tmp_path: Path, capsys) -> None:
    config = write_example(tmp_path / "sales", months=2)
    kept = paths.configs_dir() / "sales.yaml"
    code, _, err = cli(capsys, "ingest", "--config", str(config), "--partition", "2024-01", "--from",
                       str(_bad_delivery(tmp_path / "sales", "2024-01")))
    assert code == 2 and "rejected; nothing changed" in err
    assert not kept.exists()  # refused on first sight: the home has no trace of this dataset's config

    code, _, err = cli(capsys, "ingest", "--config", str(config), "--partition", "2024-01")
    assert code == 0, err
    assert kept.is_file()
    code, _, err = cli(capsys, "ingest", "--config", str(config), "--partition", "2024-02", "--from",
                       str(_bad_delivery(tmp_path / "sales", "2024-02")))
    assert code == 2 and kept.is_file()  # a later refusal: the dataset has a version, its config stays


def test_versions_names_the_config_whose_dataset_holds_the_champion(home: str, tmp_path: Path, capsys) -> None:
    config = write_example(tmp_path / "sales", months=1)
    other = yaml.safe_load(config.read_text())
    other["dataset"]["name"] = "sales_old"  # the same registered model, another dataset
    (paths.configs_dir()).mkdir(parents=True, exist_ok=True)
    (paths.configs_dir() / "sales_old.yaml").write_text(yaml.safe_dump(other))
    RecordFiles(paths.records_root()).write(["sales_old", "registered_model"], "2024-01.0123abcd",
                                            RegisteredVersion(name="sales_units", version="1", record=record(True)))
    PromotionLog().append_next("sales_units", {"action": "promote", "from_version": None, "to_version": "1",
                                               "reason": "gate passed"})
    code, out, err = cli(capsys, "versions", "--config", str(config))
    assert code == 0, err
    assert "champion: sales_units v1 came from dataset 'sales_old', not 'sales'" in out
    assert f"its config: {paths.configs_dir() / 'sales_old.yaml'}" in out
