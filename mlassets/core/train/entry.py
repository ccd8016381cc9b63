"""``python -m mlassets.core.train``: one training process of any model family (one per rank for the torch ones).

    python -m mlassets.core.train --job job.json                  # one rank, no torchrun needed
    torchrun --standalone --nnodes=1 --nproc-per-node=2 --max-restarts=0 -m mlassets.core.train --job job.json
    torchrun --standalone --nproc-per-node=2 --max-restarts=0 -m mlassets.core.train \\
        --config mlassets/configs/flights.yaml --train train.parquet --validation validation.parquet --out runs/r1

The job's ``model.family`` trains it (``mlassets.core.train.family``); torch is imported only by the torch
families. Whatever the family, the process leaves its outcome in ``<out>`` (``mlassets.core.train.outcome``: the
``TrainingResult`` beside ``<out>/model``, a bundle; or why it failed, was preempted or refused); under Dagster Pipes
only rank 0 opens the Pipes channel.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from mlassets.core.config import load_config
from mlassets.core.config.families import DEFAULT
from mlassets.core.train.family import family_of
from mlassets.core.train.job import TrainJob
from mlassets.core.train.outcome import PREEMPTED_EXIT, Outcome, record_outcome
from mlassets.core.train.reporting import PrintReporter


def _job(args: argparse.Namespace) -> TrainJob:
    if args.job:
        return TrainJob.from_json(args.job)
    if not (args.config and args.train and args.validation and args.out):
        raise ValueError("give --job, or all of --config, --train, --validation and --out")
    return TrainJob(config=load_config(args.config).to_dict(), train_path=args.train,
                    validation_path=args.validation, out_dir=args.out, data_version=args.data_version)


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


def die_with_launcher() -> None:
    """Under torchrun or Dagster Pipes, end when the launcher ends, also when it is SIGKILLed (Linux: the parent-
    death signal). torchrun starts each rank in a session of its own, so without this a rank outlives its lost agent:
    it trains on, or writes into a working area that the step's retry now owns."""
    launched = os.environ.get("TORCHELASTIC_RUN_ID") or os.environ.get("DAGSTER_PIPES_CONTEXT")
    if sys.platform != "linux" or not launched:
        return
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    if os.getppid() == 1:  # the launcher was gone before the signal was armed
        raise SystemExit("training: the launcher that started this process is gone; not training alone")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mlassets.core.train", description="Train one model.")
    parser.add_argument("--job", help="path of a TrainJob JSON file")
    parser.add_argument("--config", help="pipeline config YAML (instead of --job)")
    parser.add_argument("--train", help="training split (parquet), with --config")
    parser.add_argument("--validation", help="validation split (parquet), with --config")
    parser.add_argument("--out", help="output directory, with --config")
    parser.add_argument("--data-version", default="local", help="recorded data version, with --config")
    args = parser.parse_args(argv)
    die_with_launcher()
    from mlassets.core.fleet.heartbeat import start_from_env
    from mlassets.core.train.torch_run.preempt import Preempted

    start_from_env()  # under the fleet: this rank renews its job's lease until the process has ended
    job: TrainJob | None = None
    try:
        job = _job(args)
        family = family_of(str(job.config.get("model", {}).get("family", DEFAULT)))
        if os.environ.get("DAGSTER_PIPES_CONTEXT") and _rank() == 0:
            from mlassets.integrations.pipes import PipesReporter

            with PipesReporter() as reporter:  # logs stream to Dagster; an exception is reported, then re-raised
                family.train(job, reporter, hard_crash=True)
            return
        result = family.train(job, PrintReporter(), hard_crash=True)
        if result is not None:
            print(json.dumps(result.summary(), sort_keys=True))
    except Preempted as exc:
        print(f"training {exc}", file=sys.stderr, flush=True)
        raise SystemExit(PREEMPTED_EXIT) from None
    except Exception as exc:
        out = job.out_dir if job is not None else args.out
        if out:
            record_outcome(out, Outcome.failed(exc))  # the sentence the orchestrator shows first
        if os.environ.get("DAGSTER_PIPES_CONTEXT") or not isinstance(exc, ValueError | OSError):
            raise
        print(f"training failed: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
