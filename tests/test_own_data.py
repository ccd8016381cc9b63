"""A user's own data with a YAML file and the CLI alone: the own-data tutorial's sales walk-through, a real public
dataset shipped as a file by a package (vega_datasets' Seattle weather) to a champion and an identical rebuild, and
a table with no time column (palmerpenguins) through the hash split to a champion."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mlassets.cli import main
from mlassets.core import tracking
from mlassets.core.config import load_config
from mlassets.core.data.raw import partition_tables
from mlassets.core.data.sources.files import FileRejected
from mlassets.core.registry import versions as registry
from mlassets.core.registry.promote import live_version

pytestmark = pytest.mark.e2e


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``mlassets ARGS`` in this process: its exit code, stdout and stderr."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _package_file(package: str, *parts: str) -> Path:
    module = __import__(package)
    path = Path(module.__file__).parent.joinpath(*parts)
    assert path.is_file(), path
    return path


def test_sales_from_csv_files_to_a_champion_and_an_identical_rebuild(home: str, tmp_path: Path, capsys) -> None:
    code, out, _ = cli(capsys, "example", "sales", str(tmp_path / "sales"), "--months", "3")
    assert code == 0
    config = str(tmp_path / "sales" / "sales.yaml")

    code, out, err = cli(capsys, "ingest", "--config", config, "--partition", "2024-01")
    assert code == 0, err
    assert "data version" in out
    code, again, _ = cli(capsys, "ingest", "--config", config, "--partition", "2024-01")
    assert code == 0 and "no new data version" in again  # the same file again: a no-op that says so

    code, out, err = cli(capsys, "run", "--config", config)
    assert code == 0, err
    assert " pass " in out or "| pass" in out, out

    code, out, err = cli(capsys, "ingest", "--config", config, "--partition", "2024-02")
    assert code == 0, err
    code, out, err = cli(capsys, "run", "--config", config, "--version", "latest")
    assert code == (0 if "| pass" in out or " pass " in out else 3), out + err  # 3: the gate rejected it

    bad = pd.read_csv(tmp_path / "sales" / "data" / "sales_2024-03.csv", dtype=str)
    bad.loc[17, "units"] = "12 units"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    code, out, err = cli(capsys, "ingest", "--config", config, "--partition", "2024-03", "--from",
                         str(tmp_path / "bad.csv"))
    assert code == 2
    assert "rejected; nothing changed" in err and "'units'" in err and "12 units" in err and "bad.csv" in err
    assert "Traceback" not in err

    code, out, _ = cli(capsys, "versions", "--config", config)
    assert code == 0
    assert "2024-03" not in out and len(out.splitlines()) == 3  # the rejected delivery made no version

    good = pd.read_csv(tmp_path / "sales" / "data" / "sales_2024-03.csv", dtype=str).assign(comment="ok")
    good.to_csv(tmp_path / "delivery.csv", index=False)
    code, out, err = cli(capsys, "ingest", "--config", config, "--partition", "2024-03", "--from",
                         str(tmp_path / "delivery.csv"))
    assert code == 0, err
    assert "data version" in out and "note:" in out and "'comment' not declared in the config; not stored" in out
    code, out, _ = cli(capsys, "versions", "--config", config)
    assert [line.split()[1] for line in out.splitlines()[1:]] == ["2024-01", "2024-02", "2024-03"]
    assert [line.split()[0].split(".")[0] for line in out.splitlines()[1:]] == ["2024-01", "2024-02", "2024-03"]
    tracking.configure()
    assert live_version("sales_units") == "1" or live_version("sales_units") == "2"
    code, out, err = cli(capsys, "history")  # no --model: the only config is the user's
    assert code == 0, err
    assert "promote" in out and "hash chain intact" in out

    shutil.rmtree(tmp_path / "sales" / "data")  # the rebuild reads the recorded commit, not the files
    code, out, err = cli(capsys, "rebuild", "sales_units", "--version", "1")
    assert code == 0, out + err
    assert "identical predictions" in out


def _weather_config(directory: Path) -> Path:
    """Seattle's daily weather 2012-2015 (one CSV, four years): partitions are years of its date column."""
    config = {
        "dataset": {
            "name": "weather", "source": "files",
            "path": str(_package_file("vega_datasets", "_data", "seattle-weather.csv")),
            "partition_column": "date", "partitions": {"pattern": "YYYY", "keys": ["2012", "2013", "2014"]},
            "target": "temp_max", "time_column": "date", "key": ["date"], "slices": ["weather"],
            "min_rows": 300, "columns": {
                "date": {"dtype": "datetime", "format": "%Y/%m/%d"}, "precipitation": {"dtype": "float", "min": 0},
                "temp_max": {"dtype": "float", "min": -30, "max": 50}, "temp_min": {"dtype": "float", "min": -30,
                                                                                    "max": 50},
                "wind": {"dtype": "float", "min": 0}, "weather": {"dtype": "str"},
            },
        },
        "features": {"categorical": ["weather"], "numeric": ["precipitation", "temp_min", "wind"],
                     "holdout_days": 45, "validation_days": 30, "train_window_months": 36},
        "model": {"registered_name": "seattle_temp_max", "hidden": [16]},
        "training": {"epochs": 8, "batch_size": 64},
        "gate": {"main_metric": "mae", "tolerance": 0.1, "slice_min_rows": 20, "slice_max_regression": 0.5,
                 "absolute_max_metric": 6.0, "prediction_min": -30, "prediction_max": 50},
    }
    path = directory / "weather.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_a_public_dataset_shipped_as_a_file_reaches_a_champion_and_rebuilds_identically(home, tmp_path, capsys):
    config = str(_weather_config(tmp_path))
    for year in ("2012", "2013"):
        code, out, err = cli(capsys, "ingest", "--config", config, "--partition", year)
        assert code == 0, err
        code, out, err = cli(capsys, "run", "--config", config)
        assert code == 0, out + err
    tracking.configure()
    champion = live_version("seattle_temp_max")
    assert champion in ("1", "2")
    assert registry.get_version("seattle_temp_max", champion).tags["gate_passed"] == "true"

    code, out, err = cli(capsys, "rebuild", "seattle_temp_max", "--version", champion)
    assert code == 0, out + err
    assert "identical predictions" in out


