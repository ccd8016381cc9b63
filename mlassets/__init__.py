"""mlassets: an ML training platform built as a Dagster asset graph."""

import os

# MLflow phones home unless told not to; a training platform should not.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

__version__ = "0.1.0"
