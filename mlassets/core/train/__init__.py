"""Stage 3, train: one model from a version's splits, deterministic, distributed and resumable.

``launch`` prepares the job and the command (``python -m mlassets.core.train`` or torchrun) and records what came
back; ``entry`` is the training process of any family, which ``family`` finds by name. What every family shares
lives here: the job, the splits (``splits``, ``split_stream``), the validation metric (``objectives``), step rows
(``steplog``), faults, rank 0's metric sinks (``metric_sinks``), the bundle (``artifact``, ``outputs``,
``mlflow_model``) and the records it hands on (``result``). The families train in rooms of their own:
``torch_run`` (the torch loop under torchrun) and ``trees`` (the boosted trees), both writing ``checkpoint``'s.
"""
