"""``mlassets fleet``: the shared GPU fleet on one machine. ``submit`` admits or refuses a training job (a job file),
``serve`` runs the scheduler (leases, preemption, requeue), no subcommand shows the fleet (its jobs and the home's
Dagster runs that carry a job spec); ``kueue`` renders the same fleet for Kubernetes and ``dagster-yaml`` the run
queue's team limits."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import yaml


def _fleet(args: argparse.Namespace):  # -> FleetConfig
    from mlassets.core.fleet.config import load_fleet

    return load_fleet(args.fleet)


def _table(args: argparse.Namespace):  # -> FleetTable
    from mlassets.core.fleet.service import fleet_table

    return fleet_table(args.db)


def cmd_status(args: argparse.Namespace) -> int:
    from mlassets.core.fleet.report import format_view
    from mlassets.defs.fleet_view import fleet_view
    from mlassets.host.instance import existing_instance

    fleet = _fleet(args)
    with existing_instance() as instance:  # the home's Dagster runs with a job spec too (none: no instance created)
        v = fleet_view(_table(args), fleet, instance)
    print(json.dumps(asdict(v), indent=2, default=str) if args.json else format_view(v, fleet))
    return 0


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    return {"team": args.team, "priority": args.priority, "ranks": args.ranks, "gpus_per_rank": args.gpus_per_rank,
            "expected_minutes": args.expected_minutes, "capacity": args.capacity,
            "checkpoint_every_minutes": args.checkpoint_every_minutes,
            "preemptible": False if args.not_preemptible else None}


def cmd_submit(args: argparse.Namespace) -> int:
    from mlassets.core.config import parse_config
    from mlassets.core.fleet.service import submit
    from mlassets.core.fleet.spec import job_spec
    from mlassets.core.train.job import TrainJob
    from mlassets.core.train.launch import train_command

    job = TrainJob.from_json(args.job)
    spec = job_spec(parse_config(job.config), _overrides(args))
    command = train_command(spec.ranks, Path(args.job).resolve())
    fleet, table = _fleet(args), _table(args)
    job_id, decision = submit(table, fleet, args.name or Path(job.out_dir).name, spec, command, job.out_dir)
    if not decision.admitted:
        print(f"job {job_id} {decision.reason}", file=sys.stderr)
        return 1
    print(f"job {job_id} queued: {spec.gpus} GPUs ({spec.ranks} ranks x {spec.gpus_per_rank}), team {spec.team}, "
          f"{spec.priority}, {spec.capacity}, priced {fleet.currency}{decision.cost:,.0f}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from mlassets.core.fleet.scheduler import Scheduler

    fleet = _fleet(args)
    sched = Scheduler(fleet, _table(args))
    deadline = time.monotonic() + args.seconds if args.seconds else None
    try:
        while deadline is None or time.monotonic() < deadline:
            sched.tick()
            if args.until_idle and not sched.table.jobs("queued", "running", "stopping"):
                break
            time.sleep(fleet.lease.heartbeat_s)
    except KeyboardInterrupt:
        pass
    finally:
        sched.close()
    return 0


def kueue_docs(args: argparse.Namespace) -> list[dict]:
    from mlassets.core.config import load_config, resolve_config
    from mlassets.core.fleet.kueue import render_fleet, render_job
    from mlassets.core.fleet.spec import check_against, job_spec

    fleet = _fleet(args)
    docs = render_fleet(fleet)
    if args.config:
        spec = job_spec(load_config(resolve_config(args.config)), _overrides(args))
        check_against(spec, fleet)
        docs.append(render_job(spec, fleet, args.name or "mlassets-train", args.image, args.train_job))
    return docs


def cmd_kueue(args: argparse.Namespace) -> int:
    print(yaml.safe_dump_all(kueue_docs(args), sort_keys=False), end="")
    return 0


def main_kueue_text(argv: list[str]) -> str:
    """The PyTorchJob that ``mlassets fleet kueue ARGV`` renders, as YAML (the manifest checks compare it)."""
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    add_parser(sub)
    args = parser.parse_args(["fleet", "kueue", *argv])
    return yaml.safe_dump(kueue_docs(args)[-1], sort_keys=False)


def cmd_dagster_yaml(args: argparse.Namespace) -> int:
    from mlassets.defs.fleet import queue_config

    print(yaml.safe_dump(queue_config(_fleet(args)), sort_keys=False), end="")
    return 0


def cmd_example(args: argparse.Namespace) -> int:
    from mlassets.examples.fleet import write_fleet_example

    for path in write_fleet_example(Path(args.out)):
        print(path)
    print(f"fleet: {Path(args.out) / 'fleet.yaml'} (export MLASSETS_FLEET to use it)")
    return 0


def _spec_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--team")
    p.add_argument("--priority", help="a priority class of fleet.yaml")
    p.add_argument("--ranks", type=int)
    p.add_argument("--gpus-per-rank", type=int)
    p.add_argument("--expected-minutes", type=float)
    p.add_argument("--capacity", choices=["spot", "on-demand", "spot-first"])
    p.add_argument("--checkpoint-every-minutes", type=float)
    p.add_argument("--not-preemptible", action="store_true")


def add_parser(sub: argparse._SubParsersAction) -> None:
    fleet = sub.add_parser("fleet", help="the shared GPU fleet: queue, leases, quotas, budgets, preemptions")
    fleet.add_argument("--fleet", help="fleet.yaml (default $MLASSETS_FLEET, else the shipped one)")
    fleet.add_argument("--db", help="the lease table (default $MLASSETS_HOME/fleet.db)")
    fleet.add_argument("--json", action="store_true", help="the fleet as JSON")
    fleet.set_defaults(func=cmd_status)
    verbs = fleet.add_subparsers(dest="fleet_command")
    submit = verbs.add_parser("submit", help="admit (or refuse, with the numbers) a training job file")
    submit.add_argument("--job", required=True, help="a TrainJob JSON file")
    submit.add_argument("--name")
    _spec_flags(submit)
    submit.set_defaults(func=cmd_submit)
    serve = verbs.add_parser("serve", help="the scheduler: start, lease, preempt and requeue jobs")
    serve.add_argument("--seconds", type=float, default=0.0, help="stop after this long (0: until interrupted)")
    serve.add_argument("--until-idle", action="store_true", help="stop when no job is queued or running")
    serve.set_defaults(func=cmd_serve)
    kueue = verbs.add_parser("kueue", help="the fleet (and a run's PyTorchJob) as Kueue manifests")
    kueue.add_argument("--config", help="a dataset config: add its run's PyTorchJob")
    kueue.add_argument("--name")
    kueue.add_argument("--image", default="registry.example.com/mlassets@sha256:" + "0" * 64)
    kueue.add_argument("--train-job", default="/var/lib/mlassets/work/job.json")
    _spec_flags(kueue)
    kueue.set_defaults(func=cmd_kueue)
    example = verbs.add_parser("example", help="the README walk-through's fleet.yaml and job files")
    example.add_argument("--out", required=True)
    example.set_defaults(func=cmd_example)
    dy = verbs.add_parser("dagster-yaml", help="the run queue's per-team limits, for a dagster.yaml")
    dy.set_defaults(func=cmd_dagster_yaml)

