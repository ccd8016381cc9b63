"""What a failed run tells its owners: one line always (a JSON line in the alerts log), and a webhook POST
when ``$MLASSETS_ALERT_WEBHOOK`` names one. The webhook URL is a credential: it is never logged or stored."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

WEBHOOK_ENV = "MLASSETS_ALERT_WEBHOOK"


@dataclass(frozen=True)
class Alert:
    job: str
    run_id: str
    partition: str
    step: str  # the step that failed, or the check that stopped the run
    reason: str
    owners: list[str]
    run_url: str = ""
    tags: dict[str, str] = field(default_factory=dict)  # what started the run (trigger, delivery, reason)
    at: float = field(default_factory=time.time)

    def line(self) -> str:
        where = f" partition {self.partition}" if self.partition else ""
        started = f" (started by {self.tags['mlassets/trigger']})" if "mlassets/trigger" in self.tags else ""
        delivery = f" delivery {self.tags['mlassets/delivery']}:" if "mlassets/delivery" in self.tags else ""
        return (f"run {self.run_id[:8]} of {self.job}{where}{started} failed at {self.step}:{delivery} "
                f"{self.reason} -> {', '.join(self.owners)}")


def record(alert: Alert, log_path: str | Path) -> None:
    """Append the alert to the alerts log (JSON lines), the line that is always written."""
    path = Path(log_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(json.dumps({**asdict(alert), "text": alert.line()}, sort_keys=True) + "\n")


def post(alert: Alert, url: str | None = None, timeout_s: float = 5.0) -> str:
    """POST the alert as JSON to the webhook; '' when delivered or none is configured, else why not (the URL is
    never part of the answer)."""
    url = url if url is not None else os.environ.get(WEBHOOK_ENV, "")
    if not url:
        return ""
    if not url.startswith(("http://", "https://")):
        return f"${WEBHOOK_ENV} is not an http(s) URL; alert not sent"
    body = json.dumps({"text": alert.line(), **asdict(alert)}).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - scheme checked above
            return "" if 200 <= response.status < 300 else f"webhook answered {response.status}"
    except urllib.error.HTTPError as exc:
        return f"webhook answered {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"webhook not reachable ({type(reason).__name__})"
