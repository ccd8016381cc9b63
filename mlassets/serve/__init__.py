"""Serving: the champion loaded only as its record allows (``load``), behind an endpoint (``mlassets serve``).

The names below are imported when first asked for, so the ``mlassets`` command can register ``serve`` without
loading MLflow, pandas or torch (``tests/cli/test_startup.py``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlassets.serve.load import (
        NoChampion,
        PredictionSet,
        ServedModel,
        ServingError,
        load_champion,
        load_version,
        write_predictions,
    )

__all__ = ["NoChampion", "PredictionSet", "ServedModel", "ServingError", "load_champion", "load_version",
           "write_predictions"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("mlassets.serve.load"), name)
    raise AttributeError(f"module 'mlassets.serve' has no attribute {name!r}")
