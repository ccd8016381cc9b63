"""Serving: the champion loaded only as its record allows (``load``), behind an endpoint (``mlassets serve``)."""

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
