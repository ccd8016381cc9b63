"""A table's first file holds nine years (2000-2008), then one file a year, its target (house prices) rising through
every version, and no dataset key set: every derived check lets each year in, comparing rows per calendar day (not
per file) and reading the trend from the history; a real break (a year delivered in thousands, a file of four
cities) is still refused."""

from __future__ import annotations

import pandas as pd
import pytest

from mlassets.core.config import load_config
from mlassets.core.data.partition_checks import validate_row_change, validate_target_mean, validate_target_quantiles
from mlassets.core.data.schema import validate_min_rows
from mlassets.core.data.summary import PartitionSummary, TargetStats
from tests.housing import housing_table, write_housing

YEARS = list(range(2009, 2016))


@pytest.fixture(scope="module")
def housing(tmp_path_factory: pytest.TempPathFactory):
    cfg = load_config(write_housing(tmp_path_factory.mktemp("housing"), [2008, *YEARS]))
    ds = cfg.dataset
    assert (ds.min_rows, ds.row_change_band, ds.target_mean_band, ds.target_quantile_band) == (None,) * 4  # no keys
    table = housing_table().assign(month_start=lambda f: pd.to_datetime(
        {"year": f["year"], "month": f["month"], "day": 1}))
    files = {"2000-2008": table[table["year"] <= 2008], **{str(y): table[table["year"] == y] for y in YEARS}}
    return ds, {k: PartitionSummary.of_frame(k, f, ds.target, ds.time_column) for k, f in files.items()}


def _checks(ds, summaries: dict[str, PartitionSummary], new: str) -> list:
    """The cross-partition checks of the version that adds ``new`` (what ``snapshot.check_version`` runs)."""
    counts = {k: s.rows for k, s in summaries.items()}
    seen = [s.target for k, s in summaries.items() if k != new]
    others = {k: n for k, n in counts.items() if k != new}
    return [validate_min_rows({new: counts[new]}, ds, others),
            validate_row_change(counts, [new], ds, {k: s.days for k, s in summaries.items()}),
            validate_target_mean(summaries[new].target, TargetStats.merge(seen), [new], ds, seen),
            validate_target_quantiles(summaries[new].target, TargetStats.merge(seen), [new], ds, seen)]


def test_every_later_year_is_let_in_with_no_dataset_keys(housing) -> None:
    ds, summaries = housing
    first = summaries["2000-2008"]
    assert (first.rows, first.days) == (46 * 108, 108) and summaries["2009"].days == 12  # days of the time column
    means = [summaries[str(y)].target.mean for y in YEARS]
    assert all(b > a for a, b in zip(means, means[1:], strict=False))  # the target rises through every version
    for i, year in enumerate(YEARS):
        version = {k: summaries[k] for k in ["2000-2008", *map(str, YEARS[: i + 1])]}
        outcomes = _checks(ds, version, str(year))
        assert all(o.passed for o in outcomes), [o.message for o in outcomes if not o.passed]
    second = _checks(ds, {k: summaries[k] for k in ("2000-2008", "2009")}, "2009")[1]
    assert "552 rows over 12 days (46 a day) vs 46 rows a day" in second.message  # like with like, said
    assert "not judged on first sight" in second.message


def test_a_real_break_is_still_refused(housing) -> None:
    ds, summaries = housing
    table = housing_table()
    halved = table[table["year"] == 2013].assign(median=lambda f: f["median"] / 1000,  # delivered in thousands
                                                 month_start=lambda f: pd.to_datetime(
                                                     {"year": f["year"], "month": f["month"], "day": 1}))
    version = {k: summaries[k] for k in ["2000-2008", "2009", "2010", "2011", "2012"]}
    version["2013"] = PartitionSummary.of_frame("2013", halved, ds.target, ds.time_column)
    mean, quantiles = _checks(ds, version, "2013")[2:]
    assert not mean.passed and not quantiles.passed
    few = {**version, "2013": PartitionSummary.of_frame("2013", halved.head(46), ds.target, ds.time_column)}
    rows = _checks(ds, few, "2013")[1]  # four cities' year: a tenth of the rows a day
    assert not rows.passed and "partition 2013: 46 rows over 12 days (3.833 a day), -92% vs the mean 46" in rows.message
