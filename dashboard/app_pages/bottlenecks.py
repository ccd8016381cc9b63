"""Bottlenecks: where the step time of a training run goes, the verdict, and what to do next."""

import plotly.express as px
import streamlit as st

from dashboard import data
from dashboard.app_pages.common import pick_run
from mlassets.core.diagnose.steps import LABELS, TIMES

st.title("Bottlenecks")
run = pick_run("bottlenecks")
d = data.diagnosis(run.telemetry_dir) if run else None
if run and d is None:
    st.info("Nothing recorded yet: this run's telemetry has no rows.")
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
    st.plotly_chart(px.area(long, x="step", y="ms", color="part", facet_row="rank",
                            title="Step time per rank over steps (ms)"), key="over-steps")
    shares = d.summary[list(TIMES)].reset_index().melt(id_vars="rank", var_name="part", value_name="ms")
    shares["part"] = shares["part"].map(LABELS)
    shares["rank"] = shares["rank"].astype(str)
    shares["percent"] = 100 * shares["ms"] / shares.groupby("rank")["ms"].transform("sum")
    st.plotly_chart(px.bar(shares, x="percent", y="rank", color="part", orientation="h",
                           title="Share of the step per rank (%)"), key="shares")
    table = d.summary[["steps", "median_step", "p90_step", *TIMES]].rename(columns=LABELS).round(2)
    st.dataframe(table, key="per-rank")
    gpu = series.dropna(subset=["gpu_util"])
    if gpu.empty:
        st.caption("GPU utilization and memory: not recorded (a CPU run).")
    else:
        st.plotly_chart(px.line(gpu, x="step", y=["gpu_util", "gpu_mem_mb"], facet_row="rank",
                                title="GPU utilization (%) and memory (MiB)"), key="gpu")

    st.header("Profile (HolisticTraceAnalysis)")
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
