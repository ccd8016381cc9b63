"""``mlassets doctor``: per service, what is configured, whether it answers, and its version; never a secret.

Services: the Dagster instance's storage, MLflow tracking and registry, the artifact store, the versioned store,
the promotion log, and (when their URLs are set) the Dagster webserver and the dashboard. Every check has a
short timeout; exit code 1 when a configured service does not answer or the profile lacks a setting.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version as package_version
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from mlassets.cli.doctor_probes import TIMEOUT_S, database, http_get, mlflow_http, resolve_env
from mlassets.core import settings

OK, DOWN, UNSET = "reachable", "UNREACHABLE", "not configured"


@dataclass
class Report:
    service: str
    configured: str
    status: str = OK
    version: str = ""
    detail: str = ""


# ------------------------------------------------------------------ one check per service


def check_dagster(r: Report) -> None:
    from mlassets.core import paths

    home = settings.service_env(settings.DAGSTER_HOME_ENV) or str(paths.dagster_home())
    config_path = Path(home) / "dagster.yaml"
    config = (yaml.safe_load(config_path.read_text()) or {}) if config_path.is_file() else {}
    postgres = (config.get("storage") or {}).get("postgres")
    dagster = f"dagster {package_version('dagster')}"
    if postgres is None:
        r.configured, r.version = f"sqlite under {home}", f"sqlite {sqlite3.sqlite_version}; {dagster}"
        return
    from dagster_postgres.utils import pg_url_from_config

    url = pg_url_from_config(resolve_env(postgres))
    r.configured = settings.mask_url(url)
    r.version = f"{database(url, 'runs')}; {dagster}"


def check_tracking(r: Report) -> None:
    from mlassets.core import paths

    uri = paths.mlflow_tracking_uri()
    r.configured = settings.mask_url(uri)
    if uri.startswith(("http://", "https://")):
        mlflow_http(uri, "/health")
        r.version = "MLflow server " + mlflow_http(uri, "/version").decode().strip()
    else:
        r.version = f"{database(uri, 'experiments')}; mlflow {package_version('mlflow')}"


def check_registry(r: Report) -> None:
    from mlassets.core import paths

    uri = os.environ.get("MLFLOW_REGISTRY_URI") or paths.mlflow_tracking_uri()
    r.configured = settings.mask_url(uri)
    if uri.startswith(("http://", "https://")):
        mlflow_http(uri, "/api/2.0/mlflow/registered-models/search?max_results=1")
        r.version = "model registry API answers"
    else:
        r.version = database(uri, "registered_models")


def check_artifacts(r: Report) -> None:
    from mlassets.core import paths

    root = paths.mlflow_artifact_root()
    if not root:  # the MLflow server keeps artifacts: ask it to list the root of its artifact store
        uri = paths.mlflow_tracking_uri()
        r.configured = f"the MLflow server's ({settings.mask_url(uri)})"
        mlflow_http(uri, "/api/2.0/mlflow-artifacts/artifacts")
        r.version = "proxied by the MLflow server (mlflow-artifacts:/)"
    elif root.startswith("s3://"):
        import boto3
        from botocore.config import Config

        endpoint = os.environ.get("MLFLOW_S3_ENDPOINT_URL")
        r.configured = f"{root} (endpoint {endpoint or 'AWS'})"
        client = boto3.client("s3", endpoint_url=endpoint, config=Config(
            connect_timeout=TIMEOUT_S, read_timeout=TIMEOUT_S, retries={"max_attempts": 1}))
        headers = client.head_bucket(Bucket=urlsplit(root).netloc).get("ResponseMetadata", {}).get("HTTPHeaders", {})
        r.version = f"{headers.get('server', 'S3')}; boto3 {package_version('boto3')}"
    else:
        r.configured = root
        path = Path(urlsplit(root).path) if root.startswith("file:") else Path(root)
        existing = next(p for p in (path, *path.parents) if p.exists())
        if not os.access(existing, os.W_OK):
            raise OSError(f"{existing} is not writable")
        r.version = "local files"


def check_store(r: Report) -> None:
    from mlassets.core.data.store import default_backend

    if default_backend() != "lakefs":
        from mlassets.core.paths import store_root

        r.configured, r.version = f"local: {store_root()}", "mlassets local store"
        return
    from mlassets.core.data.store.lakefs_api import Settings

    for name in settings.LAKEFS_ENV:
        settings.service_env(name)
    lakefs = Settings.resolve()
    r.configured = f"lakeFS {settings.mask_url(lakefs.endpoint)} (key id {lakefs.access_key_id[:4]}…)"
    status, _ = http_get(lakefs.endpoint + "/healthcheck")
    if status not in (200, 204):
        raise OSError(f"GET /healthcheck answered HTTP {status}")
    r.version = f"lakeFS {lakefs.client().version}; sdk {package_version('lakefs')}"  # an authenticated call


def check_promotion(r: Report) -> None:
    from mlassets.core.registry.promotion import default_url

    url = default_url()
    r.configured = settings.mask_url(url)
    r.version = database(url, "promotions")


def _optional_http(variable: str, health: str, hint: str) -> Callable[[Report], None]:
    def check(r: Report) -> None:
        url = os.environ.get(variable, "")
        if not url:
            r.configured, r.status = f"{variable} not set ({hint})", UNSET
            return
        r.configured = settings.mask_url(url)
        status, body = http_get(url.rstrip("/") + health)
        if status != 200:
            raise OSError(f"GET {health} answered HTTP {status}")
        found = json.loads(body).get("dagster_webserver_version", "?") if health == "/server_info" else ""
        r.version = f"dagster-webserver {found}" if found else "answers"
    return check


CHECKS: list[tuple[str, Callable[[Report], None]]] = [
    ("Dagster instance", check_dagster),
    ("MLflow tracking", check_tracking),
    ("MLflow registry", check_registry),
    ("artifact store", check_artifacts),
    ("versioned store", check_store),
    ("promotion log", check_promotion),
    ("Dagster webserver", _optional_http("DAGSTER_WEBSERVER_URL", "/server_info", "mlassets ui: 127.0.0.1:3000")),
    ("dashboard", _optional_http(settings.DASHBOARD_ENV, "/_stcore/health", "mlassets ui: 127.0.0.1:8501")),
]


def run_checks(deadline_s: float = 4 * TIMEOUT_S) -> list[Report]:
    """Every check at once in daemon threads; one that has not answered by the deadline is unreachable."""
    reports = [Report(name, "") for name, _ in CHECKS]

    def run(r: Report, check: Callable[[Report], None]) -> None:
        try:
            check(r)
        except settings.SettingsError:
            r.status, r.detail = UNSET, "a setting is missing (see 'problem' below)"
        except Exception as exc:  # noqa: BLE001 - any failure is what the report is for
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            r.status, r.detail = DOWN, f"{type(exc).__name__}: {first}"

    threads = [threading.Thread(target=run, args=(r, check), daemon=True)
               for r, (_, check) in zip(reports, CHECKS, strict=True)]
    for thread in threads:
        thread.start()
    end = time.monotonic() + deadline_s
    for r, thread in zip(reports, threads, strict=True):
        thread.join(max(0.0, end - time.monotonic()))
        if thread.is_alive():
            r.status, r.detail = DOWN, f"no answer within {deadline_s:g} s"
    return reports


def format_reports(profile: str, reports: list[Report], problems: list[str]) -> str:
    """The table, with every secret value masked (``settings.redact``)."""
    rows = [("service", "configured", "status", "version / detail")]
    rows += [(r.service, r.configured or "-", r.status, r.detail or r.version) for r in reports]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"mlassets doctor: profile {profile} ({settings.PROFILE_ENV})", ""]
    lines += [("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[3]).rstrip()
              for row in rows]
    lines += [""] + [f"problem: {p}" for p in problems]
    return settings.redact("\n".join(lines).rstrip() + "\n")


def cmd_doctor(args: argparse.Namespace) -> int:
    profile = settings.profile()
    problems = settings.problems()
    reports = run_checks()
    print(format_reports(profile, reports, problems), end="")
    return 1 if problems or any(r.status == DOWN for r in reports) else 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    doctor = sub.add_parser("doctor", help="which services are configured, whether they answer, their versions")
    doctor.set_defaults(func=cmd_doctor)
