"""One schema per record: the dataclass fields. JSON and MLflow tags both read them back to an equal record,
reading is strict (a missing, unknown or mistyped field is named), and record files refuse unsafe paths."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mlassets.core.records import RecordError, RecordFiles, record_class
from mlassets.core.registry.record import GATE_PASSED, RegistryRecord
from tests.core.registry.test_promotion import record


@pytest.mark.parametrize("passed", [True, False])
def test_the_registry_record_survives_json_and_tags(passed: bool) -> None:
    rec = dataclasses.replace(record(passed), warm_start_from="3", owners=["ml", "data@example.com"])
    assert RegistryRecord.from_json(rec.to_json()) == rec
    tags = rec.to_tags()
    assert all(isinstance(v, str) for v in tags.values())
    assert tags[GATE_PASSED] == ("true" if passed else "false") and tags["git_dirty"] == "false"
    assert tags["torch_version"] == "t"  # a nested record's fields join the flat tags
    back = RegistryRecord.from_tags({**tags, "mlassets.version_name": "2013-03 · aaaaaaaa"})
    assert back == rec.read_back() and set(back.to_tags()) == set(tags)  # the gate comes back as its verdict
    assert back.gate_passed is passed and back.gate_result.gated_against == rec.gate_result.gated_against


@pytest.mark.parametrize("passed", [True, False])
def test_a_versions_tags_say_the_verdict_in_words_not_json(passed: bool) -> None:
    """MLflow's versions table lists every tag: the gate is there as words, no JSON record."""
    rec = dataclasses.replace(record(passed), gate_result=dataclasses.replace(record(passed).gate_result,
                                                                              gated_against="3"))
    tags = rec.to_tags()
    assert "gate_result" not in tags and not any(v.startswith(("{", "[")) for v in tags.values())
    assert tags["gated_against"] == "3"
    assert tags["gate_summary"] == ("pass" if passed else f"rejected: {rec.gate_result.reasons()[0]}")


def test_a_version_registered_with_the_json_gate_tag_reads_whole_and_binds_its_keys() -> None:
    from mlassets.core.registry.record import bound_keys

    rec = record(False)
    legacy = {k: v for k, v in rec.to_tags().items() if k != "gated_against"}
    legacy["gate_result"] = rec.gate_result.to_json()  # how versions were tagged before
    assert RegistryRecord.from_tags(legacy) == rec  # every rule, read from the old tag
    assert bound_keys(RegistryRecord.from_tags(legacy), legacy) == sorted(legacy)  # the keys it was bound under
    assert bound_keys(rec, rec.to_tags()) == sorted(rec.to_tags())


def test_a_version_without_its_verdict_is_an_incomplete_record() -> None:
    tags = record(True).to_tags()
    with pytest.raises(RecordError, match="gate_passed: required key is missing"):
        RegistryRecord.from_tags({k: v for k, v in tags.items() if k != "gate_passed"})
    with pytest.raises(RecordError, match="gate_passed: tag value 'maybe'"):
        RegistryRecord.from_tags({**tags, "gate_passed": "maybe"})


def test_an_empty_text_default_makes_no_tag() -> None:
    """MLflow lists every tag of a version: ``image_digest: ""`` and the like say nothing, so they are left out."""
    rec = record(True)
    assert rec.warm_start_from == "" and rec.image_digest == ""
    tags = rec.to_tags()
    assert "warm_start_from" not in tags and "image_digest" not in tags and "" not in tags.values()
    assert rec.owners == [] and "owners" not in tags and "[]" not in tags.values()  # an empty list says nothing either
    assert RegistryRecord.from_tags(tags) == rec.read_back()  # the defaults come back
    assert dataclasses.replace(rec, warm_start_from="3").to_tags()["warm_start_from"] == "3"


def test_reading_is_strict_and_names_the_field() -> None:
    data = record(True).to_dict()
    with pytest.raises(RecordError, match="seed"):
        RegistryRecord.from_dict({**data, "seed": "forty-two"})
    with pytest.raises(RecordError, match="surprise"):
        RegistryRecord.from_dict({**data, "surprise": 1})
    with pytest.raises(RecordError, match="data_commit"):
        RegistryRecord.from_dict({k: v for k, v in data.items() if k != "data_commit"})
    with pytest.raises(RecordError, match="git_dirty"):
        RegistryRecord.from_tags({**record(True).to_tags(), "git_dirty": "maybe"})
    with pytest.raises(RecordError, match="not JSON"):
        RegistryRecord.from_json("{")


def test_record_files_round_trip_and_refuse_unsafe_paths(tmp_path: Path) -> None:
    files = RecordFiles(tmp_path)
    rec = record(False)
    path = files.write(["flights", "registered_model"], "a" * 64, rec)
    assert path == tmp_path / "flights" / "registered_model" / f"{'a' * 64}.json"
    assert files.read(["flights", "registered_model"], "a" * 64) == rec  # the kind stored picks the class
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # written atomically: no temp file left
    for key, partition in ((["flights", ".."], "p"), (["flights"], "../../etc/x"), (["a/b"], None)):
        with pytest.raises(RecordError, match="record path segment"):
            files.write(key, partition, rec)
    assert not any(tmp_path.parent.glob("etc"))
    with pytest.raises(RecordError, match="no record of flights/gate_result"):
        files.read(["flights", "gate_result"], "b" * 64)


@pytest.mark.parametrize("kind", ["os:system", "json:JSONDecoder", "mlassets.core.records:RecordFiles", "x"])
def test_a_stored_kind_only_names_mlassets_records(kind: str, tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="not an mlassets record"):
        record_class(kind)
    path = tmp_path / "k" / "_unpartitioned.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"kind": kind, "record": {}}))
    with pytest.raises(RecordError, match="not an mlassets record"):
        RecordFiles(tmp_path).read(["k"], None)
