"""Assets, checks, jobs, sensors and schedules, read from the Definitions of the shipped configs."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import Any

from mlassets.cli.reference.markdown import code, page, table
from mlassets.core.config import load_config, shipped_configs

SHOWN = "flights"  # the dataset whose graph the page spells out; every other one is compared with it
INTRO = """One asset graph per dataset config, built by one factory: every asset key starts with the dataset's name
(`flights/snapshot`). The tables spell out the shipped `flights` config's graph; the others are compared with it
below. Checks marked blocking stop the assets after them when they fail."""
_ENV = ("MLASSETS_HOME", "MLASSETS_CONFIGS", "DAGSTER_HOME", "MLFLOW_TRACKING_URI")


@contextlib.contextmanager
def _scratch_home() -> Iterator[None]:
    """Build in an empty temporary home: nothing of the caller's stack is read or written."""
    saved = {v: os.environ.get(v) for v in _ENV}
    with tempfile.TemporaryDirectory(prefix="mlassets-reference-") as home:
        for v in _ENV:
            os.environ.pop(v, None)
        os.environ["MLASSETS_HOME"] = home
        try:
            yield
        finally:
            for v, value in saved.items():
                if value is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = value


def definitions() -> Any:
    from mlassets.definitions import build_definitions

    with _scratch_home():
        return build_definitions([load_config(p) for p in shipped_configs().values()])


def _first_line(text: str | None) -> str:
    return " ".join((text or "").strip().split("\n\n")[0].split())


def _partitions(node: Any) -> str:
    name = getattr(node.partitions_def, "name", None)
    if name is None:
        return ""
    return "data version" if name.endswith("_data_versions") else "delivered partition"


def _graph(defs: Any, dataset: str) -> dict[str, tuple]:
    """Asset name (no prefix) -> (group, partitions, upstream, checks, description) of one dataset."""
    graph = defs.resolve_asset_graph()
    blocking = {(s.asset_key, s.name): s.blocking for a in defs.assets for s in getattr(a, "check_specs", [])}
    out = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        if key.path[0] != dataset:
            continue
        node = graph.get(key)
        checks = sorted(f"{c.name} (blocking)" if blocking.get((key, c.name)) else c.name for c in node.check_keys)
        out["/".join(key.path[1:])] = (
            node.group_name.removeprefix(f"{dataset}_"), _partitions(node),
            sorted("/".join(p.path[1:]) for p in node.parent_keys), checks, _first_line(node.description))
    return out


def _order(graph: dict[str, tuple]) -> list[str]:
    """Upstream before downstream, ties by name: the pipeline's order."""
    done: list[str] = []
    while len(done) < len(graph):
        ready = sorted(n for n, v in graph.items() if n not in done and all(p in done for p in v[2]))
        done.append(ready[0])
    return done


def render_graph(defs: Any = None) -> str:
    """The shown dataset's graph as Mermaid flowchart text, one subgraph per group."""
    graph = _graph(defs or definitions(), SHOWN)
    lines = ["flowchart LR"]
    for group in dict.fromkeys(graph[n][0] for n in _order(graph)):
        lines.append(f"  subgraph group_{group} [{group}]")  # a subgraph id apart from its nodes
        lines += [f"    {n.replace('/', '_')}[{n}]" for n in _order(graph) if graph[n][0] == group]
        lines.append("  end")
    lines += [f"  {p.replace('/', '_')} --> {n.replace('/', '_')}" for n in _order(graph) for p in graph[n][2]]
    return "\n".join(lines) + "\n"


def _dataset_of(name: str) -> str | None:
    """The shipped config a job's or sensor's name belongs to (the longest name prefix), or None (shared)."""
    owners = [c for c in shipped_configs() if name.startswith(f"{c}_")]
    return max(owners, key=len) if owners else None


def _named(items: Any, dataset: str) -> list[tuple[str, str]]:
    return sorted((code(d.name), _first_line(getattr(d, "description", ""))) for d in items
                  if not d.name.startswith("__") and _dataset_of(d.name) in (dataset, None))


def _shape(defs: Any, dataset: str) -> dict[str, tuple]:
    """A dataset's graph without its descriptions, its raw asset named as the shown dataset's: comparable."""
    def same(name: str) -> str:
        return f"raw_{SHOWN}" if name == f"raw_{dataset}" else name

    return {same(k): (v[0], v[1], [same(p) for p in v[2]], v[3]) for k, v in _graph(defs, dataset).items()}


def render() -> str:
    defs = definitions()
    graph = _graph(defs, SHOWN)
    assets = table(("asset", "group", "partitioned by", "upstream", "checks", "what it is"), [
        (code(f"{SHOWN}/{n}"), code(f"{SHOWN}_{graph[n][0]}"), graph[n][1], ", ".join(map(code, graph[n][2])),
         ", ".join(map(code, graph[n][3])), graph[n][4]) for n in _order(graph)])
    jobs = table(("job", "what it runs"), _named(defs.resolve_all_job_defs(), SHOWN))
    sensors = table(("sensor", "what it does"), _named(defs.sensors, SHOWN))
    schedules = _named(defs.schedules, SHOWN)
    others = []
    for name in shipped_configs():
        if name == SHOWN:
            continue
        same = _shape(defs, name) == _shape(defs, SHOWN)
        others.append((code(name), code(f"{name}/…"), f"the same assets, groups, upstream and checks (its raw asset: "
                       f"`raw_{name}`)" if same else ", ".join(map(code, _graph(defs, name)))))
    return page("Assets and checks", INTRO,
                f"## The `{SHOWN}` graph\n\n```mermaid\n{render_graph(defs)}```\n",
                f"## Assets\n\n{assets}",
                f"## Jobs\n\n{jobs}",
                f"## Sensors\n\nOn from the start under the daemon (`mlassets ui` or `mlassets daemon`).\n\n{sensors}",
                "## Schedules\n\n" + (table(("schedule", "what it does"), schedules) if schedules else
                                      "None in the shipped configs: `automation.schedule` adds `<dataset>_retrain`, "
                                      "`tuning.schedule` adds `<dataset>_tune_schedule`.\n"),
                f"## The other shipped configs\n\n{table(('config', 'asset keys', 'graph'), others)}")
