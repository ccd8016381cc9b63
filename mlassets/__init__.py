"""mlassets: an ML training platform built as a Dagster asset graph."""

import os

# MLflow phones home unless told not to; a training platform should not.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

__version__ = "0.1.0"


def use_home(home: str | os.PathLike[str] | None = None) -> str:
    """Point MLflow in this process at an mlassets home's registry (``home``, else ``$MLASSETS_HOME``, else
    ``./.mlassets``), so ``mlflow.pyfunc.load_model("models:/NAME@champion")`` finds the champion; returns the
    tracking URI. ``mlassets env`` prints the same as shell ``export`` lines."""
    from mlassets.core.home_env import use_home as use

    return use(home)


def tracking_uri(home: str | os.PathLike[str] | None = None) -> str:
    """The MLflow tracking URI of an mlassets home (see ``use_home``), without changing anything."""
    from mlassets.core import settings
    from mlassets.core.home_env import user_env

    return user_env(home)[settings.TRACKING_ENV]
