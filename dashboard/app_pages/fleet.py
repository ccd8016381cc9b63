"""The GPU fleet: the queue with positions and reasons, leases and their last heartbeat, GPUs per team against
quota, spend against budget, preemptions and the work each one lost (the same data as ``mlassets fleet``): the jobs
of ``mlassets fleet serve`` ("job 3") and the Dagster runs that carry a job spec ("dagster run 1a2b3c4d")."""

import pandas as pd
import streamlit as st

from dashboard import data
from dashboard.app_pages.common import loading

st.title("GPU fleet")
with loading("the fleet (its lease table and Dagster runs)"):
    found = data.fleet()
if found is None:
    st.info("Nothing recorded yet: submit a job with `mlassets fleet submit` and run `mlassets fleet serve`, or "
            "launch a pipeline run (`mlassets run`).")
    st.stop()
fleet, view = found


def _rows(rows: list[dict]) -> pd.DataFrame:
    """One row per job, named as `mlassets fleet` names it ("job 3", "dagster run 1a2b3c4d")."""
    return pd.DataFrame(rows).drop(columns="id").rename(columns={"ref": "job"})


st.subheader("GPUs and money per team")
st.dataframe(pd.DataFrame([{"team": t["team"], "GPUs in use": t["gpus_in_use"], "GPU quota": t["gpu_quota"],
                            f"spent ({fleet.currency})": t["spent"], f"reserved ({fleet.currency})": t["reserved"],
                            f"budget ({fleet.currency})": t["budget"]} for t in view.teams]),
             hide_index=True, key="fleet-teams")
st.subheader("Queue")
if view.queue:
    st.dataframe(_rows(view.queue), hide_index=True, key="fleet-queue")
else:
    st.markdown("No job waits.")
st.subheader("Leases")
if view.leases:
    st.dataframe(_rows(view.leases), hide_index=True, key="fleet-leases")
else:
    st.markdown("No job holds GPUs.")
st.subheader("Preemptions and lost leases")
if view.events:
    st.dataframe(pd.DataFrame([{"job": e["ref"], "what": e["kind"], "detail": e["detail"],
                                "steps lost": e["lost_steps"]} for e in view.events]), hide_index=True,
                 key="fleet-events")
else:
    st.markdown("None.")
st.subheader("Jobs")
st.dataframe(pd.DataFrame([{"job": j["ref"], "name": j["name"], "team": j["team"], "priority": j["priority"],
                            "GPUs": j["gpus"], "state": j["state"], "attempts": j["attempts"], "reason": j["reason"]}
                           for j in view.jobs]), hide_index=True, key="fleet-jobs")
