"""The fleet as text: the queue with positions and reasons, leases with their last heartbeat, GPUs per team against
quota, spend against budget, and the preemptions and lost leases with the work each lost (``mlassets fleet``). A job
of ``mlassets fleet serve`` is "job 3", a Dagster run "dagster run 1a2b3c4d" (its run id's first 8 characters)."""

from __future__ import annotations

from mlassets.core.fleet.admission import money
from mlassets.core.fleet.config import FleetConfig
from mlassets.core.fleet.service import FleetView


def format_view(v: FleetView, fleet: FleetConfig) -> str:
    lines = ["queue:"] + [f"  #{q['position']} {q['ref']} {q['name']} ({q['team']}, {q['priority']}, "
                          f"{q['gpus']} GPUs): {q['reason'] or 'next tick'}" for q in v.queue]
    if not v.queue:
        lines.append("  (empty)")
    lines.append("leases:")
    for lease in v.leases:
        beat = "no heartbeat yet" if lease["last_heartbeat_s"] is None else \
            f"last heartbeat {lease['last_heartbeat_s']:.1f} s ago from {lease['ranks_beating']} rank(s)"
        pool = f" of {lease['pool']}" if lease["pool"] else ""
        lines.append(f"  {lease['ref']} {lease['name']} ({lease['team']}): {lease['gpus']} GPUs{pool}, "
                     f"{lease['state']}, {beat}; step {lease['step']}, checkpoint at step {lease['checkpoint_step']}")
    if not v.leases:
        lines.append("  (none)")
    starting = [j for j in v.jobs if j["state"] == "starting"]
    if starting:
        lines.append("started, before training (no GPUs held):")
        lines += [f"  {j['ref']} {j['name']} ({j['team']}, {j['gpus']} GPUs once training)" for j in starting]
    lines.append("teams:")
    for t in v.teams:
        lines.append(f"  {t['team']}: {t['gpus_in_use']} of {t['gpu_quota']} GPUs; spent {money(fleet, t['spent'])}, "
                     f"reserved {money(fleet, t['reserved'])} of {money(fleet, t['budget'])}")
    lines.append("preemptions and lost leases:")
    for e in v.events:
        lost = f"lost {e['lost_steps']} steps" if isinstance(e["lost_steps"], int) else "steps lost unknown"
        lines.append(f"  {e['ref']}: {e['kind']} ({e['detail']}), {lost}")
    if not v.events:
        lines.append("  (none)")
    done = [j for j in v.jobs if j["state"] in ("done", "failed", "refused", "stopped", "canceled")]
    lines.append("finished:")
    for j in done:
        if j["state"] == "refused":  # the reason says it
            lines.append(f"  {j['ref']} {j['name']} ({j['team']}): {j['reason']}")
            continue
        lines.append(f"  {j['ref']} {j['name']} ({j['team']}): {j['state']}"
                     + (f" after {j['attempts']} attempt(s)" if j["attempts"] else "")
                     + (f": {j['reason']}" if j["reason"] else ""))
    if not done:
        lines.append("  (none)")
    return "\n".join(lines)
