"""The fleet on Dagster: one room for what turns Dagster runs into fleet jobs. The rules themselves (who preempts
whom, when a lease lapses, when a run overruns) are ``mlassets.core.fleet.policy``, shared with ``mlassets fleet
serve``; these modules read Dagster's records into them and act the Dagster way.

- ``runs``: a run's job spec and stop tags (``mlassets/fleet.*``, ``mlassets/preempted``, ...), the run queue's
  per-team limits, the training step's lease environment and its failure when the fleet stopped it;
- ``admission``: admitting or refusing a run against the quota, the budget and the free GPUs;
- ``view``: the instance's runs as rows of ``mlassets fleet`` and the dashboard's fleet page;
- ``preemption``: the sensor (one per dataset) that preempts for an urgent run and requeues stopped runs;
- ``leases``: what that sensor does about lapsed leases and overruns.

The package is a stage of ``mlassets.defs.factory``: ``automation`` builds its sensor.
"""

from __future__ import annotations

from mlassets.defs.fleet.preemption import automation

__all__ = ["automation"]
