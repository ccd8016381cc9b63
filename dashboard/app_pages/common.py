"""UI pieces shared by the pages: a sign of loading, the training-run picker and the run's links."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from dashboard import data
from dashboard.version_names import key_for_prefix
from mlassets.core.diagnose.runs import RunDir


@contextmanager
def loading(what: str) -> Iterator[None]:
    """A spinner with the time spent while ``what`` loads: the first read of MLflow, Dagster or a run's traces can
    take seconds, and a page would otherwise stay half drawn without a sign."""
    with st.spinner(f"Loading {what}…", show_time=True):
        yield


def pick_run(key: str) -> RunDir | None:
    """Dataset -> data version -> run; ``?run=<run id>`` preselects. None (and a note) when nothing is recorded."""
    with loading("the training runs"):
        runs = data.training_runs()
        names = data.data_version_keys() if runs else {}  # 2013-04.ff6dd3fa, as every other view names it
    if not runs:
        st.info(f"Nothing recorded yet: no training run with step telemetry under {data.home() / 'work'}. "
                "Materialize a candidate_model (or run `mlassets demo`), then reload.")
        return None
    wanted = st.query_params.get("run", "")
    chosen = next((r for r in runs if wanted and r.run_key.startswith(wanted[:8])), runs[0])
    left, mid, right = st.columns(3)
    datasets = sorted({r.dataset for r in runs})
    dataset = left.selectbox("Dataset", datasets, index=datasets.index(chosen.dataset), key=f"{key}-dataset")
    versions = list(dict.fromkeys(r.data_version for r in runs if r.dataset == dataset))
    version = mid.selectbox("Data version", versions, key=f"{key}-version",
                            index=versions.index(chosen.data_version) if chosen.data_version in versions else 0,
                            format_func=lambda v: key_for_prefix(names, v))
    options = {r.run_key: r for r in runs if r.dataset == dataset and r.data_version == version}
    keys = list(options)
    picked = right.selectbox("Run", keys, key=f"{key}-run", index=keys.index(chosen.run_key) if chosen.run_key in keys
                             else 0, format_func=lambda k: f"{k} ({'finished' if options[k].finished else 'partial'})")
    run = options[picked]
    st.query_params["run"] = run.run_key
    with loading("the run's links"):
        links = data.run_links(run)
    show_links(links)
    return run


def show_links(links: dict[str, str]) -> None:
    if links:
        st.markdown(" · ".join(f"[{name}]({url})" for name, url in links.items()))
    else:
        st.caption("No MLflow run found for this run (MLflow UI and Dagster links appear once it is tracked).")
