"""The capacity planner's components and the source's two flags, with editable assumptions."""

from __future__ import annotations

from mlassets.core.diagnose.capacity import Assumptions, Workload, plan


def _needed(p) -> set[str]:
    return {c.name for c in p.components if c.needed}


def test_a_notebook_workload_needs_only_author_and_worker() -> None:
    p = plan(Workload())
    assert _needed(p) == {"ML author", "Training worker"} and not p.flags and p.hosts == 1


def test_more_than_8_gpus_needs_hosts_and_1b_params_needs_sharding() -> None:
    p = plan(Workload(cluster_gpus=32, data_parallel=True, model_params=7e9, experiments=5000, jobs_per_day=40,
                      pipeline_stages=6, automated_retraining=True))
    assert p.hosts == 4 and any("4 hosts" in f for f in p.flags)
    assert any("shard the model" in f for f in p.flags)
    assert {"GPU cluster", "Pipeline scheduler", "Model registry", "CI/CD trigger"} <= _needed(p)


def test_assumptions_are_editable() -> None:
    w = Workload(cluster_gpus=12, data_parallel=True)
    assert any("hosts" in f for f in plan(w).flags)
    assert not any("hosts" in f for f in plan(w, Assumptions(gpus_per_host=16)).flags)
