"""The online rule's judgement of labelled rows: an always-valid interval on the candidate's main metric against
the champion's, as the gate judges slices offline, but valid however often the rule looks as labels arrive.

``labelled.json`` (``online_labels``) carries each variant's per-row sums and, for a shadow, the sums of the pairs
both variants scored. The difference judged is ``D = s · (mean(candidate) - k · mean(champion))`` over the metric's
per-row values (a loss; a hit for accuracy, ``s = -1``), with ``k = 1 + s · tolerance`` (RMSE: ``(1 + tolerance)²``
on the squared errors): ``D > 0`` means worse than ``max_metric_regression`` (none: the gate's tolerance) allows.
A shadow is judged ``paired``, a canary ``two_sample`` (``sequential``). The candidate is rolled back as soon as the
whole interval lies above 0; at ``min_labelled`` rows of each variant it passes otherwise. The sentence says how
much worse a candidate must be to be caught at ``min_labelled`` rows with 95 % power, from the spread seen.
"""

from __future__ import annotations

import math
from typing import Any

from mlassets.core.config.schema import GateConfig
from mlassets.core.config.serving import OnlineConfig
from mlassets.core.evaluate import sequential
from mlassets.core.evaluate.gate_rules import limit_pct, pct
from mlassets.core.metric_defs import Metric, get_metric


def interval(labels: dict[str, Any], rule: OnlineConfig) -> sequential.Interval | None:
    """The always-valid interval on ``D`` of the labelled rows; None without per-row sums or under two rows."""
    metric = get_metric(labels["metric"])
    sign, k = _scale(metric, _tolerance(rule))
    alpha = 1 - rule.confidence
    paired = labels.get("paired")
    if paired is not None:
        return sequential.paired(sequential.PairSums(paired["n"], *paired["sums"]), k, sign, rule.min_labelled, alpha)
    champion, candidate = labels["variants"]["champion"], labels["variants"]["candidate"]
    if champion.get("sums") is None or candidate.get("sums") is None:
        return None
    return sequential.two_sample(sequential.Sums(*candidate["sums"]), sequential.Sums(*champion["sums"]), k, sign,
                                 rule.min_labelled, alpha)


def _tolerance(rule: OnlineConfig) -> float:
    return GateConfig().tolerance if rule.max_metric_regression is None else rule.max_metric_regression


def _scale(metric: Metric, tolerance: float) -> tuple[float, float]:
    """``(s, k)`` of ``D`` for a metric and a relative tolerance (see the module docstring)."""
    sign = -1.0 if metric.higher_is_better else 1.0
    return sign, ((1 + tolerance) ** 2 if metric.root else 1 + sign * tolerance)


def relative(metric: Metric, k: float, sign: float, d: float, base: float) -> float:
    """The metric's relative change that ``D = d`` means on a champion mean of ``base``."""
    ratio = k + sign * d / base if base else math.inf
    return (math.sqrt(max(ratio, 0.0)) if metric.root else ratio) - 1


def metric_rule(labels: dict[str, Any] | None, rule: OnlineConfig) -> tuple[str, str, dict[str, Any]]:
    """``(verdict, sentence, figures)`` of the labelled rows (``online_labels.add_labels``'s record): ``off`` (no
    labels), ``short`` (fewer than ``min_labelled`` of a variant, or no per-row sums), ``pass`` or ``fail``."""
    if not labels:
        return "off", "", {}
    champion, candidate = labels["variants"]["champion"], labels["variants"]["candidate"]
    figures: dict[str, Any] = {"labelled_champion": champion["labelled"], "labelled_candidate": candidate["labelled"],
                               "metric": labels["metric"], "metric_champion": champion["value"],
                               "metric_candidate": candidate["value"]}
    counts = f"{candidate['labelled']} candidate and {champion['labelled']} champion labelled rows"
    metric = get_metric(labels["metric"])
    base, value = champion["value"], candidate["value"]
    found = interval(labels, rule) if base is not None and value is not None else None
    if found is not None and found.base:  # a champion without loss (mean 0) has no relative change
        sign, k = _scale(metric, _tolerance(rule))
        low, high = sorted(relative(metric, k, sign, d, found.base) for d in (found.low, found.high))
        worse = abs(relative(metric, k, sign, sequential.detectable(found, rule.min_labelled, 1 - rule.confidence),
                             found.base))
        figures.update(metric_low=low, metric_high=high, detectable_worse=worse)
    tolerance = _tolerance(rule)
    if min(candidate["labelled"], champion["labelled"]) < rule.min_labelled and not (found and found.worse):
        return "short", f"{counts} (min_labelled {rule.min_labelled})", figures
    if value is None or base is None:
        who = "candidate" if value is None else "champion"
        return "fail", f"the {who}'s {metric.label} on {counts} is not finite", figures
    higher = metric.higher_is_better
    change = value / base - 1 if base else (0.0 if value == base else float("inf"))
    sentence = (f"{metric.label} {metric.fmt(value)} on {candidate['labelled']} labelled rows vs the champion's "
                f"{metric.fmt(base)} on {champion['labelled']} ({pct(change)}, limit "
                f"{limit_pct(-tolerance if higher else tolerance)}{'; higher is better' if higher else ''})")
    if found is None:
        return "short", (f"{sentence}; no interval yet (under 2 labelled rows of a variant, or labels joined by an "
                         "older version: add the labels again)"), figures
    if "metric_low" in figures:
        kind = "paired" if labels.get("paired") is not None else "two-sample"
        sentence += (f"; {kind} {rule.confidence:.0%} always-valid interval {pct(figures['metric_low'])} to "
                     f"{pct(figures['metric_high'])}; at min_labelled {rule.min_labelled} the rule detects a "
                     f"{figures['detectable_worse']:.1%} worse candidate with {sequential.POWER:.0%} power")
    return ("fail" if found.worse else "pass"), sentence, figures
