"""The gate's verdict is data: ``gate_result`` materializes for every candidate, passed or rejected, and a rejection
is a finished computation with a negative answer, not a failure.

- the partition: ``verdict``, ``reason`` and one ``rule: <name>`` entry per rule in the materialization's metadata
  (the partition's first screen);
- the check ``gate_passed`` on ``gate_result``: one evaluation per materialization, failed (severity ERROR) for a
  rejection; it blocks nothing, so the run stays green, and ``champion`` yields no output for a rejected version
  (an optional output), which skips ``predictions``;
- MLflow: the training run's ``gate`` tag (``passed`` or ``rejected``), its artifact ``gate_result.json`` and, for a
  rejection, the description's first line ``Rejected: <first failing rule's reason>``; the model version's tags
  ``gate``, ``gate_passed``, ``gate_summary`` and ``gated_against`` (``mlassets.core.registry.record``).
"""

from __future__ import annotations

import warnings

import dagster as dg

from mlassets.core.evaluate.gate import GateResult
from mlassets.core.registry.record import GATE_FILE
from mlassets.defs.display import table

GATE_CHECK = "gate_passed"
GATE_TAG = "gate"  # on the MLflow training run: passed or rejected
PASSED, REJECTED = "passed", "rejected"
NOTE_TAG = "mlflow.note.content"  # the run's description in MLflow's UI
RULE_PREFIX = "rule: "


def verdict(gate: GateResult) -> str:
    return PASSED if gate.passed else REJECTED


def first_reason(gate: GateResult) -> str:
    """The first failing rule's sentence (``""`` when the gate passed)."""
    reasons = gate.reasons()
    return reasons[0] if reasons else "" if gate.passed else "the gate failed"


def gate_check_spec(asset: dg.AssetKey, partitions_def: dg.PartitionsDefinition) -> dg.AssetCheckSpec:
    """``gate_passed``, partitioned like ``gate_result`` (each evaluation names its partition); it blocks nothing:
    a rejection is an answer. Dagster 1.13 calls partitioned checks a preview; its warning is silenced here only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return dg.AssetCheckSpec(GATE_CHECK, asset=asset, partitions_def=partitions_def,
                                 description="per data version: the gate passed (a rejected version fails this "
                                             "check; its champion and predictions are skipped)")


def gate_metadata(gate: GateResult) -> dict[str, object]:
    """What the ``gate_result`` partition shows first: the verdict, the first reason, one entry per rule, then the
    rules as a table."""
    rules = {f"{RULE_PREFIX}{r.name}": PASSED if r.passed else f"{REJECTED}: {r.reason}" for r in gate.rules}
    return {
        "verdict": verdict(gate),
        "reason": first_reason(gate) or "all rules passed",
        **rules,
        "passed": gate.passed,
        "summary": gate.summary(),
        "reasons": dg.MetadataValue.md("\n".join(f"- {r}" for r in gate.reasons()) or "all rules passed"),
        "rules": table([{"rule": r.name, "value": r.value, "limit": r.limit, "bound": r.bound, "passed": r.passed,
                         "reason": r.reason, "note": r.note} for r in gate.rules]),  # note: a pass past its limit
        "unjudged_slices": table([u.to_dict() for u in gate.unjudged], ["slice", "value", "n", "min_rows"]),
        "champion_version": gate.gated_against,
        "dropped_missing_target": dg.MetadataValue.int(gate.dropped_missing_target),
    }


def gate_check_result(gate: GateResult, label: str) -> dg.AssetCheckResult:
    """``gate_passed`` for this partition: the verdict, and every failed rule with its value and limit."""
    failed = [{"rule": r.name, "value": r.value, "limit": r.limit, "reason": r.reason} for r in gate.failures()]
    text = f"{label}: " + (gate.summary() if gate.passed else "; ".join(gate.reasons()) or REJECTED)
    return dg.AssetCheckResult(
        check_name=GATE_CHECK, passed=gate.passed, severity=dg.AssetCheckSeverity.ERROR, description=text,
        metadata={"verdict": verdict(gate), "data_version_name": label,
                  "failed_rules": table(failed, ["rule", "value", "limit", "reason"]),
                  "gated_against": gate.gated_against})


def run_description(gate: GateResult, previous: str = "") -> str:
    """The training run's description: for a rejection, ``Rejected: <first reason>`` first, then what was there."""
    if gate.passed:
        return previous
    return "\n\n".join(line for line in (f"Rejected: {first_reason(gate)}", previous) if line)


def tag_mlflow_run(gate: GateResult) -> None:
    """The verdict on the active MLflow run (the training run of this Dagster run): its ``gate`` tag, the whole
    result (each rule's value and limit) as ``gate_result.json``, and for a rejection the first line of its
    description."""
    import mlflow

    active = mlflow.active_run()
    if active is None:
        return
    mlflow.log_text(gate.to_json(), GATE_FILE)  # the model version's tags keep the verdict only
    tags = {GATE_TAG: verdict(gate)}
    if not gate.passed:
        tags[NOTE_TAG] = run_description(gate, _without_verdict(_note(active.info.run_id)))[:5000]
    mlflow.set_tags(tags)


def keep_verdict(tags: dict[str, str]) -> dict[str, str]:
    """``tags`` to set on the active MLflow run, a new description keeping the run's ``Rejected: …`` line first."""
    import mlflow

    active = mlflow.active_run()
    if active is None or NOTE_TAG not in tags:
        return tags
    first = _note(active.info.run_id).split("\n\n", 1)[0]
    if not first.startswith("Rejected: "):
        return tags
    return {**tags, NOTE_TAG: f"{first}\n\n{_without_verdict(tags[NOTE_TAG])}"[:5000]}


def _note(run_id: str) -> str:
    import mlflow

    return mlflow.get_run(run_id).data.tags.get(NOTE_TAG, "")


def _without_verdict(note: str) -> str:
    """A description without its ``Rejected: …`` line (a step run again writes one verdict line)."""
    if note.startswith("Rejected: "):
        return note.split("\n\n", 1)[1] if "\n\n" in note else ""
    return note
