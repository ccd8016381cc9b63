"""A recorded stack for the dashboard tests: fault-run telemetry, a scaling profile, spans, a registry, a log."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "telemetry"
REPO = Path(__file__).resolve().parents[2]
RUNS = {"aaaa1111": "slow_loader", "bbbb2222": "slow_rank_input", "cccc3333": "heavy_compute"}
DAGSTER_RUN = "aaaa1111-2222-3333-4444-555566667777"
MODEL = "flights_arr_delay"
PROFILED = "dddd4444"
MULTICLASS, MULTICLASS_COMMIT = "penguin_species", "e" * 40
RUN_COMMIT = "aaaa11110123456789" + "0" * 22  # the data commit of run aaaa1111's folder (its first 16+ digits)


@dataclass(frozen=True)
class Stack:
    home: Path


def _gate(passed: bool, change: float, unjudged: bool) -> str:
    rules = [{"name": "main_metric", "value": 10.0, "limit": 10.2, "passed": True, "reason": "mae 10.0 vs 10.1"},
             {"name": "slice origin=EWR", "value": change, "limit": 0.03, "passed": passed,
              "reason": f"slice origin=EWR: {change:+.1%}"}]
    gate = {"passed": passed, "has_champion": True, "rules": rules}
    if unjudged:
        gate["unjudged"] = [{"slice": "carrier", "value": "OO", "n": 12, "min_rows": 200}]
    return json.dumps(gate)


def _record(home: Path) -> None:
    import mlflow

    from mlassets.core.registry.promotion import PromotionLog

    mlflow.set_tracking_uri(f"sqlite:///{home / 'mlflow.db'}")
    client = mlflow.MlflowClient()
    experiment = client.create_experiment("mlassets", artifact_location=(home / "mlartifacts").as_uri())
    run = client.create_run(experiment, tags={"dagster_run_id": DAGSTER_RUN, "data_commit": RUN_COMMIT,
                                              "mlassets.version_name": f"2013-01 · {RUN_COMMIT[:8]}"})
    client.create_registered_model(MODEL)
    for version, (passed, change, unjudged) in enumerate([(True, 0.0, False), (False, 0.08, True)], 1):
        client.create_model_version(MODEL, (home / "m").as_uri(), run_id=run.info.run_id, tags={
            "data_commit": f"{version}" * 40, "mlassets.version_name": f"2013-0{version} · {str(version) * 8}",
            "gate_passed": str(passed).lower(), "dagster_run_id": DAGSTER_RUN,
            "gate_summary": "pass" if passed else "rejected: slice origin=EWR: +8.0%",
            "gate_result": _gate(passed, change, unjudged)})
    _multiclass(home, client, experiment)
    log = PromotionLog(f"sqlite:///{home / 'promotions.db'}")
    log.append_next(MODEL, {"action": "promote", "to_version": "1", "who": "dagster run x", "reason": "gate passed"})
    log.append_next(MODEL, {"action": "force-promote", "from_version": "1", "to_version": "2", "who": "ana",
                            "reason": "hotfix for the EWR outage"})
    log.append_next(MODEL, {"action": "rollback", "from_version": "2", "to_version": "1", "who": "ana",
                            "reason": "EWR worse in production"})


def _multiclass(home: Path, client, experiment: str) -> None:  # noqa: ANN001 - an MlflowClient
    """A multiclass model whose one version's run logged its evaluation record (a real one, of seeded
    probabilities: the candidate never saw Chinstrap) and whose tags hold the gate's verdict on it."""
    from mlassets.core.evaluate.gate import evaluate_gate
    from mlassets.core.evaluate.score import EVALUATION, artifact_dir
    from mlassets.core.evaluate.scored import evaluate_multiclass
    from mlassets.core.registry.record import GATE_FILE
    from tests.core.evaluate.test_multiclass import CLASSES, mc_config, penguins_like, probabilities

    frame, y = penguins_like(400, seed=2)
    cfg = mc_config(tolerance=5.0)
    evaluation = evaluate_multiclass(frame, y, probabilities(y, ["Adelie", "Gentoo"], 2.5, 1),
                                     probabilities(y, CLASSES, 2.0, 2), cfg, champion_version="1",
                                     data_version=MULTICLASS_COMMIT)
    gate = evaluate_gate(cfg.gate, evaluation)
    run = client.create_run(experiment).info.run_id
    path = home / EVALUATION
    path.write_text(evaluation.to_json())
    client.log_artifact(run, str(path), artifact_dir(MULTICLASS_COMMIT))
    path.unlink()
    client.create_registered_model(MULTICLASS)
    client.log_text(run, gate.to_json(), GATE_FILE)  # the whole verdict: its tags hold the verdict only
    client.create_model_version(MULTICLASS, (home / "m").as_uri(), run_id=run, tags={
        "data_commit": MULTICLASS_COMMIT, "gate_passed": str(gate.passed).lower(), "gate_summary": gate.summary(),
        "gated_against": gate.gated_against})


