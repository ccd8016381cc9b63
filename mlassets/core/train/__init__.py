"""Stage 3, train: one model from a version's splits, deterministic, distributed and resumable.

``launch`` prepares the job and the command (``python -m mlassets.core.train`` or torchrun) and records what
came back; ``process`` is the training process itself (one per rank), ``loop`` its trainer, with ``loader``,
``distributed``, ``checkpoint`` (+ ``state``, ``staging``), ``telemetry``, ``faults`` and ``metrics`` (rank 0's
MLflow sink) around it; ``model``, ``objectives`` and ``artifact`` (the bundle: weights + preprocessing) are
what it trains and writes; ``result`` holds the records it hands on (``TrainingResult``, ``Candidate``).
"""
