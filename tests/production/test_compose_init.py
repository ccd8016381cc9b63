"""infra/postgres/init-databases.sh, run as the postgres image runs it (psql as $POSTGRES_USER), on a fresh real
PostgreSQL: it creates every database that docker-compose.yaml's services connect to.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.infra.conftest import INFRA
from tests.production import postgres as pg


def test_the_init_script_creates_every_database_the_stack_connects_to() -> None:
    try:
        server = pg.start()
    except pg.Unavailable as exc:
        pytest.skip(f"PostgreSQL: {exc}")
    try:
        env = {**os.environ, "POSTGRES_USER": server.user, "PGHOST": server.host, "PGPORT": str(server.port),
               "PGPASSWORD": server.password, "PATH": f"{server.bindir}:{os.environ['PATH']}"}
        script = INFRA / "postgres" / "init-databases.sh"
        done = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT datname FROM pg_database")
            created = {row[0] for row in cur.fetchall()}
        compose = (INFRA / "docker-compose.yaml").read_text()
        used = set(re.findall(r"@postgres:5432/(\w+)", compose)) | {"dagster"}  # DAGSTER_PG_DB: dagster
        assert used == {"dagster", "mlflow", "mlflow_auth", "lakefs", "mlassets"} and used <= created
        assert subprocess.run(["sh", str(script)], env=env, capture_output=True, timeout=120).returncode != 0
    finally:
        server.stop()
