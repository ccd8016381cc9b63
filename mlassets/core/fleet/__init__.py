"""A shared GPU fleet: job specs, ``fleet.yaml``, admission at submit, leases renewed by heartbeat, priorities and
preemption that loses no work (SIGTERM -> full-state checkpoint -> requeue). Pure Python: no dagster import."""
