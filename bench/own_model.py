"""A model of one's own: a torch plug-in in the platform's loop against the same module in a bare loop.

The plug-in is the one ``mlassets example torch-plugin`` writes (residual blocks with LayerNorm), made about as
wide as the MLP of ``training_throughput`` so that both measure the loop, not the model's size.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.registry import Result, benchmark
from bench.training import THROUGHPUT, THROUGHPUT_GOAL, throughput_ratio
from mlassets.examples.torch_plugin import MODEL


@benchmark("plugin_throughput", goal="torch plug-in: platform / bare-loop throughput", better="higher",
           target=THROUGHPUT_GOAL)
def plugin_throughput() -> Result:
    with tempfile.TemporaryDirectory(prefix="bench-plugin-") as tmp:
        model_file = Path(tmp) / "model.py"
        model_file.write_text(MODEL)
        params = {"width": 512, "depth": 2, "embedding_dim": 8, "dropout": 0.0}
        spec = {"model": {"family": "torch", "plugin": f"{model_file}:build", "params": params},
                "training": THROUGHPUT["training"]}
        return throughput_ratio(spec, Path(tmp), f"plug-in ResidualTabular {params}")
