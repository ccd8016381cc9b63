"""Per-slice metrics and their paired bootstrap intervals over a streamed holdout, chunk by chunk.

The intervals are the paired bootstrap of all the rows at once, computed from what a chunk leaves behind:

* every row is assigned to one of ``GROUPS`` groups by the same seeded stream as ``GroupBootstrap`` (drawn chunk
  after chunk in row order, it is the same sequence as drawn at once), and each slice value keeps its loss sums per
  group (``[values, GROUPS]`` per model): a value of more than ``GROUPS`` rows gets the random-group bootstrap;
* a value's per-row losses are kept while it has at most ``GROUPS`` rows (then dropped): a value that ends that
  small gets the exact row bootstrap from its own generator (``bootstrap.row_interval``).

So the memory is ``O(slice values x GROUPS)`` whatever the number of rows, and the intervals are the same whatever
the chunks, up to the order of float sums.

Small values are pooled: a column's values of fewer than ``gate.slice_min_rows`` rows, when there are at least two of
them and together they have ``POOL_MIN_ROWS`` (or ``slice_min_rows`` if lower), make one more row (``SliceRow.pooled``:
how many values it holds) whose interval is the paired bootstrap of all their rows, so 46 cities of 3-12 holdout rows
each are judged together. ``POOL_MIN_ROWS`` is the usual rule of thumb for a bootstrap interval of a mean to hold its
level; a single value keeps ``slice_min_rows`` (a change on a few hundred rows, not on a handful, says the model). The
intervals are Bonferroni-corrected for the number of rows the gate judges (``bonferroni``): each at level
``1 - (1 - gate.confidence) / judged``, so a healthy model is rejected by chance on at most ``1 - gate.confidence``
of its evaluations however many slices it has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate.bootstrap import GROUP_STREAM, GROUPS, GroupBootstrap, interval, row_interval
from mlassets.core.evaluate.metrics import slice_codes, slice_metric_names
from mlassets.core.evaluate.record import NAN, SliceRow
from mlassets.core.metric_defs import get_metric

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


POOL_MIN_ROWS = 30  # rows a pooled row of small values needs (fewer: its values are listed as unjudged)


def bonferroni(confidence: float, judged: int) -> float:
    """The per-slice interval level that keeps the chance of any false rejection among ``judged`` slices under
    ``1 - confidence``."""
    return 1.0 - (1.0 - confidence) / max(judged, 1)


def pooled_label(values: int, min_rows: int) -> str:
    return f"({values} values under {min_rows} rows, pooled)"


class SliceSums:
    """One slice column: rows per value, each model's per-metric loss sums, and the main metric's bootstrap units."""

    def __init__(self, column: str, models: list[str], metrics: list[str], main: str) -> None:
        import numpy as np

        self.column, self.models, self.metrics, self.main = column, models, metrics, main
        self.labels: list[str] = []
        self._index: dict[str, int] = {}
        self.counts = np.zeros(0, np.int64)
        self.sums = {model: {m: np.zeros(0) for m in metrics} for model in models}
        self.group_sums = {model: np.zeros((0, GROUPS)) for model in models}
        self.rows: list[dict[str, list[np.ndarray]] | None] = []  # per value: its losses while it is small

    def _codes(self, values: pd.Series) -> np.ndarray:
        """Each row's value index (new values appended), as ``slice_codes`` labels them."""
        import numpy as np

        codes, labels = slice_codes(values)
        for label in labels:
            if label not in self._index:
                self._index[label] = len(self.labels)
                self.labels.append(label)
                self.rows.append({model: [] for model in self.models})
        grow = len(self.labels) - self.counts.size
        if grow:
            self.counts = np.concatenate([self.counts, np.zeros(grow, np.int64)])
            for model in self.models:
                self.sums[model] = {m: np.concatenate([s, np.zeros(grow)]) for m, s in self.sums[model].items()}
                self.group_sums[model] = np.concatenate([self.group_sums[model], np.zeros((grow, GROUPS))])
        index = np.array([self._index[label] for label in labels], dtype=np.intp)
        return codes if np.array_equal(index, np.arange(index.size)) else index[codes]  # the first chunk's are its own

    def add(self, values: pd.Series, losses: dict[str, dict[str, np.ndarray]], row_group: np.ndarray | None) -> None:
        """One chunk: its slice values, ``losses[model][metric]`` per row, and each row's group (with a champion)."""
        import numpy as np

        codes = self._codes(values)
        k = len(self.labels)
        chunk = np.bincount(codes, minlength=k)
        self.counts += chunk
        for model, per in losses.items():
            for metric in self.metrics:
                self.sums[model][metric] += np.bincount(codes, weights=per[metric], minlength=k)
        if row_group is None:
            return
        flat = codes.astype(np.int64) * GROUPS + row_group
        for model in self.models:
            self.group_sums[model] += np.bincount(flat, weights=losses[model][self.main],
                                                  minlength=k * GROUPS).reshape(k, GROUPS)
        small = []  # the values of this chunk whose rows are still kept
        for code in np.flatnonzero(chunk):
            if self.rows[code] is not None and self.counts[code] > GROUPS:
                self.rows[code] = None  # large: the group sums give its interval
            elif self.rows[code] is not None:
                small.append(int(code))
        for code, rows in _rows_of(codes, small):
            kept = self.rows[code]
            assert kept is not None
            for model in self.models:
                kept[model].append(losses[model][self.main][rows])

    def pooled(self, min_rows: int) -> list[int]:
        """The values pooled into one row: those of fewer than ``min_rows`` rows, when there are at least two and
        together they have ``POOL_MIN_ROWS`` (or ``min_rows`` if lower); else none."""
        small = sorted((k for k in range(len(self.labels)) if 0 < self.counts[k] < min_rows),
                       key=lambda k: self.labels[k])  # by label: the same rows in the same order whatever the chunks
        enough = int(sum(self.counts[k] for k in small)) >= min(min_rows, POOL_MIN_ROWS)
        return small if len(small) > 1 and enough else []

    def judged(self, min_rows: int) -> int:
        """How many rows of this column the gate judges: values of ``min_rows`` rows or more, and the pooled row."""
        return int(sum(1 for n in self.counts if n >= min_rows)) + (1 if self.pooled(min_rows) else 0)

    def slice_rows(self, cfg: PipelineConfig, grouped: GroupBootstrap | None, level: float | None = None
                   ) -> list[SliceRow]:
        """One row per value of the column (values sorted, those without rows left out), then the pooled row of its
        small values if any; intervals at ``level`` (default ``gate.confidence``)."""
        import numpy as np

        main = get_metric(self.main)
        level = cfg.gate.confidence if level is None else level
        with np.errstate(invalid="ignore", divide="ignore"):
            values = {model: {m: get_metric(m).of_sums(s, self.counts) for m, s in per.items()}
                      for model, per in self.sums.items()}
            champ = "champion" in self.models
            change = (values["candidate"][self.main] / values["champion"][self.main] - 1.0 if champ
                      else np.full(len(self.labels), NAN))
        lo, hi = self._intervals(cfg, main.root, grouped, level) if champ else (change, change)
        rows = []
        for k in sorted((k for k in range(len(self.labels)) if self.counts[k] > 0), key=lambda i: self.labels[i]):
            rows.append(SliceRow(
                slice=self.column, value=self.labels[k], n=int(self.counts[k]),
                candidate={m: float(v[k]) for m, v in values["candidate"].items()},
                champion={m: float(v[k]) for m, v in values["champion"].items()} if champ else None,
                change=float(change[k]), ci_low=float(lo[k]), ci_high=float(hi[k]),
            ))
        pooled = self.pooled(cfg.gate.slice_min_rows)
        if pooled:
            rows.append(self._pooled_row(cfg, pooled, grouped, level))
        return rows

    def _pooled_row(self, cfg: PipelineConfig, pooled: list[int], grouped: GroupBootstrap | None, level: float
                    ) -> SliceRow:
        """The small values' rows as one slice: their metrics, change and paired interval (the exact row bootstrap
        up to ``GROUPS`` rows, every pooled value's rows being kept; the group bootstrap of their summed groups
        beyond)."""
        import numpy as np

        gate, main = cfg.gate, get_metric(self.main)
        n = int(self.counts[pooled].sum())
        label = pooled_label(len(pooled), gate.slice_min_rows)
        values = {model: {m: float(get_metric(m).of_sums(s[pooled].sum(), n)) for m, s in per.items()}
                  for model, per in self.sums.items()}
        champ = "champion" in self.models
        if not champ:
            return SliceRow(slice=self.column, value=label, n=n, candidate=values["candidate"], pooled=len(pooled))
        with np.errstate(invalid="ignore", divide="ignore"):
            change = values["candidate"][self.main] / values["champion"][self.main] - 1.0
        if n <= GROUPS:
            loss_c, loss_h = (np.concatenate([x for k in pooled for x in self.rows[k][m]]) for m in
                              ("candidate", "champion"))
            lo, hi = row_interval(self.column, label, loss_c, loss_h, gate.bootstrap_samples, level,
                                  cfg.training.seed, main.root)
        else:
            grouped = grouped or GroupBootstrap(0, gate.bootstrap_samples, cfg.training.seed, GROUPS)
            boot = grouped.relative_change(self.group_sums["candidate"][pooled].sum(0)[None],
                                           self.group_sums["champion"][pooled].sum(0)[None], main.root)
            (lo,), (hi,) = interval(boot, level)
        return SliceRow(slice=self.column, value=label, n=n, candidate=values["candidate"],
                        champion=values["champion"], change=float(change), ci_low=float(lo), ci_high=float(hi),
                        pooled=len(pooled))

    def _intervals(self, cfg: PipelineConfig, root: bool, grouped: GroupBootstrap | None, level: float
                   ) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np

        gate, seed = cfg.gate, cfg.training.seed
        lo, hi = np.full(len(self.labels), NAN), np.full(len(self.labels), NAN)
        large = [k for k in range(len(self.labels)) if self.counts[k] > GROUPS]
        for k, kept in enumerate(self.rows):
            if kept is not None and 0 < self.counts[k] <= GROUPS:
                loss_c, loss_h = (np.concatenate(kept[m]) for m in ("candidate", "champion"))
                lo[k], hi[k] = row_interval(self.column, self.labels[k], loss_c, loss_h, gate.bootstrap_samples,
                                            level, seed, root)
        if large:
            grouped = grouped or GroupBootstrap(0, gate.bootstrap_samples, seed, GROUPS)
            boot = grouped.relative_change(self.group_sums["candidate"][large], self.group_sums["champion"][large],
                                           root)
            lo[large], hi[large] = interval(boot, level)
        return lo, hi


