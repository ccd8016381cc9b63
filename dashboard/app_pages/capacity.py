"""Capacity planner: the workload of the system-design source -> the components needed and the flags."""

import dataclasses

import pandas as pd
import streamlit as st

from mlassets.core.diagnose.capacity import LABELS, Assumptions, Workload, assumption_fields, plan

st.title("Capacity planner")
a, b, c = st.columns(3)
w = Workload(
    jobs_per_day=a.number_input("Training jobs / day", 0.0, 1e6, 2.0, key="jobs"),
    dataset_gb=b.number_input("Dataset size (GB)", 0.0, 1e7, 5.0, key="gb"),
    cluster_gpus=int(c.number_input("Cluster GPUs", 1, 100000, 1, key="gpus")),
    experiments=int(a.number_input("Experiments tracked", 0, 10**8, 10, key="experiments")),
    model_params=b.number_input("Model size (parameters)", 1.0, 1e13, 5e6, format="%.3g", key="params"),
    pipeline_stages=int(c.number_input("Pipeline stages", 1, 50, 1, key="stages")),
    versions_per_month=a.number_input("Dataset versions / month", 0.0, 1e5, 1.0, key="versions"),
    data_parallel=b.toggle("Data-parallel distributed training", key="dp"),
    automated_retraining=c.toggle("Automated retraining + CI/CD", key="auto"),
)
with st.expander("Assumptions (the source's teaching thresholds; edit them)"):
    defaults = Assumptions()
    values = {name: st.number_input(f"Assumption: {LABELS[name]}", value=getattr(defaults, name), key=f"a-{name}")
              for name in assumption_fields()}
    assumptions = dataclasses.replace(defaults, **{k: type(getattr(defaults, k))(v) for k, v in values.items()})
p = plan(w, assumptions)
st.subheader("Flags", anchor="flags")
for flag in p.flags:
    st.warning(flag)
if not p.flags:
    st.success("No flags: one host and one GPU's memory suffice under these assumptions.")
st.subheader("Components")
st.dataframe(pd.DataFrame([{"component": x.name, "needed": x.needed, "why": x.why, "in mlassets": x.here}
                           for x in p.components]), hide_index=True, key="components")
st.subheader("Bottlenecks to plan for")
st.markdown("\n".join(f"- {x}" for x in p.bottlenecks) or "None at this workload.")
