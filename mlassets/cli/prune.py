"""``mlassets prune-transactions``' part in the Dagster instance: runs of ingests whose process is gone (a killed
``mlassets ingest``, or a killed daemon tree) stay STARTED; they are marked failed, saying why. With a daemon
running on the home, its run monitor does this (and retries them); nothing is done here then."""

from __future__ import annotations

from mlassets.core import settings


def fail_dead_ingests() -> list[str]:
    """Mark the runs of ``<dataset>_ingest`` jobs whose process is gone failed; one line per run."""
    from mlassets.host import daemon_lock
    from mlassets.host.instance import get_instance, prepare_home
    from mlassets.host.run_liveness import dead_runs
    from mlassets.host.run_monitor import free_slots, start_timeout_s

    home = prepare_home()
    if not settings.production() and daemon_lock.held(home):
        return [f"a daemon runs on {home}: its run monitor handles runs whose worker is gone"]
    instance = get_instance()
    try:
        out = []
        for dead in dead_runs(instance, home, start_timeout_s()):
            if not dead.run.job_name.endswith("_ingest"):
                continue
            instance.report_run_failed(dead.run, f"mlassets prune-transactions: {dead.reason}; the run is marked "
                                                  "failed")
            free_slots(instance, dead.run.run_id)
            partition = dead.run.tags.get("dagster/partition", "")
            out.append(f"marked run {dead.run.run_id} ({dead.run.job_name} {partition}) failed: {dead.reason}")
        return out
    finally:
        instance.dispose()
