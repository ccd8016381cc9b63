"""How the dashboard writes times and run links: readable UTC minutes, and run ids shown short in a link."""

from __future__ import annotations

from datetime import UTC, datetime

# a LinkColumn's display_text: the first 8 characters of the id after ``/runs/`` (MLflow's and Dagster's run pages)
SHORT_RUN_ID = r"/runs/([0-9a-zA-Z]{8})"


def readable_time(moment: str | float | datetime | None) -> str:
    """``2026-12-07 14:03 UTC`` for an ISO 8601 string, epoch milliseconds (MLflow's timestamps) or a datetime; a
    string that is not a time (``(live)``, ``""``) comes back as it is."""
    if moment is None or moment == "":
        return ""
    if isinstance(moment, (int, float)):
        moment = datetime.fromtimestamp(moment / 1000, UTC)
    elif isinstance(moment, str):
        try:
            moment = datetime.fromisoformat(moment.strip())
        except ValueError:
            return moment
    if moment.tzinfo is None:  # the records write UTC
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
