"""Checkpoints: a run's state written so that resuming from it continues the run exactly.

``files`` is the on-disk rule every checkpoint follows (written under ``.tmp-step-N/``, published with a sha256
manifest; torch-free, so the orchestrator verifies checkpoints before committing them); ``manager`` writes and finds
the torch run's checkpoints (sharded DCP tensors and JSON, async through ``staging``) over the objects whose state
``state`` saves and loads; ``trees`` holds the boosted trees' checkpoints.
"""
