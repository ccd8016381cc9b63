"""The reference pages are the code's: regenerating them changes nothing, and what each page is read from covers
everything it should (every config key and default, every command and flag, every route, every metric)."""

from __future__ import annotations

import argparse
import dataclasses
import re
import types

import pytest
from prometheus_client import generate_latest

from mlassets.cli import build_parser
from mlassets.cli.reference import OUT, assets, cli_page, config_keys, http_api, metrics, render_all, stale, write
from mlassets.core.config import PipelineConfig
from mlassets.core.config.schema import TrainingConfig


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return render_all()


def test_the_committed_pages_are_the_generated_ones(pages: dict[str, str]) -> None:
    old = stale(pages)
    assert not old, (f"docs/reference/ is stale: {', '.join(old)} differ from the code; "
                     "regenerate with `python -m mlassets.cli.reference` (make reference) and commit them")


def test_a_changed_default_makes_the_config_page_stale(tmp_path, pages, monkeypatch) -> None:
    write(pages, tmp_path)
    assert stale(pages, tmp_path) == []
    field = next(f for f in dataclasses.fields(TrainingConfig) if f.name == "epochs")
    monkeypatch.setattr(field, "default", 5)
    changed = {**pages, "config.md": config_keys.render()}
    assert stale(changed, tmp_path) == ["config.md"]
    assert "| `training.epochs` | integer | `5` |" in changed["config.md"]


def test_every_config_key_is_a_row_with_the_dataclass_default(pages: dict[str, str]) -> None:
    rows = {r[0]: r for r in config_keys.keys()}
    page_rows = dict(re.findall(r"^\| `([^`]+)` \| [^|]* \| ([^|]*) \|", pages["config.md"], re.M))
    assert set(page_rows) == set(rows)
    assert {k: page_rows[k] for k in rows} == {k: r[2] for k, r in rows.items()}
    assert page_rows["training.batch_size"] == "`512`" and page_rows["dataset.name"] == "required"
    assert page_rows["gate.slice_max_regression"] == "`0.03`"
    assert "dataset.tables.<t>.columns" in page_rows and "dataset.columns.<c>.dtype" in page_rows


def test_a_field_without_a_docstring_is_refused() -> None:
    @dataclasses.dataclass
    class Section:
        documented: int = 1
        """Has its meaning."""
        bare: int = 2

    with pytest.raises(ValueError, match=r"Section.bare \(x.bare\) has no docstring"):
        config_keys.keys(Section, "x.")


def test_every_command_and_flag_is_on_the_cli_page(pages: dict[str, str]) -> None:
    text = pages["cli.md"]
    for prog, _, parser in cli_page._commands(build_parser()):
        assert f"## `{prog}`" in text
        for action in parser._actions:
            if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                assert f"`{', '.join(action.option_strings) or action.dest}`" in text, (prog, action.dest)
    assert "## `mlassets online labels`" in text and "`--broken-month`" in text


def test_the_openapi_lists_every_route_the_endpoint_serves() -> None:
    from mlassets.core.config import load_config, shipped_configs
    from mlassets.core.config.serving import ServingConfig
    from mlassets.serve.app import create_app
    from mlassets.serve.rows import schema_of
    from mlassets.serve.swap import Champion

    cfg = load_config(shipped_configs()["flights"])
    schema = schema_of(cfg.features.categorical, cfg.features.numeric, cfg)
    app = create_app(Champion(types.SimpleNamespace(name="m", version="1")), schema, ServingConfig(), poll=False)
    served = {(r.path, m) for r in app.routes for m in (getattr(r, "methods", None) or ()) if m != "HEAD"}
    documented = {(p, m.upper()) for p, ops in app.openapi()["paths"].items() for m in ops}
    assert served - {("/openapi.json", "GET")} == documented
    predict = app.openapi()["paths"]["/predict"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    row = predict["properties"]["rows"]["items"]
    assert set(row["properties"]) == set(schema.columns)
    assert row["properties"]["wind_speed"]["type"] == ["number", "null"]  # nullable in the flights config
    assert "carrier" in row["required"] and "wind_speed" not in row["required"]


def test_every_metric_the_endpoint_exposes_is_on_the_page(pages: dict[str, str]) -> None:
    text = generate_latest(metrics.Metrics().registry).decode()
    exposed = {n for n in re.findall(r"^# TYPE (\S+)", text, re.M) if not n.endswith("_created")}  # client's own
    listed = {name.strip("`") for name, *_ in metrics.rows()}
    assert {n.removesuffix("_total") for n in listed} == {n.removesuffix("_total") for n in exposed}
    assert all(f"`{n}`" in pages["metrics.md"] for n in listed)


def test_the_assets_page_lists_the_flights_graph(pages: dict[str, str]) -> None:
    text = pages["assets.md"]
    for key in ("flights/snapshot", "flights/gate_result", "flights/champion", "flights/predictions"):
        assert f"`{key}`" in text
    gate_row = next(line for line in text.splitlines() if line.startswith("| `flights/gate_result`"))
    assert "| `gate_passed` |" in gate_row and "(blocking)" not in gate_row  # the verdict is data: it blocks nothing
    assert "`flights_pipeline`" in text
    graph = pages["asset-graph.mmd"]
    assert graph.startswith("flowchart LR") and "evaluation --> gate_result" in graph


def test_http_api_page_names_both_scoring_routes(pages: dict[str, str]) -> None:
    assert "## `POST /invocations`" in pages["http-api.md"] and "## `POST /predict`" in pages["http-api.md"]
    assert http_api.openapi()["info"]["title"] == "mlassets serve flights_arr_delay"


def test_the_reference_folder_is_where_the_site_reads_it() -> None:
    assert OUT.name == "reference" and (OUT.parent / "index.md").is_file()
    assert assets.SHOWN == "flights" and isinstance(PipelineConfig, type)
