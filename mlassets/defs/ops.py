"""group ops: ``scaling_profile``, short training at 1..N ranks on this machine -> efficiency per doubling.

The measurement is asset metadata (for people) and ``$MLASSETS_HOME/ops/<dataset>/scaling_profile.json``,
which the dashboard's Scaling and cost page reads; the metadata links to that page.
"""

import json
import tempfile
from pathlib import Path

import dagster as dg

from mlassets.core import paths
from mlassets.core.config import PipelineConfig
from mlassets.defs.display import number
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import run_url


class ScalingConfig(dg.Config):
    max_ranks: int = 2  # measured at 1, 2, 4 ... up to this many local ranks
    rows: int = 4096  # synthetic training rows (steps = rows / the dataset's global batch)


def dashboard_url(page: str) -> str:
    from mlassets.core.ui_urls import dashboard_page

    return dashboard_page(page)


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    model = {"embedding_dim": cfg.model.embedding_dim, "hidden": list(cfg.model.hidden)}

    @dg.asset(key=dg.AssetKey([cfg.dataset.name, "scaling_profile"]), group_name="ops", kinds={"pytorch"})
    def scaling_profile(context: dg.AssetExecutionContext, config: ScalingConfig) -> dg.MaterializeResult:
        """Throughput of the dataset's network at 1..N ranks (gloo/nccl via torchrun), the fitted efficiency
        per doubling, the checkpoint stall and the restart cost, for the cost projection."""
        from mlassets.core.diagnose.scaling import measure

        with tempfile.TemporaryDirectory(prefix="scaling-", dir=paths.work_dir("ops")) as tmp:
            result = measure(Path(tmp), model, cfg.training.batch_size, config.max_ranks, config.rows,
                             cfg.training.threads)
        result["dagster_run_url"] = run_url(context.run_id)
        path = paths.home() / "ops" / cfg.dataset.name / "scaling_profile.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2) + "\n")
        return dg.MaterializeResult(metadata={
            "efficiency_per_doubling": number(result["efficiency_per_doubling"]),
            **{f"samples_per_s_{n}_ranks": number(t) for n, t in result["throughput"].items()},
            "checkpoint_stall_s": number(result["checkpoint_stall_s"]),
            "restart_s": number(result["restart_s"]),
            "machine": result["machine"],
            "path": dg.MetadataValue.path(str(path)),
            "dashboard": dg.MetadataValue.url(dashboard_url("scaling")),
        })

    return [scaling_profile]
