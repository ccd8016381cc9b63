"""``mlassets demo``: partitions (months) arrive one at a time; each new data version runs the whole pipeline."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.data.version_keys import shown
from mlassets.core.evaluate.gate import GateResult
from mlassets.core.evaluate.gate_rules import UnjudgedSlice, summarize_unjudged
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.metric_defs import get_metric
from mlassets.core.registry.record import ChampionDecision, RegisteredVersion
from mlassets.defs.keys import DatasetKeys
from mlassets.host.runs import IngestFailed, Run, ingest, run_pipeline


@dataclass
class VersionRow:
    month: str
    data_version: str  # its partition key, 2013-03.6870220f
    metric: str  # the gate's main metric: mae, rmse, logloss, brier or accuracy
    candidate_metric: float | None
    champion_metric: float | None
    decision: str
    reasons: list[str]
    champion_version: str
    seconds: float
    run_id: str
    success: bool
    unjudged: list[UnjudgedSlice] = field(default_factory=list)  # slice values with too few rows to judge
    commit: str = ""  # the data version's full commit id
    derived: list[str] = field(default_factory=list)  # thresholds the evaluation derived from the data
    dropped_missing_target: int = 0  # rows without a target left out of training and the holdout
    pooled: list[str] = field(default_factory=list)  # slice rules of small values judged together, and their change


def version_row(cfg: PipelineConfig, partition: str, version: str, run: Run, seconds: float,
                commit: str = "") -> VersionRow:
    """What the pipeline run of a data version decided, read from the records it handed on."""
    keys = DatasetKeys.of(cfg)
    evaluation = run.record(keys.evaluation, version)
    gate = run.record(keys.gate_result, version)
    registered = run.record(keys.registered_model, version)
    if not isinstance(gate, GateResult) and isinstance(registered, RegisteredVersion):
        gate = registered.record.gate_result  # a run that reran registration alone: the verdict it registered
    champion = run.record(keys.champion, version)
    unjudged: list[str] = []
    pooled: list[str] = []
    if isinstance(gate, GateResult):
        decision = "pass" if gate.passed else "reject"
        reasons, unjudged = gate.reasons(), list(gate.unjudged)
        pooled = [f"{r.name} {r.value:+.1%} vs champion ({'passed' if r.passed else 'rejected'})"
                  for r in gate.rules if r.name.endswith(", pooled)")]
    elif run.stopped:
        decision, reasons = "not trained", [run.stopped]
    elif run.failed_checks:
        decision, reasons = "invalid data", [e.description or e.check_name for e in run.failed_checks]
    else:
        decision, reasons = "error", [run.failure or f"run {run.run_id} failed before the gate"]
    if isinstance(champion, ChampionDecision):
        champion_version = champion.champion_version
    else:
        champion_version = (evaluation.champion_version if isinstance(evaluation, Evaluation) else None) or "none"
    metric = cfg.gate.main_metric
    scored = isinstance(evaluation, Evaluation)
    return VersionRow(
        month=partition, data_version=version, metric=metric,
        candidate_metric=evaluation.candidate.get(metric) if scored else None,
        champion_metric=(evaluation.champion or {}).get(metric) if scored else None,
        decision=decision, reasons=reasons, champion_version=champion_version,
        seconds=seconds, run_id=run.run_id, success=run.success, unjudged=unjudged,
        commit=commit or (evaluation.data_version if scored else ""),
        derived=list(evaluation.derived) if scored else [],
        dropped_missing_target=evaluation.dropped_missing_target if scored else 0, pooled=pooled,
    )


def play(instance: dg.DagsterInstance, cfg: PipelineConfig, partition: str, version: str,
         commit: str = "", force: bool = False, again: bool = False,
         waits: Callable[[str], None] | None = None, who: str = "") -> VersionRow:
    """Run the pipeline for one data version (its partition key); its row of the demo table (``force``: over the
    run budget too; ``who``: the principal the command checked, a tag of the run)."""
    start = time.perf_counter()
    run = run_pipeline(instance, cfg, version, force, again, waits, who=who)
    return version_row(cfg, partition, version, run, time.perf_counter() - start, commit)


def run_demo(instance: dg.DagsterInstance, cfg: PipelineConfig, months: list[str],
             broken: dict[str, tuple[str, float]], progress: Callable[[str], None] = print,
             force: bool = False, who: str = "") -> list[VersionRow]:
    rows = []
    for i, month in enumerate(months, 1):
        corrupt, shift = broken.get(month, ("", 0.0))
        note = f" (broken data day: {corrupt} labels {shift:+g} min)" if corrupt else ""
        progress(f"[{i}/{len(months)}] ingest {cfg.dataset.name} {month}{note}")
        try:
            ingested = ingest(instance, cfg, month, corrupt=corrupt, shift=shift, who=who)
        except IngestFailed as exc:
            progress(f"      rejected: {'; '.join(exc.checks)}")
            rows.append(VersionRow(month=month, data_version="", metric=cfg.gate.main_metric, candidate_metric=None,
                                   champion_metric=None, decision="rejected data", reasons=exc.checks,
                                   champion_version=rows[-1].champion_version if rows else "none", seconds=0.0,
                                   run_id="", success=False))
            continue
        if not ingested.created:
            progress(f"      {ingested.message}")
            continue
        for line in ingested.derived():
            progress(f"      {line}")
        progress(f"      data version {ingested.key}: snapshot -> validate -> features -> train -> gate")
        row = play(instance, cfg, month, ingested.key, ingested.data_version, force, who=who)
        champion = "none" if row.champion_version in ("", "none") else f"v{row.champion_version}"
        progress(f"      {row.decision}; champion {champion} ({row.seconds:.1f} s)")
        rows.append(row)
    return rows


def _fmt(value: float | None, metric: str) -> str:
    return "-" if value is None else get_metric(metric).fmt(value)


def format_unjudged(rows: list[VersionRow], min_rows: int | None = None) -> str:
    """The slice values each gate could not judge (too few holdout rows), one summarized line per data version."""
    lines = [f"  {r.month}: {summarize_unjudged(r.unjudged)}" for r in rows if r.unjudged]
    limit = f", {min_rows}" if min_rows is not None else ""
    return "\n".join([f"Not judged by the slice rule (fewer holdout rows than gate.slice_min_rows{limit}):", *lines]) \
        if lines else ""


def format_notes(rows: list[VersionRow], target: str = "target") -> str:
    """What else a run should say: thresholds derived from the data, and rows left out for a missing target."""
    lines = []
    for r in rows:
        lines += [f"  {r.month}: derived {line}" for line in r.derived]
        lines += [f"  {r.month}: judged together (gate.slice_min_rows): {line}" for line in r.pooled]
        if r.dropped_missing_target:
            lines.append(f"  {r.month}: {r.dropped_missing_target} rows without a {target!r} were left out "
                         "(dataset.drop_missing_target)")
    return "\n".join(["Said by the data (set the keys named to choose them yourself):", *lines]) if lines else ""


def format_table(rows: list[VersionRow], label: str = "month") -> str:
    metric = rows[0].metric if rows else "mae"
    name = get_metric(metric).label
    header = [label, "data version", f"candidate {name}", f"champion {name}", "gate", "champion", "reasons"]
    lines = [[r.month, shown(r.data_version), _fmt(r.candidate_metric, metric), _fmt(r.champion_metric, metric),
              r.decision, "-" if r.champion_version in ("", "none") else f"v{r.champion_version}",
              "; ".join(r.reasons) or "-"] for r in rows]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header[:-1])]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, [*widths, 0], strict=True)).rstrip()]
    for line in lines:
        out.append("  ".join(c.ljust(w) for c, w in zip(line, [*widths, 0], strict=True)).rstrip())
    return "\n".join(out)