def _spans(home: Path, requests: int = 100) -> None:
    lines = []
    for i in range(requests):
        slow = i >= 98
        stages = {"read": 15, "preprocessing": 10, "model": 20, "write": 45 + (80 if slow else 0)}
        start = i * 10**9
        lines.append({"trace_id": f"{i:032x}", "span_id": f"{i:016x}", "parent_id": "", "name": "request",
                      "start_ns": start, "end_ns": start + sum(stages.values()) * 10**6})
        for j, (name, ms) in enumerate(stages.items()):
            lines.append({"trace_id": f"{i:032x}", "span_id": f"{i:012x}{j:04x}", "parent_id": f"{i:016x}",
                          "name": name, "start_ns": start, "end_ns": start + ms * 10**6})
    (home / "traces").mkdir(parents=True, exist_ok=True)
    (home / "traces" / "serving.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def _profiled_run(home: Path) -> None:
    """A real one-rank run with ``training.profile`` on: telemetry, traces and result.json in the work area."""
    import io

    from mlassets.core.train.job import TrainJob
    from mlassets.core.train.reporting import PrintReporter
    from mlassets.core.train.synthetic import tiny_config, write_splits
    from mlassets.core.train.torch_run.process import run_training

    data = write_splits(home / "data", 64 * 10, 128)
    out = home / "work" / "flights" / "train" / f"{PROFILED}0123456789" / PROFILED
    config = tiny_config(epochs=1, batch_size=64, profile={"steps": 3, "wait": 1, "warmup": 1})
    run_training(TrainJob(config, str(data[0]), str(data[1]), str(out), "v1"), PrintReporter(stream=io.StringIO()))


def build_stack(home: Path) -> Stack:
    _profiled_run(home)
    for key, name in RUNS.items():
        shutil.copytree(FIXTURES / name, home / "work" / "flights" / "train" / f"{key}0123456789" / key / "telemetry")
    profile = {"measured_at": "2026-01-01T00:00:00+00:00", "machine": "2 CPUs", "ranks": [1, 2],
               "throughput": {"1": 1000.0, "2": 1500.0}, "efficiency_per_doubling": 0.75, "checkpoint_stall_s": 0.5,
               "restart_s": 6.0, "steps": 64, "batch_size": 64, "model": {}}
    (home / "ops" / "flights").mkdir(parents=True)
    (home / "ops" / "flights" / "scaling_profile.json").write_text(json.dumps(profile))
    _spans(home)
    _record(home)
    return Stack(home)


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Stack:
    return build_stack(tmp_path_factory.mktemp("recorded-home"))


@pytest.fixture
def stack(recorded: Stack, monkeypatch: pytest.MonkeyPatch) -> Stack:
    monkeypatch.setenv("MLASSETS_HOME", str(recorded.home))
    for var in ("DAGSTER_HOME", "MLFLOW_TRACKING_URI", "MLASSETS_PROMOTION_DB"):
        monkeypatch.delenv(var, raising=False)
    return recorded
