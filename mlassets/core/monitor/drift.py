"""Drift of new rows against reference rows: PSI per feature, a KS test on the target, overall and per slice.

PSI (population stability index) = sum over bins of (new share - reference share) * ln(new / reference).
Numeric features are binned at the reference's deciles (ties merged, missing values in a bin of their own);
categorical ones by value: the reference's ``BINS - 1`` most common values, the rest of its values as ``(other)``
(so that rare values do not turn sampling noise into distance), every value it never saw as ``(unseen)``. Empty
bins count as ``EPSILON``: a category that appears or vanishes gives a large but finite distance. The target is
compared with the two-sample Kolmogorov-Smirnov test (a multiclass target: its class shares by PSI, as a
category). A slice value is compared only when both sides hold at least ``monitoring.drift_min_rows`` of its rows
(smaller ones are listed as skipped, never flagged).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mlassets.core.config import PipelineConfig
from mlassets.core.monitor.sample import Rows, category_keys
from mlassets.core.records import Record

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

EPSILON = 1e-4  # share given to an empty bin
BINS = 10  # reference quantile bins of a numeric feature
ALL = "all"
PSI, KS = "psi", "ks_pvalue"
UNSEEN, OTHER = "(unseen)", "(other)"


@dataclass(frozen=True, kw_only=True)
class DriftRow(Record):
    """One statistic of one column in one scope (``all`` or ``slice carrier=UA``)."""

    scope: str
    feature: str
    statistic: str  # psi (a feature, or a multiclass target) or ks_pvalue (a numeric target)
    value: float
    threshold: float
    drifted: bool
    new_rows: int
    reference_rows: int


@dataclass(frozen=True, kw_only=True)
class DriftReport(Record):
    """A data version's new rows against the champion's training rows; ``drifted`` when any row is."""

    data_version: str
    new_partitions: list[str]
    champion_version: str | None  # the reference model (None: no champion yet, nothing compared)
    reference_data_version: str | None  # the champion's data commit, whose train split is the reference
    new_rows: int
    reference_rows: int
    rows: list[DriftRow]
    drifted: bool
    reasons: list[str]  # one sentence per drifted row, overall first
    skipped: list[str] = field(default_factory=list)  # scopes with too few rows to compare
    note: str = ""


def _psi(ref_share: np.ndarray, new_share: np.ndarray) -> float:
    import numpy as np

    ref, new = np.maximum(ref_share, EPSILON), np.maximum(new_share, EPSILON)
    return float(np.sum((new - ref) * np.log(new / ref)))


def psi_numeric(reference: np.ndarray, new: np.ndarray, bins: int = BINS) -> float:
    """PSI over the reference's quantile bins (ties merged); missing values form their own bin."""
    import numpy as np

    reference, new = np.asarray(reference, dtype=float), np.asarray(new, dtype=float)
    ref_ok = reference[np.isfinite(reference)]
    edges = np.unique(np.quantile(ref_ok, np.linspace(0, 1, bins + 1)[1:-1])) if ref_ok.size else np.array([])

    def shares(values: np.ndarray) -> np.ndarray:
        ok = np.isfinite(values)
        index = np.where(ok, np.searchsorted(edges, values, side="left"), edges.size + 1)
        return np.bincount(index, minlength=edges.size + 2) / max(values.size, 1)

    return _psi(shares(reference), shares(new))


def psi_categorical(reference: pd.Series, new: pd.Series, bins: int = BINS) -> float:
    """PSI over category shares: the reference's ``bins - 1`` most common values, ``(other)`` (its other values)
    and ``(unseen)`` (values it never saw)."""
    import pandas as pd

    ref_keys, new_keys = category_keys(reference), category_keys(new)
    counts = ref_keys.value_counts()
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    top = pd.Index([k for k, _ in ranked[: bins - 1]])
    seen = new_keys.isin(counts.index)
    new_keys = new_keys.where(new_keys.isin(top), OTHER).where(seen, UNSEEN)
    ref_keys = ref_keys.where(ref_keys.isin(top), OTHER)
    bins_index = top.append(pd.Index([OTHER, UNSEEN]))
    ref_share = ref_keys.value_counts().reindex(bins_index, fill_value=0).to_numpy() / max(len(ref_keys), 1)
    new_share = new_keys.value_counts().reindex(bins_index, fill_value=0).to_numpy() / max(len(new_keys), 1)
    return _psi(ref_share, new_share)


