"""How a user's own Python (a notebook, a script) reaches the registry of an mlassets home: the variables MLflow
reads, for ``mlassets env`` to print and ``mlassets.use_home()`` to set.

Without them ``mlflow.pyfunc.load_model("models:/flights_arr_delay@champion")`` asks MLflow's default store (a new
``./mlflow.db``) and says the model is not found. The embedded home's store is ``sqlite:///<home>/mlflow.db``;
in production the deployment's ``MLFLOW_TRACKING_URI`` is used as it is.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from urllib.parse import urlsplit

from mlassets.core import settings

HOME_ENV = "MLASSETS_HOME"


class NoHome(FileNotFoundError):
    """The home named (or found) holds no MLflow store yet."""


def home_path(home: str | os.PathLike[str] | None = None) -> Path:
    """``home``, else ``$MLASSETS_HOME``, else ``./.mlassets``, resolved (nothing is created)."""
    return Path(home or os.environ.get(HOME_ENV) or Path.cwd() / ".mlassets").resolve()


def user_env(home: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The variables that point MLflow (and mlassets) at the home's registry. ``NoHome`` when an embedded home has
    no store yet (``mlassets demo`` or a pipeline run makes one)."""
    if settings.production():  # the deployment's server (unset: a SettingsError naming what is missing)
        return {settings.TRACKING_ENV: settings.service_env(settings.TRACKING_ENV) or ""}
    root = home_path(home)
    db = root / "mlflow.db"
    if not db.is_file():
        raise NoHome(f"{HOME_ENV}: {str(root)!r} holds no MLflow store ({db.name} is missing); run `mlassets demo` "
                     f"there first, or name the home (mlassets env --home DIR, mlassets.use_home(DIR))")
    uri = f"sqlite:///{db}"
    return {HOME_ENV: str(root), settings.TRACKING_ENV: uri, "MLFLOW_REGISTRY_URI": uri}


def exports(env: dict[str, str]) -> str:
    """``export NAME=value`` lines, quoted for a POSIX shell (``eval "$(mlassets env)"``); an address that holds a
    password is not printed (a comment says it is set already)."""
    return "\n".join(f"# {name} is set already (it holds a password: not printed)" if urlsplit(value).password
                     else f"export {name}={shlex.quote(value)}" for name, value in env.items())


def use_home(home: str | os.PathLike[str] | None = None) -> str:
    """Point this process (and what it starts) at the home's registry: sets the variables of ``user_env`` and
    MLflow's tracking and registry addresses; returns the tracking URI."""
    import mlflow

    env = user_env(home)
    os.environ.update(env)
    uri = env[settings.TRACKING_ENV]
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(env.get("MLFLOW_REGISTRY_URI", uri))
    return uri
