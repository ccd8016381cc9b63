"""Scaling and cost: efficiency per doubling, projected speed-up, hours, GPU-hours and cost; spot vs on-demand."""

import dataclasses

import pandas as pd
import plotly.express as px
import streamlit as st

from dashboard import data
from mlassets.core.diagnose.cost import SOURCE_PRESET, CostInputs, project, source_table, spot_table

st.title("Scaling and cost")
measured = data.scaling_profile()
choices = ["Source table (DDP cost table)", "Measured on this machine (scaling_profile)"]
preset = st.radio("Preset", choices if measured else choices[:1], horizontal=True, key="preset")
base = SOURCE_PRESET
if measured is None:
    st.caption("No scaling_profile measured yet: materialize the `<dataset>/scaling_profile` asset (group ops) "
               "to fit the efficiency per doubling on this machine.")
elif preset == choices[1]:
    base = dataclasses.replace(SOURCE_PRESET, efficiency=round(measured["efficiency_per_doubling"], 3),
                               checkpoint_stall_s=round(measured["checkpoint_stall_s"], 3),
                               restart_s=round(measured["restart_s"], 2))
    st.markdown(f"Measured {measured['measured_at']} on {measured['machine']}: throughput "
                + ", ".join(f"{n} rank(s) {t:,.0f} samples/s" for n, t in measured["throughput"].items())
                + f" → efficiency {measured['efficiency_per_doubling']:.3f} per doubling.")
    if measured.get("dagster_run_url"):
        st.markdown(f"[Dagster run]({measured['dagster_run_url']})")

k = preset[:6]
a, b, c, d = st.columns(4)
efficiency = a.number_input("Efficiency kept per doubling", 0.05, 1.0, base.efficiency, 0.01, key=f"eff-{k}")
hours = b.number_input("Job hours on one GPU", 0.1, 100000.0, base.single_gpu_hours, key=f"hours-{k}")
price = c.number_input("Price per GPU-hour", 0.0, 100000.0, base.price_per_gpu_hour, key=f"price-{k}")
currency = d.text_input("Currency", base.currency, key=f"cur-{k}")
e, f, g, h, i = st.columns(5)
discount = e.number_input("Spot discount", 0.0, 0.99, base.spot_discount, 0.05, key=f"disc-{k}")
rate = f.number_input("Preemptions per GPU-hour", 0.0, 1.0, base.preemptions_per_gpu_hour, 0.005,
                      format="%.3f", key=f"rate-{k}")
interval = g.number_input("Checkpoint every (min)", 1.0, 1440.0, base.checkpoint_every_minutes, key=f"int-{k}")
stall = h.number_input("Checkpoint stall (s)", 0.0, 3600.0, base.checkpoint_stall_s, key=f"stall-{k}")
restart = i.number_input("Restart cost (s)", 0.0, 36000.0, base.restart_s, key=f"restart-{k}")

inputs = CostInputs(efficiency, hours, price, currency, discount, rate, interval, stall, restart)
rows = project(inputs)
st.caption(f"speed-up = GPUs × {efficiency:g}^log2(GPUs); {currency}{price:,.0f} per GPU-hour")
st.dataframe(pd.DataFrame(source_table(rows, currency)), hide_index=True, key="cost-table")
frame = pd.DataFrame([dataclasses.asdict(r) for r in rows]).assign(GPUs=lambda f: f["gpus"].astype(str))
st.plotly_chart(px.line(frame, x="GPUs", y=["speedup", "hours"], markers=True,
                        title="Speed-up and hours to finish"), key="speedup")
st.plotly_chart(px.bar(frame, x="GPUs", y=["cost", "spot_cost"], barmode="group",
                       title=f"Cost ({currency}): on-demand and spot"), key="cost")
st.subheader("On-demand versus spot")
st.caption(f"Spot at {1 - discount:.0%} of the price; each preemption costs the restart ({restart:g} s) and half a "
           f"checkpoint interval of lost work; every checkpoint stalls training {stall:g} s.")
st.dataframe(pd.DataFrame(spot_table(rows, currency)), hide_index=True, key="spot-table")
