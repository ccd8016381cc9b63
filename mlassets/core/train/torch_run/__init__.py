"""The torch run: how the torch families (``mlp``, a ``torch`` plug-in) train, one process per rank.

``process`` is that process (``run_training``), ``loop`` its ``Trainer``; around it ``distributed`` (ranks, devices,
DDP/FSDP, collectives), ``loader`` and ``global_batches`` (the data), ``timing`` and ``profiling`` (what a step
costs), ``preempt`` (SIGTERM under the fleet) and ``run_budget`` (a run over ``training.budget_hours`` stops);
``mlp`` is the built-in network, ``torch_nn`` the two families, ``trial`` a tuning trial, ``warm_start`` a start
from a registered model's weights. Its checkpoints are ``mlassets.core.train.checkpoint``'s.
"""