class SlicesSums:
    """Every slice column of the config, and the row-group stream they share (with a champion)."""

    def __init__(self, cfg: PipelineConfig, has_champion: bool) -> None:
        import numpy as np

        models = ["candidate", "champion"] if has_champion else ["candidate"]
        self.cfg, self.has_champion = cfg, has_champion
        self.metrics = slice_metric_names(cfg.dataset.task, cfg.gate.main_metric)
        self.columns = [SliceSums(col, models, self.metrics, cfg.gate.main_metric) for col in cfg.dataset.slices]
        self._groups = np.random.default_rng([cfg.training.seed, GROUP_STREAM])  # as GroupBootstrap.row_group

    def add(self, frame: pd.DataFrame, y: np.ndarray, preds: dict[str, np.ndarray]) -> None:
        """One scored chunk: ``frame`` holds the slice columns, ``preds`` each model's predictions."""
        losses = {model: {m: get_metric(m).loss(y, p) for m in self.metrics} for model, p in preds.items()}
        row_group = self._groups.integers(0, GROUPS, y.size) if self.has_champion else None
        for sums in self.columns:
            sums.add(frame[sums.column], losses, row_group)

    def level(self) -> float:
        """Each interval's level: ``gate.confidence`` Bonferroni-corrected for every row the gate judges."""
        gate = self.cfg.gate
        return bonferroni(gate.confidence, sum(sums.judged(gate.slice_min_rows) for sums in self.columns))

    def slice_rows(self) -> list[SliceRow]:
        grouped = None
        if self.has_champion:
            gate = self.cfg.gate
            grouped = GroupBootstrap(0, gate.bootstrap_samples, self.cfg.training.seed, GROUPS)
        level = self.level()
        return [row for sums in self.columns for row in sums.slice_rows(self.cfg, grouped, level)]


def _rows_of(codes: np.ndarray, wanted: list[int]) -> list[tuple[int, np.ndarray]]:
    """Each wanted code's rows, in row order: a scan per code for a few, one stable sort for many."""
    import numpy as np

    if len(wanted) <= 8:
        return [(code, np.flatnonzero(codes == code)) for code in wanted]
    order = np.argsort(codes, kind="stable")
    present, starts = np.unique(codes[order], return_index=True)
    keep = set(wanted)
    return [(int(c), rows) for c, rows in zip(present, np.split(order, starts[1:]), strict=True) if c in keep]
