"""What starts runs with nobody at the keyboard, per dataset: new commits of the watched branch (either store
backend), files dropped into the landing folder, and the retrain schedule. A failed run tells its owners
(``failure_sensor``, one for the code location).

Every request carries ``mlassets/trigger`` (new_data, landing, schedule) and the readable name of the data
version; pipeline runs of one dataset that the daemon starts carry ``mlassets/serial`` (the embedded instance
runs them one at a time, in the order requested).
"""

from __future__ import annotations

import json

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.data.raw import WATCHED_BRANCH, raw_repo
from mlassets.core.data.store import VersionedStore, open_store
from mlassets.defs.fleet.admission import admit_requests
from mlassets.defs.jobs import (
    DELIVERY_SHA_TAG,
    DELIVERY_TAG,
    RETRAIN_TAG,
    SERIAL_TAG,
    TRIGGER_TAG,
    ingest_job_name,
    monitor_job_name,
    pipeline_job_name,
)
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import DATASET_TAG, PARTITIONS_TAG, version_run_tags
from mlassets.defs.partitions import data_versions, raw_partitions
from mlassets.defs.resources import StoreResource

ENDED = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


def _status(on: bool) -> dg.DefaultSensorStatus:
    return dg.DefaultSensorStatus.RUNNING if on else dg.DefaultSensorStatus.STOPPED


def has_run(instance: dg.DagsterInstance, job: str, partition: str) -> bool:
    return instance.get_runs_count(dg.RunsFilter(job_name=job, tags={"dagster/partition": partition})) > 0


def version_tags(cfg: PipelineConfig, version: str, partitions: list[str] | None = None,
                 store: VersionedStore | None = None) -> dict[str, str]:
    """A requested pipeline run's tags: the version's readable name (``2024-03 · 6870220f``), what it added, its
    commit, and the dataset's serial queue. ``version`` is the commit (or its partition key, resolved in
    ``store``); ``partitions`` when the caller holds the commit, else read from the store."""
    from mlassets.core.data.version_keys import resolve_key

    store = store or open_store()
    commit = resolve_key(store, cfg, version)
    from mlassets.defs.fleet.runs import fleet_run_tags

    return {**version_run_tags(cfg, commit, store, partitions=partitions), SERIAL_TAG: cfg.dataset.name,
            **fleet_run_tags(cfg)}  # the job spec and its queue priority


def new_data_sensor(cfg: PipelineConfig) -> dg.SensorDefinition:
    versions = data_versions(cfg)
    job = pipeline_job_name(cfg) if cfg.automation.on_new_data else monitor_job_name(cfg)
    what = "the pipeline" if cfg.automation.on_new_data else "the drift report"

    @dg.sensor(name=f"{cfg.dataset.name}_new_data", job_name=job,
               minimum_interval_seconds=cfg.automation.sensor_interval_s, default_status=_status(True),
               description=f"Each new commit of {raw_repo(cfg)}@{WATCHED_BRANCH} becomes a data version, and "
                           f"{what} runs for it (run key: the commit id; the cursor is the newest commit seen).")
    def new_data(context: dg.SensorEvaluationContext, store: StoreResource) -> dg.SensorResult:
        from mlassets.core.automation.commits import new_commits
        from mlassets.core.data.version_keys import added_partitions, version_key

        backend = store.open()
        found = new_commits(backend, raw_repo(cfg), WATCHED_BRANCH, context.cursor)
        if not found.cursor_found:
            context.log.warning(f"cursor {context.cursor} is not in the history of {WATCHED_BRANCH}; "
                                "handling every commit that has no run yet")
        if not found.commits:  # the usual tick: nothing new, nothing more to read
            return dg.SensorResult(cursor=found.head or context.cursor)
        known = set(context.instance.get_dynamic_partitions(versions.name))
        added = {c.id: added_partitions(backend, cfg, c) for c in found.commits}
        keys = {c.id: version_key(added[c.id], c.id) for c in found.commits}
        fresh = [c for c in found.commits if c.id not in known]  # a home made before readable keys keyed by id
        new = [keys[c.id] for c in fresh if keys[c.id] not in known]
        wanted = [c for c in fresh if not has_run(context.instance, job, keys[c.id])]
        refusals = admit_requests(context.instance, cfg, len(wanted)) if cfg.automation.on_new_data else \
            [""] * len(wanted)  # the drift report trains nothing
        for c, why in zip(wanted, refusals, strict=True):
            if why:
                context.log.warning(f"data version {keys[c.id]}: the training run was not requested: {why}")
        requests = [
            dg.RunRequest(run_key=c.id, partition_key=keys[c.id],
                          tags={TRIGGER_TAG: "new_data", **version_tags(cfg, c.id, added[c.id], backend)})
            for c, why in zip(wanted, refusals, strict=True) if not why
        ]
        refused = [why for why in refusals if why]
        return dg.SensorResult(run_requests=requests, cursor=found.head or context.cursor,
                               dynamic_partitions_requests=[versions.build_add_request(new)] if new else [],
                               skip_reason=refused[0] if refused and not requests else None)

    return new_data


