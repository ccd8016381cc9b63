"""A multiclass holdout's evaluation added up chunk by chunk (``stream``): counts keyed by class, never rows.

The label space (``multiclass.label_space``: every label of the holdout's truth and of either model's classes,
sorted) is known only once the last chunk is read. It is not read first: ``split_tables`` yields whole batches (and
splits a hash-split version by its key columns), so a pass for the target's distinct values would read and split every
column of the holdout a second time, and the asset would have to hand over a second reader. Instead every count is
kept by a label id, given in the order labels are first seen (``multiclass_counts.LabelIds``: the truth of each chunk,
each model's classes from its probability columns), and put on the sorted space at the end. Nothing per row needs
the space: a row's log loss reads its model's probability of its true class (0 when the model never saw it); its
predicted class is its model's most probable own class, the first in sorted order on a tie (``multiclass.predicted``
with ``known``, as in memory, and the label the model serves); macro-F1 is a mean over the classes present, which a
permutation does not change. What stays is ``O(slice values x classes^2)`` counts, ``O(slice values x GROUPS)``
bootstrap sums and the calibration bins, whatever the number of rows.

Slice rows come from ``slice_sums.SliceSums`` with the row metrics log loss and accuracy, for each configured column
and for the true class (the slice named after the target), all sharing one row-group stream drawn chunk after chunk
as ``GroupBootstrap`` draws it at once. The main metric (log loss or accuracy, both means of per-row values) is the
only one with an interval, so every interval is the in-memory one exactly (the same row groups, resample weights and
small-value row bootstraps), up to the order of float sums. Macro-F1 per value comes from per-value (true, predicted)
counts. The record is the same whatever the chunks, to float rounding (rows scored at once are one chunk:
``scored.evaluate_multiclass``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate import multiclass as mc
from mlassets.core.evaluate.bootstrap import GROUP_STREAM, GROUPS, GroupBootstrap
from mlassets.core.evaluate.derived import naive_class_rows, naive_shares
from mlassets.core.evaluate.multiclass_counts import ClassSums, LabelIds, SliceConfusion, on_sorted
from mlassets.core.evaluate.multiclass_record import ROW_METRICS, class_rows
from mlassets.core.evaluate.record import PredictionStats, SliceRow
from mlassets.core.evaluate.slice_sums import SliceSums, bonferroni
from mlassets.core.metric_defs import MeanSums, get_metric
from mlassets.core.train.outputs import probabilities

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


class MulticlassSums:
    """Everything the multiclass record needs, chunk by chunk (``stream.StreamedHoldout``'s accumulators)."""

    def __init__(self, cfg: PipelineConfig, has_champion: bool, train_y: np.ndarray) -> None:
        import numpy as np

        main = cfg.gate.main_metric
        if main not in ROW_METRICS:
            raise ValueError(f"gate.main_metric: {main!r} is not a multiclass gate metric ({', '.join(ROW_METRICS)})")
        self.cfg, self.has_champion = cfg, has_champion
        self.models = ["candidate", "champion"] if has_champion else ["candidate"]
        self.ids = LabelIds()
        self.overall = {model: ClassSums() for model in self.models}
        self.columns = [(SliceSums(col, self.models, list(ROW_METRICS), main), SliceConfusion(self.models))
                        for col in cfg.dataset.slices]
        self.per_class = SliceSums(cfg.dataset.target, self.models, list(ROW_METRICS), main)
        self._groups = np.random.default_rng([cfg.training.seed, GROUP_STREAM])  # as GroupBootstrap.row_group
        self.shares = naive_shares(cfg, train_y, has_champion)
        self.baseline = {name: MeanSums() for name in ROW_METRICS}  # the naive model's log losses and hits
        self.stats = {"n": 0, "non_finite": 0, "outside_range": 0, "sum_not_one": 0, "max_sum_error": 0.0,
                      "seen_min": math.inf, "seen_max": -math.inf}
        self.missing_target = 0

    def add(self, scored: pd.DataFrame) -> None:
        """One scored chunk (``score.score_holdout``); rows without a target are counted, not scored."""

        self._add_stats(probabilities(scored, "candidate"))  # every row, as in memory
        missing = scored["y"].isna().to_numpy()
        if missing.any():  # the record is refused (StreamedHoldout.evaluation)
            self.missing_target += int(missing.sum())
            scored = scored[~missing]
        truth = scored["y"].astype(str)
        y = self.ids.ids(truth.tolist())
        losses, preds = {}, {}
        for model, sums in self.overall.items():
            losses[model], preds[model] = sums.add(probabilities(scored, model), y, self.ids)
        row_group = self._groups.integers(0, GROUPS, len(y)) if self.has_champion else None
        for sums, confusion in self.columns:
            sums.add(scored[sums.column], losses, row_group)
            confusion.add(scored[sums.column], y, preds, len(self.ids))
        self.per_class.add(truth, losses, row_group)
        if self.shares is not None:
            rows = naive_class_rows(self.shares, truth)
            self.baseline = {name: sums + MeanSums.of(rows[name]) for name, sums in self.baseline.items()}

    def _add_stats(self, prob: pd.DataFrame) -> None:
        import numpy as np

        chunk = mc.distribution_stats(prob.to_numpy(dtype=np.float64))
        s = self.stats
        s["n"] += len(prob)
        for key in ("non_finite", "outside_range", "sum_not_one"):
            s[key] += chunk[key]
        s["max_sum_error"] = max(s["max_sum_error"], chunk["max_sum_error"])
        if len(prob) > chunk["non_finite"]:
            s["seen_min"], s["seen_max"] = min(s["seen_min"], chunk["seen_min"]), max(s["seen_max"], chunk["seen_max"])

    def baseline_metrics(self) -> dict[str, float] | None:
        """The naive model's metrics (``derived.naive_shares``), when a first model must beat it."""
        if self.shares is None:
            return None
        return {name: get_metric(name).value(sums) for name, sums in self.baseline.items()}

    def fields(self) -> dict[str, Any]:
        """The model-dependent fields of the multiclass record of the rows added."""
        import numpy as np

        order = self.ids.order()
        labels = [self.ids.names[i] for i in order]
        grouped = None
        if self.has_champion:
            grouped = GroupBootstrap(0, self.cfg.gate.bootstrap_samples, self.cfg.training.seed, GROUPS)
        slices: list[SliceRow] = []
        gate = self.cfg.gate
        level = bonferroni(gate.confidence, sum(sums.judged(gate.slice_min_rows)
                                                for sums in [*(s for s, _ in self.columns), self.per_class]))
        for sums, confusion in self.columns:
            f1 = confusion.macro_f1(order)  # per value (a pooled row of small values has none)
            slices += [dataclasses.replace(row, candidate={**row.candidate,
                                                           "macro_f1": f1["candidate"].get(row.value, math.nan)},
                                           champion=None if row.champion is None else
                                           {**row.champion, "macro_f1": f1["champion"].get(row.value, math.nan)})
                       for row in sums.slice_rows(self.cfg, grouped, level)]
        slices += self.per_class.slice_rows(self.cfg, grouped, level)
        overall = {model: sums.metrics(order) for model, sums in self.overall.items()}
        known = {model: np.isin(np.asarray(labels, dtype=object), sums.classes or [])
                 for model, sums in self.overall.items()}
        classes = class_rows(labels, {m: on_sorted(s.confusion, order) for m, s in self.overall.items()}, known)
        s, seen = self.stats, self.stats["n"] > self.stats["non_finite"]
        stats = PredictionStats(n=s["n"], non_finite=s["non_finite"], outside_range=s["outside_range"],
                                range_min=0.0, range_max=1.0, seen_min=s["seen_min"] if seen else math.nan,
                                seen_max=s["seen_max"] if seen else math.nan, sum_not_one=s["sum_not_one"],
                                max_sum_error=s["max_sum_error"])
        return {"holdout_rows": self.overall["candidate"].n, "candidate": overall["candidate"],
                "champion": overall.get("champion"), "slices": slices, "slice_confidence": level, "predictions": stats,
                "calibration": {model: sums.calibration() for model, sums in self.overall.items()},
                "classes": classes}