def ks_target(reference: pd.Series, new: pd.Series) -> tuple[float, float]:
    """``(statistic, p-value)`` of the two-sample KS test on the non-missing target values."""
    import numpy as np
    from scipy import stats

    ref, now = _floats(reference), _floats(new)
    ref, now = ref[~np.isnan(ref)], now[~np.isnan(now)]
    if not ref.size or not now.size:
        return float("nan"), float("nan")
    result = stats.ks_2samp(ref, now)
    return float(result.statistic), float(result.pvalue)


def _floats(series: pd.Series) -> np.ndarray:
    """A numeric column as float64; missing values (NaN, None, pd.NA) and text become NaN."""
    import numpy as np
    import pandas as pd

    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _where(scope: str) -> str:
    return "all rows" if scope == ALL else scope


def _reason(row: DriftRow, target: str) -> str:
    if row.statistic == PSI and row.feature == target:  # a multiclass target
        return f"target {target}: PSI of the class shares {row.value:.2f} > {row.threshold:g} ({_where(row.scope)})"
    if row.statistic == PSI:
        return f"feature {row.feature}: PSI {row.value:.2f} > {row.threshold:g} ({_where(row.scope)})"
    return f"target {target}: KS p-value {row.value:.2g} < {row.threshold:g} ({_where(row.scope)})"


def compare_scope(reference: pd.DataFrame, new: pd.DataFrame, cfg: PipelineConfig, scope: str = ALL,
                  skip: str | None = None, counts: tuple[int, int] | None = None) -> list[DriftRow]:
    """Every feature's PSI and the target's KS p-value between two frames (``skip``: a slice's own column);
    ``counts``: the scope's ``(reference, new)`` rows where the frames are samples of them."""
    mon, feats, target = cfg.monitoring, cfg.features, cfg.dataset.target
    n_ref, n_new = counts or (len(reference), len(new))
    sizes = {"new_rows": n_new, "reference_rows": n_ref}
    rows = []
    for column in [*feats.categorical, *feats.numeric]:
        if column == skip:
            continue
        for frame, side in ((reference, "reference"), (new, "new")):
            if column not in frame.columns:
                raise ValueError(f"drift: feature {column!r} is not in the {side} rows (have: "
                                 f"{', '.join(map(str, frame.columns))})")
        if column in feats.categorical:
            value = psi_categorical(reference[column], new[column])
        else:
            value = psi_numeric(_floats(reference[column]), _floats(new[column]))
        rows.append(DriftRow(scope=scope, feature=column, statistic=PSI, value=value, threshold=mon.drift_psi,
                             drifted=value > mon.drift_psi, **sizes))
    if cfg.dataset.task == "multiclass":  # class labels: the shares of the classes, like a categorical feature
        value = psi_categorical(reference[target], new[target])
        rows.append(DriftRow(scope=scope, feature=target, statistic=PSI, value=value, threshold=mon.drift_psi,
                             drifted=value > mon.drift_psi, **sizes))
        return rows
    _, pvalue = ks_target(reference[target], new[target])
    rows.append(DriftRow(scope=scope, feature=target, statistic=KS, value=pvalue, threshold=mon.drift_ks_pvalue,
                         drifted=bool(pvalue < mon.drift_ks_pvalue), **sizes))
    return rows


def _rows(side: pd.DataFrame | Rows, cfg: PipelineConfig) -> Rows:
    return side if isinstance(side, Rows) else Rows.whole(side, cfg.dataset.slices)


