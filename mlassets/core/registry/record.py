"""The registry record: the tags a model version carries, one typed class that registration writes and the
rebuild, serving and promotion read.

MLflow's versions table lists every tag of a version, so the gate is there as its verdict, in words:
``gate_passed`` (true/false), ``gate_summary`` (``pass`` or ``rejected: <first reason> (+N more)``) and
``gated_against`` (the champion version it was judged against, or ``none``). Each rule's value and limit stay in the
``gate_result`` asset and the training run's ``gate_result.json``; a record read back from tags holds the verdict
without them. Versions registered before this held the whole gate result as one JSON tag (``gate_result``), which
is still read, and bound under the keys they were registered with (``bound_keys``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from mlassets.core.evaluate.gate import GateResult
from mlassets.core.records import Record, RecordError
from mlassets.core.train.result import Provenance

GATE_PASSED, GATE_SUMMARY = "gate_passed", "gate_summary"  # mirrors of the gate result, for MLflow's UI and search
GATED_AGAINST = "gated_against"
GATE_FILE = "gate_result.json"  # the whole gate result, an artifact of the version's training run
LEGACY_GATE = "gate_result"  # the whole gate result as JSON: the tag of versions registered before the verdict tags


@dataclass(frozen=True, kw_only=True)
class RegistryRecord(Provenance):
    """How the version was made (``Provenance``), the Dagster run that registered it, and its gate result."""

    dagster_run_id: str
    gate_result: GateResult

    @classmethod
    def of(cls, provenance: Provenance, dagster_run_id: str, gate_result: GateResult) -> RegistryRecord:
        fields = {f.name: getattr(provenance, f.name) for f in dataclasses.fields(Provenance)}
        return cls(**fields, dagster_run_id=dagster_run_id, gate_result=gate_result)

    @property
    def gate_passed(self) -> bool:
        return self.gate_result.passed

    def to_tags(self) -> dict[str, str]:
        """The provenance's tags and the gate's verdict in words (no JSON record: see the module's docstring)."""
        tags = super().to_tags()
        del tags[LEGACY_GATE]
        tags[GATE_PASSED] = "true" if self.gate_passed else "false"
        tags[GATE_SUMMARY] = self.gate_result.summary()[:5000]
        tags[GATED_AGAINST] = self.gate_result.gated_against
        return tags

    @classmethod
    def from_tags(cls, tags: Mapping[str, str]) -> RegistryRecord:
        """The record from a version's tags: the gate as its verdict (``verdict_of``), or whole from the JSON tag of
        a version registered before the verdict tags."""
        if LEGACY_GATE in tags:
            return super().from_tags(tags)
        passed = tags.get(GATE_PASSED)
        if passed not in ("true", "false"):
            raise RecordError(f"RegistryRecord.{GATE_PASSED}: " + ("required key is missing" if passed is None else
                              f"tag value {passed[:80]!r} does not parse (expected true/false)"))
        gate = verdict_of(passed == "true", tags.get(GATED_AGAINST, "none"))
        return super().from_tags({**tags, LEGACY_GATE: gate.to_json()})

    def read_back(self) -> RegistryRecord:
        """What ``from_tags(self.to_tags())`` gives: this record with its gate reduced to the verdict."""
        return dataclasses.replace(self, gate_result=verdict_of(self.gate_passed, self.gate_result.gated_against))


def verdict_of(passed: bool, gated_against: str) -> GateResult:
    """A gate result that holds only the verdict (what a version's tags keep of it)."""
    return GateResult(passed=passed, has_champion=gated_against != "none", gated_against=gated_against)


def bound_keys(record: RegistryRecord, tags: Mapping[str, str]) -> list[str]:
    """The tags of a version that its registration bound (``registrations.binding``): the record's tags, or for a
    version registered with the JSON gate tag, the keys it was registered with."""
    keys = set(record.to_tags())
    if LEGACY_GATE in tags:
        keys = (keys - {GATED_AGAINST}) | {LEGACY_GATE}
    return sorted(keys)


@dataclass(frozen=True, kw_only=True)
class RegisteredVersion(Record):
    """A registered model version and its record (the ``registered_model`` asset's output)."""

    name: str
    version: str
    record: RegistryRecord


@dataclass(frozen=True, kw_only=True)
class ChampionDecision(Record):
    """What the ``champion`` asset did for a version: promoted it, found it already live, or waits."""

    name: str
    version: str
    champion_version: str  # after the decision ("none": no champion)
    promoted: bool
    note: str = ""
    previous_champion: str = "none"
    promotion_seq: int = 0
    promotion_hash: str = ""
