"""One stage of the scale benchmark, in a process of its own, so its peak RSS is the stage's own.

``python -m bench.scale_stages STAGE WORK`` runs ``STAGES[STAGE]`` on the work folder the stages share (the
generated data and its config under ``data/``, the store under ``store/``, exported splits under ``splits/``) and
prints one JSON line: the stage, its seconds, the process's peak RSS (``VmHWM``) and what the stage reports.

To add a stage: write ``def my_stage(work: Path) -> dict`` here, decorate it with ``@stage("my_stage")``, and
append its name to ``bench.scale.PIPELINE``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Stage = Callable[[Path], dict[str, Any]]
STAGES: dict[str, Stage] = {}


def stage(name: str) -> Callable[[Stage], Stage]:
    def register(fn: Stage) -> Stage:
        STAGES[name] = fn
        return fn

    return register


def peak_rss() -> int:
    """This process's peak resident set size in bytes (``VmHWM`` of ``/proc/self/status``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _open(work: Path) -> tuple[Any, Any]:
    from mlassets.core.config import load_config
    from mlassets.core.data.store.local import LocalStore

    return load_config(work / "data" / "flights_scale.yaml"), LocalStore(work / "store")


def _head(store: Any, cfg: Any) -> str:
    from mlassets.core.data.raw import WATCHED_BRANCH, raw_repo

    return store.resolve(raw_repo(cfg), WATCHED_BRANCH)


@stage("generate")
def generate(work: Path) -> dict[str, Any]:
    """The flights-scale example (not part of the pipeline: its input). Arguments: rows, partitions."""
    from mlassets.examples.flights_scale import write_example

    rows, partitions = (int(a) for a in sys.argv[3:5])
    write_example(work / "data", rows, partitions)
    return {"rows": rows, "partitions": partitions}


@stage("ingest")
def ingest(work: Path) -> dict[str, Any]:
    """Every partition into the store, one commit each (the files source streamed; validation is the next stage)."""
    from mlassets.core.data.ingest import ingest_partition

    cfg, store = _open(work)
    rows = 0
    for key in cfg.dataset.partitions.keys:
        rows += sum(ingest_partition(store, cfg, key, validate=False).rows.values())
    return {"rows": rows}


@stage("validate")
def validate(work: Path) -> dict[str, Any]:
    """Every blocking check of the newest version, over all its partitions (as a snapshot with no parent)."""
    from mlassets.core.data.snapshot import check_version

    cfg, store = _open(work)
    checks = check_version(store, cfg, _head(store, cfg), "")
    if not checks.passed:
        raise RuntimeError(f"validation failed: {checks.failures()}")
    return {"rows": sum(checks.rows_per_partition.values())}


@stage("features")
def features(work: Path) -> dict[str, Any]:
    """The version's features (every partition built), and the three splits exported as a training run gets them."""
    from mlassets.core.features.split import SPLITS
    from mlassets.core.features.store import export_splits, write_features

    cfg, store = _open(work)
    head = _head(store, cfg)
    feature_set = write_features(store, cfg, head)
    export_splits(store, cfg, head, work / "splits", SPLITS)
    return {"rows": sum(feature_set.rows.values())}


@stage("train")
def train(work: Path) -> dict[str, Any]:
    """One epoch of the config's model on the exported train split, read by the streaming loader (one process,
    as a single-rank training step runs), validated on the exported validation split."""
    import io

    from mlassets.core.train.job import TrainJob
    from mlassets.core.train.reporting import PrintReporter
    from mlassets.core.train.torch_run.process import run_training

    cfg, _ = _open(work)
    config = cfg.to_dict()
    config["training"].update(epochs=1, loader="stream")
    splits = work / "splits"
    job = TrainJob(config, str(splits / "train.parquet"), str(splits / "validation.parquet"), str(work / "training"),
                   "bench")
    result = run_training(job, PrintReporter(stream=io.StringIO()))
    return {"rows": result.n_train, "model_dir": result.model_dir}


@stage("evaluate")
def evaluate(work: Path) -> dict[str, Any]:
    """The trained model on the version's holdout, streamed (chunks of the memory budget, accumulated metrics,
    slices with their bootstrap intervals, the scored rows written to a file), as a first model is evaluated."""
    from mlassets.core.evaluate.stream import READ_BUDGET_MB, evaluate_streamed, read_train_target
    from mlassets.core.features.store import split_tables
    from mlassets.core.train.artifact import load_bundle

    cfg, store = _open(work)
    head = _head(store, cfg)
    bundle = load_bundle(work / "training" / "model")
    holdout = split_tables(store, cfg, head, "holdout", budget_mb=READ_BUDGET_MB)  # as the evaluation asset reads it
    evaluation = evaluate_streamed(holdout, cfg, bundle, None, read_train_target(store, cfg, head),
                                   work / "predictions.parquet", data_version=head)
    return {"rows": evaluation.holdout_rows, "metric": evaluation.candidate[cfg.gate.main_metric]}


@stage("drift")
def drift(work: Path) -> dict[str, Any]:
    """The drift report of the newest partition against a champion trained on the whole version, twice: the first
    builds and stores the reference (a sample of the train split), the second reads it back."""
    from mlassets.core.monitor.drift import drift_report
    from mlassets.core.monitor.reference import Champion, new_rows, reference_rows

    cfg, store = _open(work)
    head, newest = _head(store, cfg), cfg.dataset.partitions.keys[-1]
    seconds = []
    for _ in range(2):
        start = time.perf_counter()
        report = drift_report(reference_rows(store, cfg, Champion("bench", head)), new_rows(store, cfg, head, [newest]),
                              cfg, data_version=head, new_partitions=[newest], champion_version="bench",
                              reference_data_version=head)
        seconds.append(round(time.perf_counter() - start, 2))
    return {"rows": report.new_rows, "reference_rows": report.reference_rows, "first_s": seconds[0],
            "again_s": seconds[1], "drifted": report.drifted}


def main(argv: list[str]) -> int:
    name, work = argv[1], Path(argv[2])
    start = time.perf_counter()
    report = STAGES[name](work)
    print(json.dumps({"stage": name, "seconds": time.perf_counter() - start, "peak_rss": peak_rss(), **report}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
