"""The registry record: the tags a model version carries, one typed class that registration writes and the
rebuild, serving and promotion read."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from mlassets.core.evaluate.gate import GateResult
from mlassets.core.records import Record
from mlassets.core.train.result import Provenance

GATE_PASSED, GATE_SUMMARY = "gate_passed", "gate_summary"  # mirrors of the gate result, for MLflow's UI and search


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
        tags = super().to_tags()
        tags[GATE_PASSED] = "true" if self.gate_passed else "false"
        tags[GATE_SUMMARY] = self.gate_result.summary()[:5000]
        return tags


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