def _penguins_config(directory: Path) -> Path:
    """Palmer penguins: no time column at all; partitions are the study years (a column, not a time); two rows
    have no body mass, dropped by the config."""
    measure = {"dtype": "float", "nullable": True, "min": 0}
    config = {
        "dataset": {
            "name": "penguins", "source": "files",
            "path": str(_package_file("palmerpenguins", "data", "penguins.csv")),
            "partition_column": "year", "partitions": {"pattern": "YYYY", "keys": ["2007", "2008", "2009"]},
            "target": "body_mass_g", "drop_missing_target": True,
            "key": ["species", "island", "bill_length_mm", "bill_depth_mm", "flipper_length_mm", "sex", "year"],
            "slices": ["species"], "min_rows": 80, "columns": {
                "species": {"dtype": "str", "allowed": ["Adelie", "Chinstrap", "Gentoo"]},
                "island": {"dtype": "str"}, "bill_length_mm": measure, "bill_depth_mm": measure,
                "flipper_length_mm": measure, "body_mass_g": {**measure, "max": 10000},
                "sex": {"dtype": "str", "nullable": True}, "year": {"dtype": "int"},
            },
        },
        "features": {"split": "hash", "categorical": ["species", "island", "sex"],
                     "numeric": ["bill_length_mm", "bill_depth_mm", "flipper_length_mm"],
                     "validation_fraction": 0.2, "holdout_fraction": 0.25},
        "model": {"registered_name": "penguin_mass", "hidden": [16], "output_min": 0},
        "training": {"epochs": 20, "batch_size": 32},
        "gate": {"main_metric": "mae", "tolerance": 0.1, "slice_min_rows": 15, "slice_max_regression": 0.5,
                 "absolute_max_metric": 600.0, "prediction_min": 0, "prediction_max": 10000},
    }
    path = directory / "penguins.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_a_table_without_time_goes_through_the_hash_split_to_a_champion(home, tmp_path, capsys) -> None:
    config = str(_penguins_config(tmp_path))
    assert load_config(config).dataset.time_column is None
    code, out, err = cli(capsys, "demo", "--config", config, "--months", "2")
    assert code == 0, out + err
    assert "pass" in out
    tracking.configure()
    assert live_version("penguin_mass") in ("1", "2")
    first = registry.record_of(registry.get_version("penguin_mass", "1"))
    assert first.gate_result.passed
    assert registry.gate_result_of(first).dropped_missing_target == 1  # 2007's penguin without a body mass
    assert "2007: 1 rows without a 'body_mass_g' were left out (dataset.drop_missing_target)" in out  # the run says
    code, out, _ = cli(capsys, "versions", "--config", config)
    assert code == 0 and "2007" in out and "2008" in out
    header, first = out.splitlines()[:2]
    assert header.endswith("no target") and first.endswith(" 1")  # 2007's penguin without a body mass
    code, out, err = cli(capsys, "ingest", "--config", config, "--partition", "2009")
    assert code == 0, err
    assert "1 rows without a target 'body_mass_g': stored, and dropped before the split" in out


