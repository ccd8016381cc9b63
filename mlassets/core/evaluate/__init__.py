"""Stage 5, evaluate: the candidate and the champion measured once on the same holdout, then judged.

``score`` runs both models (and times them); ``record`` is the ``Evaluation``: overall metrics (``metrics``,
``calibration``), a row per slice value with the main metric's change and its ``bootstrap`` interval, latency,
size and prediction sanity counts; ``gate`` applies the configured ``gate_rules`` to that record alone and lists
what it could not judge. A multiclass task's record is built by ``multiclass_record`` from each model's class
probabilities, with the metrics of ``multiclass`` and a row per class as well.
"""
