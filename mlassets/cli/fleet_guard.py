"""``mlassets fleet lease-guard -- COMMAND``: in a pod, the command under the lease the scheduler granted
(``mlassets.core.fleet.lease_guard``)."""

from __future__ import annotations

import argparse


def cmd_lease_guard(args: argparse.Namespace) -> int:
    """The command after ``--`` under the lease, in a pod (``mlassets.core.fleet.lease_guard``)."""
    import math

    from mlassets.core.config import ConfigError
    from mlassets.core.fleet.config import Lease
    from mlassets.core.fleet.lease_guard import guard

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise ConfigError("lease-guard: no command after --")
    lease = Lease(seconds=args.lease_seconds, heartbeat_s=args.heartbeat_seconds, startup_s=args.startup_seconds)
    if not all(map(math.isfinite, (lease.seconds, lease.startup_s))) or not 0 < lease.heartbeat_s < lease.seconds:
        raise ConfigError(f"--heartbeat-seconds {lease.heartbeat_s:g} must be > 0 and below --lease-seconds "
                          f"{lease.seconds:g}, both finite with --startup-seconds {lease.startup_s:g}")
    return guard(command, lease, args.lease_db, args.job)
