"""The mlassets diagnosis dashboard: ``streamlit run dashboard/streamlit_app.py --server.address 127.0.0.1``.

One router; the pages in ``app_pages/`` hold UI only and read everything through ``dashboard/data.py``. Every
page has its own URL (``/bottlenecks?run=…``, ``/stragglers``, …): the links other views record open them. The
root URL is a hidden page that forwards to Bottlenecks with its query (Streamlit serves its default page at ``/``
only, so Bottlenecks cannot be the default and keep ``/bottlenecks``).
"""

import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `streamlit run` puts only this folder on the path
    sys.path.insert(0, str(ROOT))

PAGES = Path(__file__).parent / "app_pages"
BOTTLENECKS = st.Page(PAGES / "bottlenecks.py", title="Bottlenecks", url_path="bottlenecks")


def _root() -> None:
    """``/`` (and ``/?run=…``) opens Bottlenecks at its own URL, the query kept."""
    st.switch_page(BOTTLENECKS, query_params=st.query_params.to_dict())


st.set_page_config(page_title="mlassets diagnosis", layout="wide")
navigation = st.navigation({
    "Training": [
        st.Page(_root, title="Start", url_path="start", default=True, visibility="hidden"),
        BOTTLENECKS,
        st.Page(PAGES / "stragglers.py", title="Stragglers", url_path="stragglers"),
        st.Page(PAGES / "scaling.py", title="Scaling and cost", url_path="scaling"),
    ],
    "Models": [st.Page(PAGES / "models.py", title="Models and gate", url_path="models")],
    "Planning and serving": [
        st.Page(PAGES / "capacity.py", title="Capacity planner", url_path="capacity"),
        st.Page(PAGES / "serving.py", title="Serving latency", url_path="serving"),
        st.Page(PAGES / "fleet.py", title="GPU fleet", url_path="fleet"),
    ],
})
navigation.run()
