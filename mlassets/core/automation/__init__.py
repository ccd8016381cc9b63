"""What the Dagster daemon's sensors and schedules decide, without Dagster: new commits of a watched branch,
deliveries in a landing folder, the retrain policy of a scheduled run, and the alert a failed run sends."""
