"""Dates by an explicit format (ISO 8601 by default) or built from year and month columns; anything else is
refused naming the file, column, row and value. Also: rows without a target, bare years as keys, ``training:``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from mlassets.core.config import ColumnSpec, ConfigError, load_config, parse_config
from mlassets.core.data.dates import parse_dates
from mlassets.core.data.sources.files import FileRejected
from mlassets.core.data.sources.files_read import read_table
from mlassets.examples.sales import write_example

DATE = {"date": ColumnSpec("datetime")}


def _csv(tmp_path: Path, text: str) -> str:
    path = tmp_path / "t_{partition}.csv"
    Path(str(path).replace("{partition}", "2009")).write_text(text)
    return str(path)


@pytest.mark.parametrize("value", ["2009.5", "2000.08333", "2000.0", "2012/01/01", "20130101", "2013", "31.01.2013"])
def test_a_value_that_is_not_iso_8601_is_refused_with_file_column_row_and_value(tmp_path: Path, value: str) -> None:
    template = _csv(tmp_path, f"date\n2009-06-01\n{value}\n")
    with pytest.raises(FileRejected) as err:
        read_table(template, "2009", "csv", DATE)
    assert str(err.value) == (f"{template.replace('{partition}', '2009')}: column 'date', row 3: {value!r} is not a "
                              "date or time in ISO 8601 (e.g. 2013-01-31 or 2013-01-31T05:00:00)")


def test_iso_8601_forms_are_read_as_utc() -> None:
    parsed = parse_dates(pd.Series(["2013-01-31", "2013-01-31T05:00", "2013-01-31 05:00:00+02:00",
                                    "2013-01-31T05:00:00.25Z"]))
    assert [str(t) for t in parsed] == ["2013-01-31 00:00:00+00:00", "2013-01-31 05:00:00+00:00",
                                        "2013-01-31 03:00:00+00:00", "2013-01-31 05:00:00.250000+00:00"]


def test_an_explicit_format_is_matched_exactly(tmp_path: Path) -> None:
    spec = {"date": ColumnSpec("datetime", format="%d/%m/%Y")}
    frame = read_table(_csv(tmp_path, "date\n31/01/2013\n01/02/2013\n"), "2009", "csv", spec)
    assert [str(d.date()) for d in frame["date"]] == ["2013-01-31", "2013-02-01"]
    with pytest.raises(FileRejected, match=r"row 2: '2013-01-31' is not a date or time in the format '%d/%m/%Y'"):
        read_table(_csv(tmp_path, "date\n2013-01-31\n"), "2009", "csv", spec)


def test_a_date_built_from_year_and_month_columns(tmp_path: Path) -> None:
    columns = {"year": ColumnSpec("int"), "month": ColumnSpec("int"),
               "month_start": ColumnSpec("datetime", from_columns={"year": "year", "month": "month"})}
    notes: list[str] = []
    frame = read_table(_csv(tmp_path, "year,month,date\n2009,6,2009.4167\n2009,12,2009.9167\n"), "2009", "csv",
                       columns, notes)
    assert [str(d) for d in frame["month_start"]] == ["2009-06-01 00:00:00+00:00", "2009-12-01 00:00:00+00:00"]
    assert any("'date' not declared in the config; not stored" in n for n in notes)  # the fractional years
    with pytest.raises(FileRejected, match=r"column 'month_start' \(built from year, month\), row 3: year='2009', "
                                           r"month='13' is not a date"):
        read_table(_csv(tmp_path, "year,month\n2009,6\n2009,13\n"), "2009", "csv", columns)


def _sales(tmp_path: Path) -> dict:
    return yaml.safe_load(write_example(tmp_path / "sales", months=1).read_text())


@pytest.mark.parametrize(("column", "spec", "message"), [
    ("units", {"dtype": "float", "format": "%Y"}, "dataset.columns.units.format: '%Y' is for datetime columns"),
    ("date", {"dtype": "datetime", "format": "YYYY-MM-DD"},
     "dataset.columns.date.format: 'YYYY-MM-DD' is not a strftime format"),
    ("date", {"dtype": "datetime", "from_columns": {"month": "units"}},
     "dataset.columns.date.from_columns: {'month': 'units'} must name the year's column"),
    ("date", {"dtype": "datetime", "from_columns": {"year": "city"}},
     "dataset.columns.date.from_columns.year: 'city' must be another int column declared beside it (it is 'str')"),
    ("date", {"dtype": "datetime", "from_columns": {"year": "yr"}},
     "dataset.columns.date.from_columns.year: 'yr' must be another int column declared beside it"),
])
def test_date_keys_are_checked_at_load_naming_key_and_value(tmp_path: Path, column: str, spec: dict,
                                                            message: str) -> None:
    data = _sales(tmp_path)
    data["dataset"]["columns"][column] = spec
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert message in str(err.value)


def test_bare_years_are_partition_keys_and_training_may_be_left_out(tmp_path: Path) -> None:
    data = _sales(tmp_path)
    data["dataset"]["partitions"] = {"pattern": "YYYY", "keys": [2009, 2010]}  # as YAML reads `[2009, 2010]`
    del data["training"]
    cfg = parse_config(data)
    assert cfg.dataset.partitions.keys == ["2009", "2010"] and cfg.training.epochs == 4
    with pytest.raises(ConfigError, match=r"dataset.partitions.keys\[0\]: expected a string, got True"):
        parse_config({**data, "dataset": {**data["dataset"], "partitions": {"pattern": "YYYY", "keys": [True]}}})


def test_a_row_without_a_target_names_file_and_row_and_the_key_that_drops_it(tmp_path: Path) -> None:
    config = write_example(tmp_path / "sales", months=1)
    cfg = load_config(config)
    path = Path(cfg.dataset.path.replace("{partition}", "2024-01"))
    frame = pd.read_csv(path, dtype=str)
    frame.loc[4, "units"] = ""
    frame.to_csv(path, index=False)
    from mlassets.core.data.raw import partition_tables

    with pytest.raises(FileRejected) as err:
        partition_tables(cfg, "2024-01")
    assert str(err.value) == (f"{path}: column 'units', row 6: the target is missing; set "
                              "dataset.drop_missing_target: true to drop rows without a target (they are counted)")
