"""Serving latency: the batch-inference path by stage (OpenTelemetry spans), p50/p99, slow against fast requests."""

import pandas as pd
import plotly.express as px
import streamlit as st

from dashboard import data
from dashboard.app_pages.common import loading
from mlassets.core.diagnose.serving_verdict import recorded
from mlassets.core.diagnose.spans import ENDPOINT, requests, slow_vs_fast, stage_table, too_few_for_p99, variants

st.title("Serving latency")
with loading("the serving traces"):
    spans = data.serving_spans()
if spans.empty:
    st.info(f"Nothing recorded yet: no spans in {data.home() / data.SPANS_FILE}. The predictions asset records "
            "one `batch_inference` trace per run; `mlassets diagnose --trace-serving MODEL --rows FILE` traces "
            "many requests of the champion; `mlassets serve MODEL` traces every request it answers.")
else:
    kinds = sorted(k for k in spans["root"].unique() if k)
    first = next((k for k in (ENDPOINT, "request") if k in kinds), kinds[0])
    kind = st.selectbox("Requests", kinds, index=kinds.index(first), key="kind")
    answered = variants(spans, kind)
    variant = None
    if len(answered) > 1:  # an online test: the canary's requests beside the champion's
        variant = st.radio("Answered by", ["all", *answered], horizontal=True, key="variant")
        variant = None if variant == "all" else variant
        per_variant = pd.DataFrame({v: stage_table(requests(spans, kind, v)).loc["total"] for v in answered}).T
        st.dataframe(per_variant.round(2), key="variants")
    reqs = requests(spans, kind, variant)
    st.caption(f"{len(reqs)} traced {kind} requests" + (f" answered by the {variant}" if variant else ""))
    if few := too_few_for_p99(len(reqs)):
        st.warning(few)
    table = stage_table(reqs).round(2)
    st.dataframe(table, key="stages")
    st.plotly_chart(px.bar(table.drop(index="total").reset_index(names="stage"), x="stage", y=["p50_ms", "p99_ms"],
                           barmode="group", title="p50 and p99 per stage (ms)"), key="stage-chart")
    comparison = slow_vs_fast(reqs)
    if kind == ENDPOINT and (found := recorded(spans, variant)) is not None:  # `mlassets serve`'s: the source's terms
        st.subheader(f"Verdict: {found.headline}", anchor="verdict")
        st.markdown(found.sentence())
    if comparison is None:
        st.caption("Fewer than two requests: nothing to compare.")
    else:
        st.subheader("Where the extra p99 time goes", anchor="slow-vs-fast")
        st.markdown(comparison.sentence())
        both = comparison.slow.rename("slow (≥ p99)").to_frame().join(comparison.fast.rename("fast (≤ p50)"))
        st.plotly_chart(px.bar(both.reset_index(names="stage"), x="stage", y=["slow (≥ p99)", "fast (≤ p50)"],
                               barmode="group", title="Mean ms per stage: slow vs fast requests"), key="compare")