def test_a_table_of_years_and_months_reaches_a_champion_with_no_threshold_in_its_config(home, tmp_path, capsys):
    """The first hour with a Texas-housing-like table (tests/housing.py): its fractional-year dates are refused as
    dates, a date built from year and month splits it by time, bare years are its keys, and every gate and band
    threshold is derived from the data and said."""
    from tests.housing import write_housing

    config = write_housing(tmp_path / "housing", [2000, 2001])
    data = yaml.safe_load(config.read_text())
    assert "gate" not in data and not {"min_rows", "row_change_band", "target_mean_band"} & set(data["dataset"])
    as_given = yaml.safe_load(config.read_text())
    columns = as_given["dataset"]["columns"]
    columns.pop("month_start")
    columns["date"], as_given["dataset"]["time_column"] = {"dtype": "datetime"}, "date"
    (tmp_path / "housing" / "as_given.yaml").write_text(yaml.safe_dump(as_given))
    with pytest.raises(FileRejected, match=r"column 'date', row 2: '2000.0' is not a date or time in ISO 8601"):
        partition_tables(load_config(tmp_path / "housing" / "as_given.yaml"), "2000")  # what ingest refuses

    code, out, err = cli(capsys, "ingest", "--config", str(config), "--partition", "2000")
    assert code == 0, err
    assert "data version 2000." in out and "min_rows: every partition has at least 1 rows (derived: " in out
    code, out, err = cli(capsys, "run", "--config", str(config))
    assert code == 0, out + err
    assert " pass " in out and "derived a first model must beat the naive baseline: MAE " in out
    assert "derived sanity range [" in out and "(gate.prediction_min / prediction_max)" in out
    code, out, err = cli(capsys, "ingest", "--config", str(config), "--partition", "2001")
    assert code == 0 and "target_mean: " in out and "derived: not judged on first sight" in out
    code, out, err = cli(capsys, "run", "--config", str(config))
    assert code == 0, out + err
    assert "Not judged by the slice rule" not in out  # 46 cities of 3 holdout rows each: judged together
    assert "2001: judged together (gate.slice_min_rows): slice city=(46 values under 200 rows, pooled) " in out
    code, out, _ = cli(capsys, "versions", "--config", str(config))
    assert out.splitlines()[0].split()[:4] == ["data", "version", "years", "added"]
    assert [line.split()[0][:5] for line in out.splitlines()[1:]] == ["2000.", "2001."]
