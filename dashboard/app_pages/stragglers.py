"""Stragglers: per-rank step time distributions, the rank that stands out, and what it costs the others: for a
recorded training run, or the source's straggler example (what a one-rank run cannot show)."""

import plotly.express as px
import streamlit as st

from dashboard import data
from dashboard.app_pages.common import loading, pick_run
from mlassets.core.diagnose.examples import SENTENCES
from mlassets.core.diagnose.report import Diagnosis

SOURCES = ("A recorded training run", "The source's straggler example")


def show(d: Diagnosis, key: str) -> None:
    """The verdict on the ranks, their distributions and their medians."""
    s = d.verdict.straggler
    if s is None:
        st.subheader("No straggler: no rank's own work stands out", anchor=f"straggler-{key}")
    else:
        st.subheader(f"Straggler: rank {s.rank}, {s.cause}", anchor=f"straggler-{key}")
        st.markdown(s.sentence())
    rows = d.steps.frame
    rows = rows.iloc[::-(-len(rows) // 200_000)]  # evenly spaced steps: a box plot needs no more
    steady = rows[~rows["warmup"]].assign(busy=lambda f: f["t_step"] - f["t_sync"])
    steady = steady.assign(rank=steady["rank"].astype(str))
    long = steady.melt(id_vars="rank", value_vars=["t_step", "busy", "t_data_wait", "t_compute", "t_sync"],
                       var_name="time", value_name="ms")
    st.plotly_chart(px.box(long, x="rank", y="ms", color="time", points=False,
                           title="Per-rank distributions (ms): step, own work (step less sync), parts"),
                    key=f"distributions-{key}")
    table = d.summary[["median_step", "p90_step", "median_busy", "median_t_data_wait", "median_t_compute",
                       "median_t_sync"]].round(2)
    st.dataframe(table, key=f"medians-{key}")


def example() -> None:
    st.markdown(f"> {SENTENCES['straggler']}")
    show(data.example_diagnosis("straggler"), "example")


st.title("Stragglers")
source = st.radio("Diagnose", SOURCES, horizontal=True, key="straggler-source")
if source == SOURCES[1]:
    example()
else:
    run = pick_run("stragglers")
    with loading("the run's telemetry"):
        d = data.diagnosis(run.telemetry_dir) if run else None
    if run and d is None:
        st.info("Nothing recorded yet: this run's telemetry has no rows.")
    if d is not None and d.ranks >= 2:
        show(d, "run")
    elif d is not None:
        st.subheader("One rank: nothing to compare", anchor="straggler")
        st.caption("A straggler needs two ranks or more: set `training.nproc: 2` (or more) in the dataset's config "
                   "to train on several ranks. Meanwhile, the source's worked example:")
        example()
