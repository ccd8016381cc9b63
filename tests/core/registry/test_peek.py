"""The registry read without MLflow (``history``'s fast path) sees what MLflow's own client sees."""

from __future__ import annotations

import mlflow

from mlassets.core.registry import peek
from mlassets.core.registry.projection import ANCHOR_TAG
from tests.core.registry import test_promotion as shared
from tests.core.registry.test_promotion import Registry

reg = shared.reg  # the shared MLflow store


def _as_mlflow_sees_it(name: str) -> peek.ModelView:
    model = mlflow.MlflowClient().get_registered_model(name)
    return peek.ModelView(name=model.name, tags=dict(model.tags), aliases={a: str(v) for a, v in model.aliases.items()})


def test_the_database_read_matches_mlflows_client(reg: Registry) -> None:
    uri = mlflow.get_tracking_uri()
    assert uri.startswith("sqlite:///")
    assert peek.read_model(reg.name, uri) is None  # not registered yet
    reg.add(True, False, True)
    client = mlflow.MlflowClient()
    client.set_registered_model_alias(reg.name, "champion", "3")
    client.set_registered_model_alias(reg.name, "challenger", "1")
    client.set_registered_model_tag(reg.name, ANCHOR_TAG, "7:abc")
    seen = peek.read_model(reg.name, uri)
    assert seen == _as_mlflow_sees_it(reg.name)
    assert seen.aliases == {"champion": "3", "challenger": "1"} and seen.tags[ANCHOR_TAG] == "7:abc"
    client.delete_registered_model_alias(reg.name, "champion")
    assert "champion" not in peek.read_model(reg.name, uri).aliases
    client.set_model_version_tag(reg.name, "2", "family", "lightgbm")
    found = client.search_model_versions(f"name = '{reg.name}'")
    seen_by_mlflow = {str(v.version): v.tags.get("family") for v in found}
    assert peek.version_tags(reg.name, "family", uri) == {k: v for k, v in seen_by_mlflow.items() if v}
    assert peek.version_tags(reg.name, "family", uri)["2"] == "lightgbm"
    assert peek.version_tags("no_such_model", "family", uri) == {}


def test_a_store_that_does_not_exist_is_not_created(tmp_path) -> None:
    db = tmp_path / "never.db"
    assert peek.read_model("anything", f"sqlite:///{db}") is None
    assert not db.exists()
