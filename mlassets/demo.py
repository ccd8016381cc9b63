"""``mlassets demo``: months arrive one at a time; each new data version runs the whole pipeline."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import dagster as dg

from mlassets.core import paths
from mlassets.core.config import PipelineConfig
from mlassets.core.data.ingest import Ingested
from mlassets.core.evaluate.gate import GateResult
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.records import Record, RecordFiles
from mlassets.core.registry.record import ChampionDecision
from mlassets.defs.factory import ingest_job_name, pipeline_job_name
from mlassets.defs.keys import DatasetKeys


@dataclass
class VersionRow:
    month: str
    data_version: str
    metric: str  # the gate's main metric: mae, rmse, logloss or brier
    candidate_metric: float | None
    champion_metric: float | None
    decision: str
    reasons: list[str]
    champion_version: str
    seconds: float
    run_id: str
    success: bool
    unjudged: list[str] = field(default_factory=list)  # slice values the gate had too few rows to judge


QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}  # progress lines say enough


def _record(result: dg.ExecuteInProcessResult, key: dg.AssetKey, partition: str) -> Record | None:
    """The record ``key`` stored for ``partition`` in this run (None when this run did not materialize it)."""
    if key not in {e.asset_key for e in result.get_asset_materialization_events()}:
        return None
    return RecordFiles(paths.records_root()).read(key.path, partition)


def ingest(defs: dg.Definitions, instance: dg.DagsterInstance, cfg: PipelineConfig, month: str,
           corrupt: str = "", shift: float = 0.0) -> Ingested:
    """Materialize one month of raw data; return what the ingest did (``DataRejected``-like failures raise)."""
    keys = DatasetKeys.of(cfg)
    run_config = {**QUIET, "ops": {keys.raw.to_python_identifier(): {"config": {
        "corrupt_slice": corrupt, "corrupt_shift": shift}}}} if corrupt else QUIET
    result = defs.resolve_job_def(ingest_job_name(cfg)).execute_in_process(
        instance=instance, partition_key=month, run_config=run_config, raise_on_error=False
    )
    ingested = _record(result, keys.raw, month)
    if not isinstance(ingested, Ingested):
        raise IngestFailed(month, _failure(result) or f"ingest run {result.run_id} failed")
    return ingested


class IngestFailed(RuntimeError):
    """A partition did not reach the watched branch (its checks failed, or its source could not be read)."""

    def __init__(self, partition: str, reason: str) -> None:
        super().__init__(f"partition {partition}: {reason}")
        self.partition, self.reason = partition, reason


def run_pipeline(defs: dg.Definitions, instance: dg.DagsterInstance, cfg: PipelineConfig, month: str,
                 version: str) -> VersionRow:
    """Materialize everything downstream of the raw data for one data version."""
    keys = DatasetKeys.of(cfg)
    start = time.perf_counter()
    result = defs.resolve_job_def(pipeline_job_name(cfg)).execute_in_process(
        instance=instance, partition_key=version, raise_on_error=False, run_config=QUIET
    )
    seconds = time.perf_counter() - start
    evaluation = _record(result, keys.evaluation, version)
    gate = _record(result, keys.gate_result, version)
    champion = _record(result, keys.champion, version)
    snapshot_checks = [e for e in result.get_asset_check_evaluations() if not e.passed]
    unjudged: list[str] = []
    if isinstance(gate, GateResult):
        decision = "pass" if gate.passed else "reject"
        reasons, unjudged = gate.reasons(), [u.describe() for u in gate.unjudged]
    elif snapshot_checks:
        decision, reasons = "invalid data", [e.description or e.check_name for e in snapshot_checks]
    else:
        decision, reasons = "error", [_failure(result) or f"run {result.run_id} failed before the gate"]
    if isinstance(champion, ChampionDecision):
        champion_version = champion.champion_version
    else:
        champion_version = (evaluation.champion_version if isinstance(evaluation, Evaluation) else None) or "none"
    metric = cfg.gate.main_metric
    scored = isinstance(evaluation, Evaluation)
    return VersionRow(
        month=month, data_version=version, metric=metric,
        candidate_metric=evaluation.candidate.get(metric) if scored else None,
        champion_metric=(evaluation.champion or {}).get(metric) if scored else None,
        decision=decision, reasons=reasons, champion_version=champion_version,
        seconds=seconds, run_id=result.run_id, success=result.success, unjudged=unjudged,
    )


def run_demo(defs: dg.Definitions, instance: dg.DagsterInstance, cfg: PipelineConfig, months: list[str],
             broken: dict[str, tuple[str, float]], progress: Callable[[str], None] = print) -> list[VersionRow]:
    rows = []
    for i, month in enumerate(months, 1):
        corrupt, shift = broken.get(month, ("", 0.0))
        note = f" (broken data day: {corrupt} labels {shift:+g} min)" if corrupt else ""
        progress(f"[{i}/{len(months)}] ingest {cfg.dataset.name} {month}{note}")
        try:
            ingested = ingest(defs, instance, cfg, month, corrupt, shift)
        except IngestFailed as exc:
            progress(f"      rejected: {exc.reason.splitlines()[0]}")
            rows.append(VersionRow(month=month, data_version="", metric=cfg.gate.main_metric, candidate_metric=None,
                                   champion_metric=None, decision="rejected data", reasons=[exc.reason],
                                   champion_version=rows[-1].champion_version if rows else "none", seconds=0.0,
                                   run_id="", success=False))
            continue
        if not ingested.created:
            progress(f"      {ingested.message}")
            continue
        version = ingested.data_version
        progress(f"      data version {version[:12]}: snapshot -> validate -> features -> train -> gate")
        row = run_pipeline(defs, instance, cfg, month, version)
        progress(f"      {row.decision}; champion v{row.champion_version} ({row.seconds:.1f} s)")
        rows.append(row)
    return rows


_NAMES = {"mae": "MAE", "rmse": "RMSE", "logloss": "log loss", "brier": "Brier"}


def _failure(result: dg.ExecuteInProcessResult) -> str | None:
    """The first failed step and what its own code raised (Dagster's wrapping errors skipped)."""
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data is not None:
            error = event.step_failure_data.error
            while error is not None and error.cause is not None:
                error = error.cause
            text = error.message.strip().splitlines()[0] if error is not None and error.message.strip() else ""
            return f"{event.step_key}: {text}" if text else None
    return None


def _fmt(value: float | None, metric: str) -> str:
    return "-" if value is None else f"{value:.2f}" if metric in ("mae", "rmse") else f"{value:.4f}"


def format_unjudged(rows: list[VersionRow]) -> str:
    """The slice values each gate could not judge (too few holdout rows), one line per data version."""
    lines = [f"  {r.month}: {', '.join(r.unjudged)}" for r in rows if r.unjudged]
    return "\n".join(["Not judged by the slice rule (fewer holdout rows than gate.slice_min_rows):", *lines]) \
        if lines else ""


def format_table(rows: list[VersionRow]) -> str:
    metric = rows[0].metric if rows else "mae"
    name = _NAMES.get(metric, metric)
    header = ["month", "data version", f"candidate {name}", f"champion {name}", "gate", "champion", "reasons"]
    lines = [[r.month, r.data_version[:12], _fmt(r.candidate_metric, metric), _fmt(r.champion_metric, metric),
              r.decision, f"v{r.champion_version}", "; ".join(r.reasons) or "-"] for r in rows]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header[:-1])]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, [*widths, 0], strict=True)).rstrip()]
    for line in lines:
        out.append("  ".join(c.ljust(w) for c, w in zip(line, [*widths, 0], strict=True)).rstrip())
    return "\n".join(out)
