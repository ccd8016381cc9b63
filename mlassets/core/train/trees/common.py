"""What both boosted-trees libraries share: the input matrix, labels, per-chunk seeds, the checkpoint cadence."""

from __future__ import annotations

import hashlib

import numpy as np

from mlassets.core.config import PipelineConfig

ROUNDS_PER_CHECKPOINT = 100  # training.checkpoint_every_steps: 0 (the default) means this many rounds


def matrix(x_cat: np.ndarray, x_num: np.ndarray) -> np.ndarray:
    """One float64 matrix: the category codes first (exact as floats; the libraries' categorical columns), then the
    standardized numerics."""
    return np.hstack([np.asarray(x_cat, dtype=np.float64), np.asarray(x_num, dtype=np.float64)])


def label(y: np.ndarray) -> np.ndarray:
    return np.asarray(y, dtype=np.float64)


def chunk_seed(seed: int, chunk: int) -> int:
    """The sampling seed of one chunk of rounds: the same for the same (seed, chunk) in every run."""
    digest = hashlib.sha256(f"mlassets-trees/{seed}/{chunk}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def rounds_per_checkpoint(cfg: PipelineConfig) -> int:
    """Rounds per chunk (and checkpoint): ``training.checkpoint_every_steps``, else ``ROUNDS_PER_CHECKPOINT``."""
    return cfg.training.checkpoint_every_steps or ROUNDS_PER_CHECKPOINT
