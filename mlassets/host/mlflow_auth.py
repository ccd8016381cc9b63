"""MLflow's server with its own authentication (the ``basic-auth`` app): ``python -m mlassets.host.mlflow_auth ARGS``
is ``mlflow server --app-name basic-auth ARGS`` with the auth config file written from the environment first.

``MLFLOW_AUTH_DATABASE_URI`` is where MLflow keeps its users and permissions (a PostgreSQL URL in the stacks);
``MLFLOW_AUTH_ADMIN_USERNAME`` and ``MLFLOW_AUTH_ADMIN_PASSWORD`` (read by MLflow itself) make the platform's
service account, the first admin, on the first start; ``MLFLOW_FLASK_SERVER_SECRET_KEY`` signs its forms. Other
users get ``MLFLOW_AUTH_DEFAULT_PERMISSION`` (default ``READ``) until an admin grants more. The file is private
(0600) and holds no admin password.
"""

from __future__ import annotations

import os
import sys
import tempfile

REQUIRED = ("MLFLOW_AUTH_DATABASE_URI", "MLFLOW_AUTH_ADMIN_USERNAME", "MLFLOW_AUTH_ADMIN_PASSWORD",
            "MLFLOW_FLASK_SERVER_SECRET_KEY")


def auth_ini(database_uri: str, default_permission: str = "READ") -> str:
    """MLflow's auth config (read with configparser's interpolation, so ``%`` is doubled)."""
    return ("[mlflow]\n"
            f"default_permission = {default_permission}\n"
            f"database_uri = {database_uri.replace('%', '%%')}\n"
            "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n")


def main(argv: list[str] | None = None) -> None:
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    if missing:
        raise SystemExit(f"mlassets.host.mlflow_auth: set {', '.join(missing)} (MLflow's authentication needs them)")
    fd, path = tempfile.mkstemp(prefix="mlflow-auth-", suffix=".ini")  # 0600
    with os.fdopen(fd, "w") as out:
        out.write(auth_ini(os.environ["MLFLOW_AUTH_DATABASE_URI"],
                           os.environ.get("MLFLOW_AUTH_DEFAULT_PERMISSION", "READ")))
    os.environ["MLFLOW_AUTH_CONFIG_PATH"] = path
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    args = sys.argv[1:] if argv is None else argv
    os.execvp("mlflow", ["mlflow", "server", "--app-name", "basic-auth", *args])


if __name__ == "__main__":
    main()
