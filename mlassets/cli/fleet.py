"""``mlassets fleet``: the shared GPU fleet on one machine. ``submit`` admits or refuses a training job (a job file),
``serve`` runs the scheduler (leases, preemption, requeue), no subcommand shows the fleet (its jobs and the home's
Dagster runs that carry a job spec); ``kueue`` renders the same fleet for Kubernetes and ``dagster-yaml`` the run
queue's team limits. Each command imports only what it uses (``submit`` answers without Dagster or torch)."""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

# flag: (job spec field, number type): each is checked finite and in the field's range, naming the flag
NUMBER_FLAGS = {"--ranks": ("ranks", int), "--gpus-per-rank": ("gpus_per_rank", int),
                "--expected-minutes": ("expected_minutes", float),
                "--checkpoint-every-minutes": ("checkpoint_every_minutes", float)}


def _fleet(args: argparse.Namespace) -> Any:  # FleetConfig
    from mlassets.core.fleet.config import load_fleet

    return load_fleet(args.fleet)


def _table(args: argparse.Namespace) -> Any:  # FleetTable
    from mlassets.core.fleet.service import fleet_table

    return fleet_table(args.db)


def cmd_status(args: argparse.Namespace) -> int:
    from mlassets.core.fleet.report import format_view
    from mlassets.defs.fleet.view import fleet_view
    from mlassets.host.instance import existing_instance

    fleet = _fleet(args)
    with existing_instance() as instance:  # the home's Dagster runs with a job spec too (none: no instance created)
        v = fleet_view(_table(args), fleet, instance)
    print(json.dumps(asdict(v), indent=2, default=str) if args.json else format_view(v, fleet))
    return 0


def _number(flag: str, text: str) -> int | float:
    """A numeric flag's value: a finite number of its type within its job spec field's range, or one sentence."""
    from mlassets.core.config import ConfigError
    from mlassets.core.fleet.spec import check_range

    field, kind = NUMBER_FLAGS[flag]
    try:
        value = kind(text)
    except ValueError:
        raise ConfigError(f"{flag}: {text!r} is not {'a whole number' if kind is int else 'a number'}") from None
    check_range(flag, field, value)
    return value


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    numbers = {field: _number(flag, getattr(args, field)) for flag, (field, _) in NUMBER_FLAGS.items()
               if getattr(args, field) is not None}
    return {"team": args.team, "priority": args.priority, "capacity": args.capacity,
            "preemptible": False if args.not_preemptible else None, **numbers}