def compare(reference: pd.DataFrame | Rows, new: pd.DataFrame | Rows,
            cfg: PipelineConfig) -> tuple[list[DriftRow], list[str]]:
    """Rows of every scope with enough rows on both sides (all rows, then each slice value), and the skipped. A side
    is a frame of all its rows, or ``Rows``: a sample of them with their exact counts (a scope is compared when
    both its counts and its sampled rows reach ``monitoring.drift_min_rows``)."""
    least = cfg.monitoring.drift_min_rows
    reference, new = _rows(reference, cfg), _rows(new, cfg)
    rows: list[DriftRow] = []
    skipped: list[str] = []

    def enough(scope: str, counts: tuple[int, int], sampled: tuple[int, int]) -> bool:
        (n_ref, n_new), (s_ref, s_new) = counts, sampled
        if min(n_ref, n_new) < least:
            skipped.append(f"{scope}: {n_new} new rows, {n_ref} reference rows (fewer than {least})")
        elif min(s_ref, s_new) < least:
            skipped.append(f"{scope}: {n_new} new rows, {n_ref} reference rows, of which {s_new} and {s_ref} "
                           f"sampled (fewer than {least})")
        return min(n_ref, n_new, s_ref, s_new) >= least

    ref_frame, new_frame = reference.frame, new.frame
    whole = (reference.total, new.total)
    if enough(ALL, whole, (len(ref_frame), len(new_frame))):
        rows.extend(compare_scope(ref_frame, new_frame, cfg, counts=whole))
    for column in cfg.dataset.slices:
        ref_keys, new_keys = category_keys(ref_frame[column]), category_keys(new_frame[column])
        for value in sorted(new.slices.get(column, {})):
            scope, counts = f"slice {column}={value}", (reference.count(column, value), new.count(column, value))
            ref_part, new_part = ref_frame[ref_keys == value], new_frame[new_keys == value]
            if enough(scope, counts, (len(ref_part), len(new_part))):
                rows.extend(compare_scope(ref_part, new_part, cfg, scope, column, counts))
    return rows, skipped


def reasons_of(rows: list[DriftRow], target: str) -> list[str]:
    """One sentence per drifted row: all rows first, then slices; the largest PSI first, then the target."""
    order = {scope: i for i, scope in enumerate(dict.fromkeys(r.scope for r in rows))}
    drifted = sorted((r for r in rows if r.drifted),
                     key=lambda r: (order[r.scope], r.statistic != PSI, -r.value if r.statistic == PSI else r.value))
    return [_reason(r, target) for r in drifted]


def drift_report(reference: pd.DataFrame | Rows, new: pd.DataFrame | Rows, cfg: PipelineConfig, *,
                 data_version: str, new_partitions: list[str], champion_version: str,
                 reference_data_version: str) -> DriftReport:
    """Compare ``new`` (the version's new rows) with ``reference`` (the champion's training rows), each a frame or
    ``Rows`` (a sample and exact counts)."""
    reference, new = _rows(reference, cfg), _rows(new, cfg)
    rows, skipped = compare(reference, new, cfg)
    reasons = reasons_of(rows, cfg.dataset.target)
    note = "" if rows else "too few rows to compare (see skipped)"
    return DriftReport(data_version=data_version, new_partitions=list(new_partitions),
                       champion_version=champion_version, reference_data_version=reference_data_version,
                       new_rows=new.total, reference_rows=reference.total, rows=rows, drifted=bool(reasons),
                       reasons=reasons, skipped=skipped, note=note)


def no_champion(data_version: str, new_partitions: list[str], new_rows: int) -> DriftReport:
    """The report of a version compared with nothing: there is no champion yet, so nothing has drifted."""
    return DriftReport(data_version=data_version, new_partitions=list(new_partitions), champion_version=None,
                       reference_data_version=None, new_rows=new_rows, reference_rows=0, rows=[], drifted=False,
                       reasons=[], note="no champion yet: nothing to compare the new rows with")
