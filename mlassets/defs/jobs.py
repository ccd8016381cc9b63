"""Names of each dataset's jobs (the factory builds them; sensors, schedules and the CLI start them)."""

from __future__ import annotations

from mlassets.core.config import PipelineConfig


def ingest_job_name(cfg: PipelineConfig) -> str:
    return f"{cfg.dataset.name}_ingest"


def pipeline_job_name(cfg: PipelineConfig) -> str:
    return f"{cfg.dataset.name}_pipeline"


def monitor_job_name(cfg: PipelineConfig) -> str:
    """Snapshot and drift report only: what a new commit runs when ``automation.on_new_data`` is off."""
    return f"{cfg.dataset.name}_monitor"


def dataset_of_job(job_name: str, datasets: list[str]) -> str | None:
    """The dataset a job belongs to (the longest dataset name that prefixes it), or None."""
    matches = [d for d in datasets if job_name.startswith(f"{d}_")]
    return max(matches, key=len) if matches else None


TRIGGER_TAG = "mlassets/trigger"  # what started a run: new_data, landing, schedule, drift (absent: a person)
RETRAIN_TAG = "mlassets/retrain"  # full or warm_start (a scheduled retrain's policy)
DELIVERY_TAG = "mlassets/delivery"  # the landing file or folder an ingest run reads
DELIVERY_SHA_TAG = "mlassets/delivery_sha256"  # its fingerprint when the landing sensor found it whole
SERIAL_TAG = "mlassets/serial"  # the daemon runs a dataset's automated pipeline runs one at a time, in order
STOPPED_TAG = "mlassets/stopped"  # why a run trained nothing on purpose (over training.budget_hours): not a failure
FORCE_TAG = "mlassets/force"  # "budget": train even when the expected cost is over training.budget_hours