def landing_sensor(cfg: PipelineConfig, keys: DatasetKeys) -> dg.SensorDefinition:
    auto, op = cfg.automation, keys.raw.to_python_identifier()
    folder = auto.landing

    def ended(context: dg.SensorEvaluationContext, seen: dict) -> None:
        """The requested ingests whose run ended since the last tick, said as they ended (ingested, or not)."""
        from mlassets.core.automation.settle import pending, resolve

        for key, digest in pending(seen).items():
            runs = context.instance.get_runs(dg.RunsFilter(job_name=ingest_job_name(cfg), tags={
                DATASET_TAG: cfg.dataset.name, PARTITIONS_TAG: key, DELIVERY_SHA_TAG: digest}), limit=1)
            if not runs or runs[0].status not in ENDED:
                continue
            run = runs[0]
            where = run.tags.get(DELIVERY_TAG, key)
            if run.status == dg.DagsterRunStatus.SUCCESS:
                context.log.info(f"landing: {where} was ingested into partition {key} (run {run.run_id[:8]})")
            else:
                context.log.warning(f"landing: {where} was not ingested: run {run.run_id[:8]} of partition {key} "
                                    f"{run.status.value.lower()} (its failure says why); it is taken again once "
                                    "its content changes and it is whole")
            resolve(seen, key, run.status == dg.DagsterRunStatus.SUCCESS)

    @dg.sensor(name=f"{cfg.dataset.name}_landing", job_name=ingest_job_name(cfg),
               minimum_interval_seconds=auto.sensor_interval_s, default_status=_status(True),
               description=f"A file or folder named by its partition key in {folder} is ingested once, when whole "
                           f"(unchanged for {auto.landing_settle_s} s). A refused delivery is reported by its run and "
                           "taken again only once its content changes and it is whole again; a delivery changed "
                           "after its ingest is reported, not ingested.")
    def landing(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        import time
        from pathlib import Path

        from mlassets.core.automation.landing import scan, stamp
        from mlassets.core.automation.settle import decide

        seen: dict = json.loads(context.cursor) if context.cursor else {}
        ended(context, seen)
        deliveries, ignored = scan(folder, cfg.dataset.partitions.pattern, auto.landing_max_mb)
        for entry in ignored:
            if seen.get(f"ignored:{entry.name}") != entry.reason:
                context.log.warning(f"landing: {entry.name}: {entry.reason}")
                seen[f"ignored:{entry.name}"] = entry.reason
        root = Path(folder).resolve()
        decision = decide(deliveries, seen, time.time(), auto.landing_settle_s,
                          lambda d: stamp(d.path, root, auto.landing_max_mb << 20))
        for _, why in decision.refused:
            context.log.warning(f"landing: {why}")
        for d in decision.changed:
            context.log.warning(f"landing: {d.path} changed after partition {d.key} was ingested from it; it is not "
                                f"a new version unless you say so: mlassets ingest --config <the {cfg.dataset.name} "
                                f"config> --partition {d.key} --from {d.path}")
        for d in decision.held:
            context.log.info(f"landing: {d.path} changed while the ingest of partition {d.key} requested from it has "
                             "not ended; it is judged again when that run ends")
        requests = [
            dg.RunRequest(run_key=f"{d.key}:{digest[:16]}", partition_key=d.key,
                          run_config={"ops": {op: {"config": {"delivered": d.path, "delivered_sha256": digest}}}},
                          tags={TRIGGER_TAG: "landing", DELIVERY_TAG: d.path, DELIVERY_SHA_TAG: digest,
                                PARTITIONS_TAG: d.key, DATASET_TAG: cfg.dataset.name})
            for d, digest in decision.ready
        ]
        for d, digest in decision.ready:
            context.log.info(f"landing: {d.path} is whole (sha256 {digest[:12]}...); its ingest into partition "
                             f"{d.key} is requested")
        fresh = [d.key for d, _ in decision.ready]
        keys_new = [k for k in fresh if not context.instance.has_dynamic_partition(raw_partitions(cfg).name, k)]
        return dg.SensorResult(run_requests=requests, cursor=json.dumps(seen, sort_keys=True),
                               dynamic_partitions_requests=[raw_partitions(cfg).build_add_request(keys_new)]
                               if keys_new else [])

    return landing


def retrain_schedule(cfg: PipelineConfig) -> dg.ScheduleDefinition:
    versions, job, auto = data_versions(cfg), pipeline_job_name(cfg), cfg.automation

    @dg.schedule(name=f"{cfg.dataset.name}_retrain", cron_schedule=auto.schedule, job_name=job,
                 execution_timezone=auto.timezone, default_status=dg.DefaultScheduleStatus.RUNNING,
                 description=f"Retrain on the newest data version ({auto.retrain}"
                             + (f", a full retrain every {auto.full_retrain_every}" if auto.retrain != "full" else "")
                             + ").")
    def retrain(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
        from mlassets.core.automation.policy import scheduled_retrain
        from mlassets.core.registry.promote import live_version

        known = context.instance.get_dynamic_partitions(versions.name)
        if not known:
            return dg.SkipReason(f"{cfg.dataset.name} has no data version yet")
        previous = context.instance.get_runs_count(dg.RunsFilter(job_name=job, tags={TRIGGER_TAG: "schedule"}))
        policy = scheduled_retrain(auto, previous, live_version(cfg.model.registered_name) is not None)
        refusal = admit_requests(context.instance, cfg, 1)[0]
        if refusal:
            return dg.SkipReason(f"the retrain of {known[-1]} was not requested: {refusal}")
        return dg.RunRequest(run_key=f"retrain:{context.scheduled_execution_time.isoformat()}",
                             partition_key=known[-1],
                             tags={TRIGGER_TAG: "schedule", RETRAIN_TAG: policy, **version_tags(cfg, known[-1])})

    return retrain


def automation(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.SensorDefinition | dg.ScheduleDefinition]:
    out: list[dg.SensorDefinition | dg.ScheduleDefinition] = [new_data_sensor(cfg)]
    if cfg.automation.landing:
        out.append(landing_sensor(cfg, keys))
    if cfg.automation.schedule:
        out.append(retrain_schedule(cfg))
    return out
