"""infra/docker-compose.yaml against the Compose Specification's JSON schema (shipped by check-jsonschema), and the
stack's promises: the services, 127.0.0.1 only, UIs behind the authenticating proxy, no secret in the file, and an
environment the production profile accepts. Docker itself cannot run here: nothing is started.
"""

from __future__ import annotations

import importlib.resources
import json
import re

import crossplane
import jsonschema
import pytest

from mlassets.core import settings
from tests.infra.conftest import INFRA, load

SERVICES = {"postgres", "minio", "minio-buckets", "lakefs", "mlflow", "code-location", "dagster-webserver",
            "dagster-daemon", "dashboard", "auth-proxy"}
BEHIND_PROXY = {"dagster-webserver": 3000, "mlflow": 5000, "dashboard": 8501}
MLASSETS_SERVICES = {"code-location", "dagster-webserver", "dagster-daemon", "dashboard"}


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}`` (``$$`` is a literal ``$``)."""
    def one(match: re.Match) -> str:
        name, op, rest = match.group(1), match.group(2) or "", match.group(3) or ""
        if name in env and (env[name] or op != ":-"):
            return env[name]
        if op == ":?":
            raise KeyError(f"{name}: {rest}")
        return rest if op == ":-" else ""
    return re.sub(r"\$\{(\w+)(:[-?])?([^}]*)\}", one, value.replace("$$", "\0")).replace("\0", "$")


@pytest.fixture(scope="module")
def compose() -> dict:
    return load("docker-compose.yaml")


def test_the_file_follows_the_compose_specification(compose) -> None:
    schema_file = importlib.resources.files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json"
    validator = jsonschema.Draft202012Validator(json.loads(schema_file.read_text()))
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(compose)]
    assert not errors, errors
    bad = {**compose, "services": {"x": {"image": "y", "portz": []}}}
    assert list(validator.iter_errors(bad))  # the schema does reject what compose would


def test_every_service_is_there_and_every_image_is_pinned(compose) -> None:
    assert set(compose["services"]) == SERVICES
    for name, service in compose["services"].items():
        image = service["image"]
        assert ":" in image and not image.endswith(":latest"), f"{name}: {image}"
    mlassets = [n for n, s in compose["services"].items() if "build" in s]
    assert set(mlassets) == MLASSETS_SERVICES | {"mlflow"}  # one image, built from infra/Dockerfile
    assert all(compose["services"][n]["build"]["dockerfile"] == "infra/Dockerfile" for n in mlassets)


def test_the_host_sees_only_127_0_0_1_and_the_uis_only_through_the_authenticating_proxy(compose) -> None:
    published = {}
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
            published[int(str(port).split(":")[1])] = name
    assert not set(BEHIND_PROXY) & set(published.values())
    assert {published[p] for p in BEHIND_PROXY.values()} == {"auth-proxy"}
    conf = crossplane.parse(str(INFRA / "auth" / "nginx.conf"), check_ctx=True, check_args=True)
    assert conf["status"] == "ok", conf["errors"]
    http = next(d for d in conf["config"][0]["parsed"] if d["directive"] == "http")["block"]
    assert {d["directive"]: d["args"] for d in http if d["directive"].startswith("auth_basic")} == {
        "auth_basic": ["mlassets"], "auth_basic_user_file": ["/etc/nginx/htpasswd"]}
    routes = {}
    for server in (d["block"] for d in http if d["directive"] == "server"):
        listen = next(d["args"][0] for d in server if d["directive"] == "listen")
        off = any(d["directive"] == "auth_basic" and d["args"] == ["off"] for d in server)
        assert off == (listen == "5000"), listen  # MLflow alone: it authenticates every request itself
        location = next(d for d in server if d["directive"] == "location")["block"]
        routes[int(listen)] = next(d["args"][0] for d in location if d["directive"] == "proxy_pass")
    assert routes == {port: f"http://{name}:{port}" for name, port in BEHIND_PROXY.items()}


def test_mlflow_runs_its_own_authentication_with_the_platforms_service_account(compose) -> None:
    from mlassets.host.mlflow_auth import REQUIRED, auth_ini

    mlflow = compose["services"]["mlflow"]
    assert "python -m mlassets.host.mlflow_auth " in mlflow["command"]
    assert set(REQUIRED) <= set(_environment(mlflow))
    assert "mlflow_auth" in (INFRA / "postgres" / "init-databases.sh").read_text()
    shared = compose["x-mlassets-env"]  # every mlassets service and run signs in as the admin MLflow creates
    assert shared["MLFLOW_TRACKING_USERNAME"] == _environment(mlflow)["MLFLOW_AUTH_ADMIN_USERNAME"]
    assert shared["MLFLOW_TRACKING_PASSWORD"] == _environment(mlflow)["MLFLOW_AUTH_ADMIN_PASSWORD"]
    assert {"MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"} <= set(
        load("dagster.yaml")["run_launcher"]["config"]["env_vars"])
    import configparser

    parser = configparser.ConfigParser()
    parser.read_string(auth_ini("postgresql://u:p%40ss@db:5432/mlflow_auth"))
    assert parser["mlflow"]["database_uri"] == "postgresql://u:p%40ss@db:5432/mlflow_auth"  # % survives
    assert parser["mlflow"]["default_permission"] == "READ"


class _Placeholders(dict):
    """Every variable is set, to ``<NAME>``."""

    def __contains__(self, name: object) -> bool:
        return True

    def __missing__(self, name: str) -> str:
        return f"<{name}>"


def _environment(service: dict) -> dict[str, str]:
    env = service.get("environment", {})
    return dict(item.split("=", 1) for item in env) if isinstance(env, list) else env


def test_no_secret_is_written_in_the_file(compose) -> None:
    every_variable = _Placeholders()
    for name, service in compose["services"].items():
        for key, value in _environment(service).items():
            value = interpolate(str(value), every_variable)  # each ${VAR} becomes <VAR>
            if settings.is_secret_name(key) or settings.url_password(value):
                secret = settings.url_password(value) or value
                assert re.fullmatch(r"<\w+>", secret), f"{name}: {key} holds a literal secret"
    example = (INFRA / ".env.example").read_text()
    assert all(line.split("=", 1)[1] == "CHANGE_ME" for line in example.splitlines()
               if "=" in line and not line.startswith("#") and settings.is_secret_name(line.split("=", 1)[0]))


def test_the_mlassets_services_get_an_environment_the_production_profile_accepts(compose, monkeypatch, tmp_path):
    dotenv = {k: ("fake-" + k.lower() if v == "CHANGE_ME" else v) for k, v in (
        line.split("=", 1) for line in (INFRA / ".env.example").read_text().splitlines()
        if "=" in line and not line.startswith("#"))}
    home = tmp_path / "dagster-home"
    home.mkdir()
    (home / "dagster.yaml").write_text((INFRA / "dagster.yaml").read_text())
    forwarded = set(load("dagster.yaml")["run_launcher"]["config"]["env_vars"])
    for name in MLASSETS_SERVICES:
        env = {k: interpolate(str(v), dotenv) for k, v in _environment(compose["services"][name]).items()}
        assert env["MLASSETS_PROFILE"] == "production" and forwarded <= set(env), name
        for key in list(env) + ["MLASSETS_ARTIFACT_ROOT", "MLFLOW_TRACKING_URI"]:
            monkeypatch.delenv(key, raising=False)
        for key, value in {**env, "DAGSTER_HOME": str(home)}.items():
            monkeypatch.setenv(key, value)
        assert settings.problems() == [], name
    with pytest.raises(KeyError, match="POSTGRES_PASSWORD"):  # compose refuses to start without the secret
        interpolate(compose["x-mlassets-env"]["DAGSTER_PG_PASSWORD"], {})
