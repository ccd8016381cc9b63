"""Bottlenecks: where the step time goes, the verdict, and what to do next: for a recorded training run, one of
the source's worked examples, or numbers of one's own."""

import plotly.express as px
import streamlit as st

from dashboard import data
from dashboard.app_pages.common import loading, pick_run
from mlassets.core.diagnose.examples import EXAMPLES, SENTENCES, StepNumbers
from mlassets.core.diagnose.steps import LABELS, TIMES

SOURCES = ("A recorded training run", "A worked example of the source", "My own numbers")


def own_numbers() -> StepNumbers:
    """One step, described by its parts in ms (every rank alike), and optionally one slower rank."""
    st.caption("One training step in milliseconds, as your logs or profiler show it; every rank alike unless one "
               "is slower. The ranks wait for the slowest in the gradient sync, as a synchronous job does.")
    cols = st.columns(6)
    ranks = cols[0].number_input("Ranks", 1, 4096, 8, key="own-ranks")
    data_wait = cols[1].number_input("Data wait", 0.0, 1e6, 20.0, key="own-data")
    compute = cols[2].number_input("Compute", 0.0, 1e6, 140.0, key="own-compute")
    sync = cols[3].number_input("Gradient sync", 0.0, 1e6, 5.0, key="own-sync")
    optimizer = cols[4].number_input("Optimizer", 0.0, 1e6, 15.0, key="own-optim")
    other = cols[5].number_input("Other", 0.0, 1e6, 0.0, key="own-other")
    slow = st.toggle("One rank is slower", value=ranks > 1, key="own-slow", disabled=ranks < 2)
    if not slow or ranks < 2:
        return StepNumbers(int(ranks), data_wait, compute, sync, optimizer, other)
    cols = st.columns(3)
    rank = cols[0].number_input("Slow rank", 0, int(ranks) - 1, min(3, int(ranks) - 1), key="own-slow-rank")
    slow_data = cols[1].number_input("Its data wait", 0.0, 1e6, 250.0, key="own-slow-data")
    slow_compute = cols[2].number_input("Its compute", 0.0, 1e6, 150.0, key="own-slow-compute")
    return StepNumbers(int(ranks), data_wait, compute, sync, optimizer, other, int(rank), slow_data, slow_compute)


st.title("Bottlenecks")
source = st.radio("Diagnose", SOURCES, horizontal=True, key="source")
run, d = None, None
if source == SOURCES[0]:
    run = pick_run("bottlenecks")
    with loading("the run's telemetry"):
        d = data.diagnosis(run.telemetry_dir) if run else None
    if run and d is None:
        st.info("Nothing recorded yet: this run's telemetry has no rows.")
elif source == SOURCES[1]:
    name = st.selectbox("Worked example", list(EXAMPLES), key="example", format_func=lambda n: SENTENCES[n])
    st.markdown(f"> {SENTENCES[name]}")
    d = data.example_diagnosis(name)
else:
    d = data.numbers_diagnosis(own_numbers())
if d is not None:
    v = d.verdict
    st.subheader(f"Verdict: {v.headline}", anchor="verdict")
    st.markdown(f"**Evidence:** {v.evidence}")
    for note in v.notes:
        st.markdown(f"**GPU:** {note}")
    st.markdown("**Next steps:**\n" + "\n".join(f"- {s}" for s in v.next_steps))

    series = data.step_series(d)
    long = series.melt(id_vars=["rank", "step"], value_vars=list(TIMES), var_name="part", value_name="ms")
    long["part"] = long["part"].map(LABELS)
    if run is not None:
        st.plotly_chart(px.area(long, x="step", y="ms", color="part", facet_row="rank",
                                title="Step time per rank over steps (ms)"), key="over-steps")
    shares = d.summary[list(TIMES)].reset_index().melt(id_vars="rank", var_name="part", value_name="ms")
    shares["part"] = shares["part"].map(LABELS)
    shares["rank"] = shares["rank"].astype(str)
    shares["percent"] = 100 * shares["ms"] / shares.groupby("rank")["ms"].transform("sum")
    st.plotly_chart(px.bar(shares, x="percent", y="rank", color="part", orientation="h",
                           title="Share of the step per rank (%)"), key="shares")
    named = {"t_step": "mean step", **{t: f"mean {LABELS[t]}" for t in TIMES}, "median_step": "median step",
             "p90_step": "p90 step"}  # the verdict reads the means; the step's median and p90 show its spread
    table = d.summary[["steps", "t_step", *TIMES, "median_step", "p90_step"]].rename(columns=named).round(2)
    st.caption("Per rank, ms per step over the steady steps (warm-up left out).")
    st.dataframe(table, key="per-rank")
    gpu = series.dropna(subset=["gpu_util"])
    if run is not None and gpu.empty:
        st.caption("GPU utilization and memory: not recorded (a CPU run).")
    elif not gpu.empty:
        st.plotly_chart(px.line(gpu, x="step", y=["gpu_util", "gpu_mem_mb"], facet_row="rank",
                                title="GPU utilization (%) and memory (MiB)"), key="gpu")

if run is not None and d is not None:
    st.header("Profile (HolisticTraceAnalysis)")
    with loading("the profiler traces (HolisticTraceAnalysis)"):
        report = data.profile(run)
    if report is None:
        st.caption("No torch.profiler traces for this run: set `training.profile.steps` (e.g. 5) to record a "
                   "window of steps on every rank.")
    else:
        st.caption(f"Ranks {report.ranks}; profiled steps {report.steps.get(report.ranks[0], [])}")
        for note in report.notes:
            st.info(note)
        if report.temporal is not None:
            st.dataframe(report.temporal, key="hta-temporal")
        if report.idle is not None:
            st.dataframe(report.idle, key="hta-idle")
        if report.overlap is not None:
            st.dataframe(report.overlap, key="hta-overlap")
        if not report.phases.empty:
            phases = report.phases.assign(rank=report.phases["rank"].astype(str))
            st.plotly_chart(px.bar(phases, x="ms_per_step", y="rank", color="phase", orientation="h",
                                   title="Profiled step by phase per rank (ms)"), key="hta-phases")