def cmd_submit(args: argparse.Namespace) -> int:
    from mlassets.core.config import parse_config
    from mlassets.core.fleet.admission import money
    from mlassets.core.fleet.service import submit
    from mlassets.core.fleet.spec import job_spec
    from mlassets.core.identity.access import authorize
    from mlassets.core.train.job import TrainJob, train_command

    overrides = _overrides(args)  # the flags first: a bad one is named before any file is read
    job = TrainJob.from_json(args.job)
    spec = job_spec(parse_config(job.config), overrides)
    command = train_command(spec.ranks, Path(args.job).resolve())
    name = args.name or Path(job.out_dir).name
    who = authorize("submit", spec.team, f"job {name!r}")  # a member of the team spends its budget, no one else
    fleet, table = _fleet(args), _table(args)
    job_id, decision = submit(table, fleet, name, spec, command, job.out_dir, who=who)
    if not decision.admitted:
        print(f"job {job_id} {decision.reason}", file=sys.stderr)
        return 1
    print(f"job {job_id} queued: {spec.gpus} GPUs ({spec.ranks} ranks x {spec.gpus_per_rank}), team {spec.team}, "
          f"{spec.priority}, {spec.capacity}, priced {money(fleet, decision.cost)}, by {who}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Tick until SIGINT or SIGTERM (whatever the shell left them as), ``--seconds`` or ``--until-idle``; a signal
    ends the wait between ticks at once and the tick in progress is the last one. The jobs it started are stopped."""
    import time

    from mlassets.core.fleet.scheduler import Scheduler
    from mlassets.core.identity.access import authorize, load_access

    who = authorize("operate", None, "the fleet's scheduler")  # it starts, preempts and requeues every team's jobs
    fleet = _fleet(args)
    if load_access() is not None:
        print(f"mlassets fleet serve: scheduling {args.db or 'the home'}'s jobs, started by {who}", file=sys.stderr)
    sched = Scheduler(fleet, _table(args))
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    stopped: list[int] = []

    def stop(signum: int, frame: object) -> None:
        stopped.append(signum)
        try:
            os.write(wake_w, b"x")
        except BlockingIOError:  # woken already
            pass

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    deadline = time.monotonic() + args.seconds if args.seconds else None
    try:
        while not stopped and (deadline is None or time.monotonic() < deadline):
            sched.tick()
            if args.until_idle and not sched.table.jobs("queued", "running", "stopping"):
                break
            wait = fleet.lease.heartbeat_s if deadline is None else min(fleet.lease.heartbeat_s,
                                                                         max(0.0, deadline - time.monotonic()))
            select.select([wake_r], [], [], wait)  # a signal's byte ends the wait
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        sched.close()
        os.close(wake_r)
        os.close(wake_w)
    return 0


def kueue_docs(args: argparse.Namespace) -> list[dict]:
    """The documents ``mlassets fleet kueue`` prints; its warnings go to stderr."""
    from mlassets.core.config import load_config, resolve_config
    from mlassets.core.fleet import kueue, kueue_job
    from mlassets.core.fleet.spec import check_against, job_spec

    fleet = _fleet(args)
    if args.kueue_config:
        return [kueue.kueue_config(fleet)]
    if args.team_access:
        from mlassets.core.fleet.kueue_access import render_access

        return render_access(fleet)
    docs = kueue.render_fleet(fleet)
    warnings = kueue.preemption_warnings(fleet)
    if args.config:
        spec = job_spec(load_config(resolve_config(args.config)), _overrides(args))
        check_against(spec, fleet)
        name = args.name or "mlassets-train"
        docs.append(kueue_job.render_job(spec, fleet, name, args.image, args.train_job, args.kind))
        warnings += kueue_job.job_warnings(spec, fleet)
    for line in warnings:
        print(line, file=sys.stderr)
    return docs


def cmd_kueue(args: argparse.Namespace) -> int:
    import yaml

    print(yaml.safe_dump_all(kueue_docs(args), sort_keys=False), end="")
    return 0


def main_kueue_docs(argv: list[str]) -> list[dict]:
    """The documents ``mlassets fleet kueue ARGV`` renders (the manifest checks compare them)."""
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    return kueue_docs(parser.parse_args(["fleet", "kueue", *argv]))


def cmd_dagster_yaml(args: argparse.Namespace) -> int:
    import yaml

    from mlassets.defs.fleet.runs import queue_config

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
    for flag in NUMBER_FLAGS:  # read as text and checked by _number, naming the flag
        p.add_argument(flag)
    p.add_argument("--capacity", choices=["spot", "on-demand", "spot-first"])
    p.add_argument("--not-preemptible", action="store_true")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from mlassets.cli.fleet_guard import cmd_lease_guard

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
    kueue = verbs.add_parser("kueue", help="the fleet (and a run's TrainJob) as Kueue manifests (docs/fleet-kueue.md)")
    kueue.add_argument("--config", help="a dataset config: add its run's workload")
    kueue.add_argument("--kind", choices=["TrainJob", "PyTorchJob"], default="TrainJob",
                       help="the run's workload: Kubeflow Trainer's TrainJob, or PyTorchJob (training operator v1)")
    kueue.add_argument("--kueue-config", action="store_true",
                       help="print Kueue's manager Configuration for the fleet (waitForPodsReady, frameworks) instead")
    kueue.add_argument("--team-access", action="store_true",
                       help="print each team's service account, the RBAC and the admission policy that lets only a "
                            "team's account submit to its queues instead (docs/identity.md)")
    kueue.add_argument("--name")
    kueue.add_argument("--image", default="registry.example.com/mlassets@sha256:" + "0" * 64)
    kueue.add_argument("--train-job", default="/var/lib/mlassets/work/job.json")
    _spec_flags(kueue)
    kueue.set_defaults(func=cmd_kueue)
    example = verbs.add_parser("example", help="the README walk-through's fleet.yaml and job files")
    example.add_argument("--out", required=True)
    example.set_defaults(func=cmd_example)
    guard = verbs.add_parser("lease-guard", help="in a pod: run the command after -- under the lease (its ranks "
                             "renew it; lapsed: the ranks are killed, exit 75)")
    for flag in ("--lease-seconds", "--startup-seconds", "--heartbeat-seconds"):
        guard.add_argument(flag, type=float, required=True)
    guard.add_argument("--lease-db", required=True, help="the pod's lease table (sqlite)")
    guard.add_argument("--job", required=True, help="the lease's key")
    guard.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    guard.set_defaults(func=cmd_lease_guard)  # the pod's own command, under the lease the scheduler granted
    dy = verbs.add_parser("dagster-yaml", help="the run queue's per-team limits, for a dagster.yaml")
    dy.set_defaults(func=cmd_dagster_yaml)

