"""Stragglers: per-rank step time distributions, the rank that stands out, and what it costs the others."""

import plotly.express as px
import streamlit as st

from dashboard import data
from dashboard.app_pages.common import pick_run

st.title("Stragglers")
run = pick_run("stragglers")
d = data.diagnosis(run.telemetry_dir) if run else None
if run and d is None:
    st.info("Nothing recorded yet: this run's telemetry has no rows.")
if d is not None:
    s = d.verdict.straggler
    if d.ranks < 2:
        st.subheader("One rank: nothing to compare", anchor="straggler")
    elif s is None:
        st.subheader("No straggler: no rank's own work stands out", anchor="straggler")
    else:
        st.subheader(f"Straggler: rank {s.rank}, {s.cause}", anchor="straggler")
        st.markdown(s.sentence())
    rows = d.steps.frame
    rows = rows.iloc[::-(-len(rows) // 200_000)]  # evenly spaced steps: a box plot needs no more
    steady = rows[~rows["warmup"]].assign(busy=lambda f: f["t_step"] - f["t_sync"])
    steady = steady.assign(rank=steady["rank"].astype(str))
    long = steady.melt(id_vars="rank", value_vars=["t_step", "busy", "t_data_wait", "t_compute", "t_sync"],
                       var_name="time", value_name="ms")
    st.plotly_chart(px.box(long, x="rank", y="ms", color="time", points=False,
                           title="Per-rank distributions (ms): step, own work (step less sync), parts"),
                    key="distributions")
    table = d.summary[["median_step", "p90_step", "median_busy", "median_t_data_wait", "median_t_compute",
                       "median_t_sync"]].round(2)
    st.dataframe(table, key="medians")
