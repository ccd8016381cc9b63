"""Every environment variable mlassets reads or sets, in one table: ``docs/reference/environment.md`` is rendered
from it, and ``tests/docs/test_env_vars.py`` fails when the code names an ``MLASSETS_*`` variable this table lacks
(or the table names one nothing uses). The code that reads a variable keeps its own constant; this is its
documentation."""

from __future__ import annotations

from dataclasses import dataclass

SETTING, PRODUCTION, INTERNAL, BENCH = "setting", "production", "internal", "bench"
KINDS = {SETTING: "Settings (either profile)", PRODUCTION: "Services (the production profile)",
         INTERNAL: "Set by mlassets for its own processes", BENCH: "Benchmarks (python -m bench)"}


@dataclass(frozen=True)
class Variable:
    name: str
    kind: str
    default: str  # what applies when it is unset ("" when nothing does)
    meaning: str


VARIABLES: tuple[Variable, ...] = (
    Variable("MLASSETS_HOME", SETTING, "`.mlassets` in the working folder",
             "The embedded stack's folder: Dagster instance, MLflow, store, records, promotion log, traces."),
    Variable("MLASSETS_PROFILE", SETTING, "`embedded`",
             "`embedded` keeps everything under `$MLASSETS_HOME`; `production` takes every service from the "
             "environment, never falls back to a local file, and names every missing variable at start."),
    Variable("MLASSETS_CONFIGS", SETTING, "the configs the CLI registered in `$MLASSETS_HOME/configs`",
             "Dataset configs the code location builds graphs from: files or folders of `*.yaml`, separated by `:`."),
    Variable("MLASSETS_STORE", SETTING, "`local` (embedded), `lakefs` (production)", "The versioned store's backend."),
    Variable("MLASSETS_UI_URLS", SETTING, "`$MLASSETS_HOME/ui.json`, else 127.0.0.1:3000, :5000 and :8501",
             "Where people open the UIs, `dagster=URL,mlflow=URL,dashboard=URL`: every link between them is made "
             "from it."),
    Variable("MLASSETS_DASHBOARD_PORT", SETTING, "`8501`", "The dashboard's port under `mlassets ui`; 0 skips it."),
    Variable("MLASSETS_ALERT_WEBHOOK", SETTING, "",
             "A URL that gets a JSON POST for every failed run (never logged); the alerts log is written either way."),
    Variable("MLASSETS_USER", SETTING, "the OS user", "The name a promotion, rollback or online test is recorded "
             "under in the promotion log while no access file exists (with one, the process's uid decides)."),
    Variable("MLASSETS_ACCESS", SETTING, "`access.yaml` beside `$MLASSETS_FLEET`, else in `$MLASSETS_HOME`",
             "Who may do what: platform admins, each team's owners and members. The file switches the checks on; "
             "named here, it must exist."),
    Variable("MLASSETS_TOKENS", SETTING, "`$MLASSETS_HOME/tokens.json`",
             "The endpoint's bearer tokens, stored hashed with their scopes (`mlassets token issue|rotate|revoke`)."),
    Variable("MLASSETS_FLEET", SETTING, "the shipped `mlassets/configs/fleet/fleet.yaml`",
             "The GPU fleet: pools, teams, quotas, budgets, priority classes, the lease."),
    Variable("MLASSETS_TRAINING_NODE", SETTING, "this machine (embedded); nothing checked (production)",
             "The node configs' ranks are checked against, `cpus=64,gpus=8`; `any`: no check."),
    Variable("MLASSETS_OPTUNA_STORAGE", SETTING, "sqlite `$MLASSETS_HOME/optuna.db`",
             "Where tuning studies persist: any SQLAlchemy URL (`tuning.storage` wins when set)."),
    Variable("MLASSETS_RECORDS", SETTING, "`$MLASSETS_HOME/records`",
             "Where the typed records the assets hand on are kept (JSON)."),
    Variable("MLASSETS_RUN_MONITOR_S", SETTING, "`5`",
             "How often the run monitor checks that every run in progress still has its process."),
    Variable("MLASSETS_RUN_RETRIES", SETTING, "`2`", "Retries of a run whose worker died on its own."),
    Variable("MLASSETS_RUN_START_TIMEOUT_S", SETTING, "`180`", "A run worker that never starts is failed after this."),
    Variable("MLASSETS_GPU_SLOTS", SETTING, "`1`",
             "Compose and Kubernetes: the slots of the `gpu` concurrency pool, set by the daemon's container at "
             "start (the embedded instance sizes it from `automation.gpu_slots`)."),
    Variable("MLASSETS_IMAGE", SETTING, "", "Compose (`infra/.env`): the image every mlassets service and run uses."),
    Variable("MLASSETS_IMAGE_DIGEST", SETTING, "",
             "The digest of the image training runs in: every registry record names it beside the git sha."),
    Variable("MLASSETS_FEATURE_DELAY_MS", SETTING, "`0`",
             "`mlassets serve`: milliseconds added to every feature lookup (a slow features store, for tests and "
             "drills); between 0 and 60000, else it is refused, naming it."),
    Variable("MLASSETS_GIT_SHA", SETTING, "the checkout's commit",
             "The commit of the running code where there is no `.git` (an image; `infra/Dockerfile` sets it)."),
    Variable("OTEL_EXPORTER_OTLP_ENDPOINT", SETTING, "",
             "The OpenTelemetry SDK's variable: `mlassets serve` also sends its spans to this OTLP/HTTP collector."),
    Variable("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", SETTING, "", "The same, for traces only."),
    Variable("DAGSTER_HOME", PRODUCTION, "`$MLASSETS_HOME/dagster` (sqlite, written for you)",
             "Production: a folder holding a `dagster.yaml` with PostgreSQL storage (`infra/dagster.yaml`); "
             "mlassets never writes there."),
    Variable("DAGSTER_PG_HOST", PRODUCTION, "", "The shipped `infra/dagster.yaml`: Dagster's PostgreSQL host ..."),
    Variable("DAGSTER_PG_PORT", PRODUCTION, "", "... its port ..."),
    Variable("DAGSTER_PG_DB", PRODUCTION, "", "... its database ..."),
    Variable("DAGSTER_PG_USER", PRODUCTION, "", "... its user ..."),
    Variable("DAGSTER_PG_PASSWORD", PRODUCTION, "", "... and its password (never logged)."),
    Variable("MLFLOW_TRACKING_URI", PRODUCTION, "`sqlite:///$MLASSETS_HOME/mlflow.db`",
             "Production: an MLflow server (`http://mlflow:5000`) or a database URL (`postgresql://…`)."),
    Variable("MLFLOW_REGISTRY_URI", PRODUCTION, "the tracking URI", "MLflow's own: a registry apart from tracking."),
    Variable("MLASSETS_ARTIFACT_ROOT", PRODUCTION, "`$MLASSETS_HOME/mlartifacts`",
             "With a database tracking URI: where new experiments keep artifacts (`s3://bucket/path`); with a "
             "server: unset (the server keeps them)."),
    Variable("MLFLOW_S3_ENDPOINT_URL", PRODUCTION, "", "MLflow's own: an S3-compatible endpoint (MinIO)."),
    Variable("MLFLOW_TRACKING_USERNAME", PRODUCTION, "",
             "MLflow's own: the login of an MLflow server behind authentication (with `MLFLOW_TRACKING_PASSWORD`)."),
    Variable("MLFLOW_TRACKING_PASSWORD", PRODUCTION, "", "The password of that login (never printed)."),
    Variable("MLFLOW_TRACKING_TOKEN", PRODUCTION, "", "MLflow's own: a bearer token instead of a login."),
    Variable("MLASSETS_PROMOTION_DB", PRODUCTION, "`sqlite:///$MLASSETS_HOME/promotions.db`",
             "The promotion log and registration history: any SQLAlchemy URL (`postgresql://…`)."),
    Variable("LAKECTL_SERVER_ENDPOINT_URL", PRODUCTION, "", "lakeFS (the SDK's variable): its URL, ending in "
             "`/api/v1`."),
    Variable("LAKECTL_CREDENTIALS_ACCESS_KEY_ID", PRODUCTION, "", "lakeFS: the access key id."),
    Variable("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", PRODUCTION, "", "lakeFS: the secret key (never logged)."),
    Variable("MLASSETS_LAKEFS_NAMESPACE", PRODUCTION, "`s3://lakefs/{repo}`",
             "Where new lakeFS repositories keep their objects."),
    Variable("DAGSTER_WEBSERVER_URL", PRODUCTION, "", "A running Dagster webserver for `mlassets doctor` to check."),
    Variable("MLASSETS_DASHBOARD_URL", PRODUCTION, "", "A running dashboard for `mlassets doctor` to check."),
    Variable("MLASSETS_MLFLOW_URL", INTERNAL, "", "The MLflow UI's address, handed by `mlassets ui` to the "
             "dashboard."),
    Variable("MLASSETS_MLFLOW_LANDING", INTERNAL, "",
             "The route the MLflow UI opens bare (`mlassets ui` sets the experiment's training runs)."),
    Variable("MLASSETS_DAEMON_TOKEN", INTERNAL, "",
             "Carried by every process of a daemon tree, so the reaper finds them all."),
    Variable("MLASSETS_DAEMON_HOME", INTERNAL, "",
             "The Dagster home a daemon tree serves (leftovers are found by it)."),
    Variable("MLASSETS_PREEMPTIBLE", INTERNAL, "",
             "`1`: a training process treats SIGINT like SIGTERM (checkpoint, exit 76): a preemptible run."),
    Variable("MLASSETS_FLEET_DB", INTERNAL, "", "The lease table a fleet-launched training process heartbeats to."),
    Variable("MLASSETS_FLEET_JOB", INTERNAL, "", "The fleet job a training process renews the lease of."),
    Variable("MLASSETS_FLEET_HEARTBEAT_S", INTERNAL, "", "How often that process heartbeats."),
    Variable("MLASSETS_TRAIN_JOB", INTERNAL, "",
             "A Kueue training pod's job file (the rendered TrainJob or PyTorchJob)."),
    Variable("MLFLOW_DISABLE_TELEMETRY", INTERNAL, "", "Set to `true` for the MLflow server and clients mlassets "
             "starts."),
    Variable("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", INTERNAL, "", "Turned off: no progress bars in command output."),
    Variable("MLFLOW_LOGGING_LEVEL", INTERNAL, "`WARNING` for `mlassets` commands",
             "MLflow's log level; the commands keep MLflow's INFO lines out of their output."),
    Variable("MLASSETS_BENCH_RESULTS", BENCH, "`bench/results/`",
             "Where a measuring run stores its rows (JSON, with the machine) and its table, and where "
             "`python -m bench compare` and the Benchmarks page read them."),
    Variable("MLASSETS_BENCH_SCALE_ROWS", BENCH, "`1250000,5000000`",
             "`scale_memory`, `scale_time` and `scale_run_memory`: the small and large sizes in rows."),
    Variable("MLASSETS_BENCH_INGEST_ROWS", BENCH, "`50000000`", "`ingest_overhead`: rows of the 12 partitions."),
)
