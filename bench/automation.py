"""New commit -> registered champion with the Dagster daemon, minus the pipeline's own compute.

The sales example with sensors every second: a first month is ingested and run by the daemon (start-up and
warm-up); then each of ``TIMED`` months is committed in turn and the clock runs from its commit (the ingest's return:
its commit has landed) until the pipeline run that the commit sensor started has registered and promoted the new
version; each part is the median of those commits (the wait for the sensor loop alone moves by seconds between
commits). Smoke mode: one month, no warm-up (the daemon's start-up falls in the measured commit). The steps' own
execution time (from the event log) is subtracted: what remains is orchestration, in parts: the wait for the
daemon's sensor loop (the commit -> the start of the tick that saw it), the tick (-> its run created), the run's
planning (-> enqueued: the planned events of its assets and checks), the queue (-> dequeued), the launch (-> the
run's process started it: our launcher's checks, a new process, the definitions loaded) and inside the run (resource
set-up, MLflow's included, and the bookkeeping between steps).

``commit_to_champion`` in ``bench.startup`` reports it against its anchor (``bench.launch_anchor``).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench.registry import toy

INTERVAL_S = 1
LIMIT_S = 600.0  # for one month's run
TIMED = 3  # commits timed after the warm-up: each part is their median


def measure() -> dict[str, float]:
    """Orchestration of a commit -> champion, in seconds: the median of each part over ``TIMED`` commits after one
    month of start-up and warm-up (smoke: one commit, no warm-up); ``totals``' spread is in the detail."""
    with tempfile.TemporaryDirectory(prefix="bench-automation-", ignore_cleanup_errors=True) as tmp:
        timed = _measure(Path(tmp), toy(1, 0), toy(TIMED, 1))
    parts = {name: statistics.median(m[name] for m in timed) for name in timed[0]}
    return {**parts, "commits": len(timed), "low": min(m["total"] for m in timed),
            "high": max(m["total"] for m in timed)}


def _measure(work: Path, warm: int, timed: int) -> list[dict[str, float]]:
    """The daemon plays ``warm + timed`` months of the sales example from ``work``: the first ``warm`` as start-up
    and warm-up, each later one timed from its commit to its pipeline run's end."""
    import os

    import dagster as dg
    import yaml

    from mlassets.cli import daemon
    from mlassets.core.config import CONFIGS_ENV, load_config
    from mlassets.core.registry.promote import live_version
    from mlassets.examples.sales import write_example
    from mlassets.host.instance import get_instance
    from mlassets.host.runs import ingest

    config = write_example(work / "sales", months=warm + timed)
    data = yaml.safe_load(config.read_text())
    data["automation"] = {"sensor_interval_s": INTERVAL_S}
    config.write_text(yaml.safe_dump(data))
    os.environ[CONFIGS_ENV] = str(config)
    cfg, instance = load_config(config), get_instance()

    FAILED = dg.DagsterRunStatus.FAILURE

    def pipeline_runs(status: dg.DagsterRunStatus = dg.DagsterRunStatus.SUCCESS) -> list[dg.DagsterRun]:
        return instance.get_runs(dg.RunsFilter(job_name="sales_pipeline", statuses=[status]))

    with (work / "daemon.log").open("w") as log:
        proc = daemon.start(log)
    clocks: list[tuple[str, float, float, float | None]] = []  # (partition, commit landed, run done, promoted)
    try:
        for i, month in enumerate(cfg.dataset.partitions.keys, 1):
            before = live_version("sales_units")
            version = ingest(instance, cfg, month).key
            start = time.time()  # its commit has landed on the watched branch: the sensor can see it
            promoted, deadline = None, time.monotonic() + LIMIT_S
            while len(pipeline_runs()) < i:  # the run ends after the champion moved (predictions follow)
                if proc.poll() is not None or time.monotonic() > deadline or pipeline_runs(FAILED):
                    raise RuntimeError(f"month {month}: the daemon stopped, a pipeline run failed, or no run "
                                       f"succeeded in {LIMIT_S:.0f} s; see {work / 'daemon.log'}")
                if promoted is None and live_version("sales_units") != before:
                    promoted = time.time() - start
                time.sleep(0.2)
            if i > warm:
                clocks.append((version, start, time.time(), promoted))
    finally:
        daemon.stop(proc)
    out = []
    for version, start, done, promoted in clocks:
        (run,) = [r for r in pipeline_runs() if r.tags.get("dagster/partition") == version]
        marks = run_marks(instance, run.run_id)
        compute = marks["compute"]
        tick = tick_start(instance, f"{cfg.dataset.name}_new_data", run.run_id)
        out.append({"total": done - start, "compute": compute, "orchestration": done - start - compute,
                    "promoted": promoted or 0.0,
                    "sensor": marks["created"] - start, "wait": max(0.0, tick - start),
                    "tick": marks["created"] - tick, "plan": marks["RUN_ENQUEUED"] - marks["created"],
                    "queue": marks["RUN_STARTING"] - marks["RUN_ENQUEUED"],
                    "launch": marks["RUN_START"] - marks["RUN_STARTING"], "resources": marks["resources"],
                    "in_run": marks["RUN_SUCCESS"] - marks["RUN_START"] - compute})
    return out


def run_marks(instance, run_id: str) -> dict[str, float]:
    """A run's creation and the first time of each of its run events (enqueued, starting, start, success), in
    seconds since the epoch; ``compute``: its steps' seconds (STEP_START -> STEP_SUCCESS or STEP_FAILURE);
    ``resources``: its first resource set-up's seconds."""
    steps: dict[str, float] = {}
    marks = {"created": instance.get_run_record_by_id(run_id).create_timestamp.timestamp()}
    for entry in instance.all_logs(run_id):
        kind = entry.dagster_event.event_type.name if entry.dagster_event else ""
        if kind in ("RUN_ENQUEUED", "RUN_STARTING", "RUN_START", "RUN_SUCCESS", "RUN_FAILURE",
                    "RESOURCE_INIT_STARTED", "RESOURCE_INIT_SUCCESS") and kind not in marks:
            marks[kind] = entry.timestamp
        if kind == "STEP_START":
            steps[entry.step_key] = -entry.timestamp
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE") and entry.step_key in steps:
            steps[entry.step_key] += entry.timestamp
    marks.setdefault("RUN_ENQUEUED", marks["created"])  # a run launched without the queue
    marks.setdefault("RUN_STARTING", marks["RUN_ENQUEUED"])
    marks["compute"] = sum(steps.values())
    marks["resources"] = marks.get("RESOURCE_INIT_SUCCESS", 0.0) - marks.get("RESOURCE_INIT_STARTED", 0.0)
    return marks


def tick_start(instance, sensor: str, run_id: str) -> float:
    """When the tick of ``sensor`` that requested ``run_id`` started (seconds since the epoch)."""
    from dagster._core.scheduler.instigation import InstigatorType

    for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
        if state.instigator_name == sensor:
            for tick in instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=50):
                if run_id in tick.run_ids:
                    return tick.timestamp
    raise RuntimeError(f"no tick of sensor {sensor} requested run {run_id}")
