"""Models and gate: promotion history, champion against each candidate per slice, every gate rule, the holdout
metrics of a version and its per-class table (multiclass)."""

import plotly.express as px
import streamlit as st

from dashboard import data
from dashboard.app_pages.common import loading
from dashboard.formats import SHORT_RUN_ID

RUN_LINKS = {"mlflow_run": st.column_config.LinkColumn("MLflow run", display_text=SHORT_RUN_ID),
             "dagster_run": st.column_config.LinkColumn("Dagster run", display_text=SHORT_RUN_ID)}

st.title("Models and gate")
with loading("the registry"):
    names = data.models()
if not names:
    st.info("Nothing recorded yet: no registered model and no promotion log. Run the pipeline (`mlassets demo`).")
else:
    model = st.selectbox("Model", names, key="model")
    with loading(f"{model}'s versions and promotions"):
        history, versions, changes = data.promotion_history(model), data.versions(model), data.slice_changes(model)
        table = data.version_table(versions)
    st.subheader("Promotion history")
    if history.empty:
        st.caption("No promotion recorded for this model.")
    else:
        st.dataframe(history, hide_index=True, key="history")
        special = history[history["action"].isin(["force-promote", "rollback"])]
        for row in special.itertuples():
            st.markdown(f"- **{row.action}** to v{row.to_version} by {row.who} at {row.at}: {row.reason}")
    st.subheader("Versions")
    st.dataframe(table, hide_index=True, key="versions", column_config=RUN_LINKS)
    if not changes.empty:
        worse = "< 0 is worse: higher is better" if (changes["bound"] == "min").all() else "> 0 is worse"
        changes = changes.assign(version="v" + changes["version"].astype(str))  # one colour per version, not a scale
        st.plotly_chart(px.bar(changes, x="slice", y="change", color="version", barmode="group",
                               color_discrete_sequence=px.colors.qualitative.Safe,
                               title=f"Candidate vs champion per slice (relative change of the main metric; "
                                     f"{worse})"), key="slices")
    if not versions.empty:
        named = dict(zip(versions["version"], versions["data_version"], strict=True))
        version = st.selectbox("Gate result of version", versions["version"].tolist()[::-1], key="version",
                               format_func=lambda v: f"v{v} · {named[v]}" if named[v] else f"v{v}")
        row = versions[versions["version"] == version].iloc[0]
        with loading(f"v{version}'s gate result and evaluation"):
            rules, unjudged = data.gate_rules(model, int(version))
            evaluation = data.evaluation(model, int(version))
        links = {"Model version": data.model_version_url(model, version)}
        shown = table.loc[row.name]
        if shown["mlflow_run"]:
            links["MLflow run"] = shown["mlflow_run"]  # the training run that made this version
        if shown["dagster_run"]:
            links["Dagster run"] = shown["dagster_run"]
        st.markdown(" · ".join(f"[{k}]({v})" for k, v in links.items()))
        summary = str(row["gate_summary"])  # the verdict said once (older records say "fail")
        summary = summary.removeprefix("pass").removeprefix("rejected").removeprefix("fail").lstrip(":; ")
        st.markdown(f"**Gate {'passed' if row['gate_passed'] else 'rejected'}**" + (f": {summary}" if summary else ""))
        st.dataframe(rules, hide_index=True, key="rules")
        st.subheader("Holdout metrics")
        if evaluation is None:
            st.caption("No evaluation record in the MLflow run of this version.")
        else:
            st.caption(f"{evaluation.holdout_rows} holdout rows; champion "
                       f"{'v' + evaluation.champion_version if evaluation.champion_version else 'none'}")
            st.dataframe(data.metric_table(evaluation), hide_index=True, key="metrics")
            classes = data.class_table(evaluation)
            if not classes.empty:
                st.subheader("Per class")
                st.dataframe(classes, hide_index=True, key="classes")
        st.subheader("Slices the gate could not judge")
        if unjudged.empty:
            st.caption("None recorded for this version.")
        else:
            st.dataframe(unjudged, hide_index=True, key="unjudged")
