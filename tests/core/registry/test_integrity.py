"""What the record says is what runs: a killed promotion, a truncated or rewritten log, swapped weights.

Promotions are killed (SIGKILL, spawned processes) at every step of a promotion and at timed moments: the
alias never runs ahead of the log, ``history`` reports the lag as an error, and the next command repairs it
from the log, saying so. Deleting or rewriting the newest rows is caught by the anchor kept in MLflow. A
model whose weights (and manifest) were swapped, or whose whole bundle was copied from another version, is
refused by the serving path and by ``mlflow.pyfunc.load_model``.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import shutil
import signal
import sqlite3
import time
from pathlib import Path

import mlflow
import pytest
import torch

from mlassets.cli import main
from mlassets.core.registry import projection, promote
from mlassets.core.registry import versions as registry
from mlassets.core.registry.promotion import PromotionError, PromotionLog
from mlassets.core.train import mlflow_model
from mlassets.core.train.artifact import save_bundle, weights_sha256
from mlassets.serve import ServingError, load_champion
from tests.core.registry import test_promotion as shared
from tests.core.registry.test_promotion import Registry, record, tiny_bundle

pytestmark = pytest.mark.e2e
reg = shared.reg  # the shared MLflow store, one model name and promotion log per test
STAGES = ("before-row", "after-row", "after-alias")


def _stalled_promotion(name: str, version: str, stage: str, ready: str) -> None:
    """Promote in a fresh process and stop forever at ``stage`` (or, for ``started``, as it begins)."""
    from mlassets.core import tracking
    from mlassets.core.registry import projection as proj
    from mlassets.core.registry import promote as prom
    from mlassets.core.registry.promotion import PromotionLog

    def stall() -> None:
        Path(ready).touch()
        time.sleep(600)

    tracking.configure()
    if stage == "before-row":
        original = PromotionLog.append
        PromotionLog.append = lambda self, *a, **k: (stall(), original(self, *a, **k))[1]
    elif stage == "after-row":
        proj.project = lambda *a, **k: stall()
    elif stage == "after-alias":
        set_alias = proj.set_alias
        proj.set_alias = lambda *a, **k: (set_alias(*a, **k), stall())
    else:  # "started": the parent kills at a timed moment after this
        Path(ready).touch()
    prom.promote(name, version)


def _kill_at(name: str, version: str, stage: str, tmp: Path, delay: float = 0.0) -> None:
    ready = tmp / f"ready-{stage}-{delay}"
    child = mp.get_context("spawn").Process(target=_stalled_promotion, args=(name, version, stage, str(ready)))
    child.start()
    deadline = time.monotonic() + 120
    while not ready.exists() and child.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ready.exists() or child.exitcode == 0, f"the promotion never reached {stage} ({child.exitcode})"
    time.sleep(delay)
    if child.is_alive():
        os.kill(child.pid, signal.SIGKILL)
    child.join(timeout=30)


def _after_a_kill(reg: Registry, capsys: pytest.CaptureFixture[str]) -> bool:
    """What must hold whatever the kill point: no tampering seen, the alias never ahead of the log, a lag
    reported by ``history`` and repaired by the next command, saying so."""
    state = projection.inspect(reg.name, reg.log)
    assert state.problems == [], state.problems
    live = [e.to_version for e in reg.log.entries(reg.name) if e.applied]
    assert state.alias in (live[-2:] if len(live) > 1 else [*live, None])  # the old or the new champion
    capsys.readouterr()
    code = main(["history", "--model", reg.name])
    out = capsys.readouterr().out
    assert code == (0 if state.consistent else 1)
    assert ("error: " in out) == (not state.consistent), out
    repairs = promote.sync(reg.name, reg.log)
    assert bool(repairs) == (not state.consistent)
    assert projection.inspect(reg.name, reg.log).consistent and reg.champion() == reg.log.live(reg.name).to_version
    return state.consistent


def test_a_promotion_killed_at_any_point_leaves_the_alias_behind_the_log_never_ahead(
    reg: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    versions = reg.add(*[True] * (len(STAGES) + 6))
    promote.promote(reg.name, versions[0])
    target = iter(versions[1:])
    lagged = {}
    for stage in STAGES:
        _kill_at(reg.name, next(target), stage, tmp_path)
        lagged[stage] = not _after_a_kill(reg, capsys)
    assert lagged == {"before-row": False, "after-row": True, "after-alias": True}  # the anchor lags too
    for delay in (0.0, 0.05, 0.1, 0.2, 0.4):  # and at timed moments after the promotion began
        _kill_at(reg.name, next(target), "started", tmp_path, delay)
        _after_a_kill(reg, capsys)


def test_the_cli_repairs_the_alias_from_the_log_and_says_so(reg: Registry, capsys, caplog) -> None:
    reg.add(True, True, True)
    promote.promote(reg.name, "1")
    registry.set_alias(reg.name, registry.CHAMPION, "3")  # the alias ahead of the log (the reported bug)
    assert main(["history", "--model", reg.name]) == 1
    assert "error: the champion alias of" in capsys.readouterr().out
    assert main(["promote", "1", "--model", reg.name]) == 2  # v1 is, by the log, already the champion ...
    err = capsys.readouterr().err
    said = err.count("repaired from the promotion log") + caplog.text.count("repaired from the promotion log")
    assert "repaired from the promotion log: the champion alias" in err and "points at v3" in err and said == 1
    assert "version 1 is already the champion" in err and reg.champion() == "1"  # ... and the alias says so again
    assert main(["history", "--model", reg.name]) == 0


def test_a_promotion_that_lands_while_another_command_reads_is_not_taken_for_tampering(
    reg: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interleaving a racing promotion can produce: this command has read the log, then the other one
    lands its row, alias and anchor. The anchor then seems ahead of what was read; it must not look like
    deleted rows (it did, once in ~60 races, before the projection was read first)."""
    reg.add(True, True)
    promote.promote(reg.name, "1")
    read = PromotionLog.entries

    def read_then_the_other_promotion_lands(self: PromotionLog, model: str | None = None) -> list:
        seen = read(self, model)
        monkeypatch.setattr(PromotionLog, "entries", read)
        promote.promote(reg.name, "2", log=reg.log)
        return seen

    monkeypatch.setattr(PromotionLog, "entries", read_then_the_other_promotion_lands)
    state = projection.inspect(reg.name, reg.log)
    assert state.problems == [] and reg.champion() == "2"
    assert promote.sync(reg.name, reg.log) == [] and projection.inspect(reg.name, reg.log).consistent


def _rows(db: str, sql: str, *args: object) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(sql, args)


def test_a_deleted_or_rewritten_tail_is_caught_by_the_anchor(reg: Registry, capsys) -> None:
    reg.add(True, True, True)
    for version in ("1", "2", "3"):
        promote.promote(reg.name, version)
    last = reg.log.entries(reg.name)[-1]
    _rows(reg.db, "DELETE FROM promotions WHERE model = ? AND seq = ?", reg.name, last.seq)  # the newest row
    assert reg.log.verify(reg.name) == []  # the chain alone cannot see it
    assert main(["history", "--model", reg.name]) == 1
    out = capsys.readouterr().out
    assert "hash chain BROKEN" in out and "ends at seq 2, but its anchor in MLflow says seq 3" in out
    assert main(["history", "--model", reg.name, "--at", last.at]) == 1
    with pytest.raises(PromotionError, match="rows were deleted"):
        promote.promote(reg.name, "1")
    # the tail rewritten instead (v2 for v3, its hash recomputed): the chain holds, the anchor does not
    _rows(reg.db, "INSERT INTO promotions VALUES (?,?,?,?,?,?,?,?,?,?)", *[getattr(last, f) for f in (
        "model", "seq", "action", "from_version", "to_version", "who", "at", "reason", "prev_hash", "hash")])
    forged = last.__class__(**{**last.__dict__, "to_version": "2", "hash": ""})
    _rows(reg.db, "UPDATE promotions SET to_version = '2', hash = ? WHERE model = ? AND seq = ?",
          forged.expected_hash(), reg.name, last.seq)
    assert reg.log.verify(reg.name) == []
    state = projection.inspect(reg.name, reg.log)
    assert any("seq 3: the row was rewritten" in p for p in state.problems)
    with pytest.raises(PromotionError, match="the row was rewritten"):
        promote.sync(reg.name, reg.log)


def _log_bundle(seed: int, home: Path) -> tuple[str, str]:
    torch.manual_seed(seed)
    bundle = tiny_bundle()
    for p in bundle.model.parameters():
        torch.nn.init.normal_(p, std=0.1 * (seed + 1))
    path = save_bundle(bundle, home / f"bundle-{seed}")
    with mlflow.start_run():
        uri = mlflow_model.log_model(path)
    return uri, weights_sha256(path)


def _zero_weights_keep_manifest_consistent(directory: Path) -> None:
    """What an attacker with write access does: swap the weights and rewrite the manifest to match."""
    state = torch.load(directory / "weights.pt", weights_only=True)
    torch.save({k: torch.zeros_like(v) for k, v in state.items()}, directory / "weights.pt")
    manifest = json.loads((directory / "MANIFEST.json").read_text())
    data = (directory / "weights.pt").read_bytes()
    manifest["files"]["weights.pt"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    (directory / "MANIFEST.json").write_text(json.dumps(manifest))


def test_swapped_weights_or_a_copied_bundle_are_refused(reg: Registry, tmp_path: Path) -> None:
    names = []
    for seed in (1, 2):
        uri, weights = _log_bundle(seed, tmp_path)
        names.append(str(registry.register(reg.name, uri, record(True, weights)).version))
    promote.promote(reg.name, names[0])
    assert load_champion(reg.name).version == names[0]
    champion_dir = registry.bundle_dir(registry.get_version(reg.name, names[0]))
    other_dir = registry.bundle_dir(registry.get_version(reg.name, names[1]))
    saved = tmp_path / "saved"
    shutil.copytree(champion_dir, saved)
    _zero_weights_keep_manifest_consistent(champion_dir)
    swapped = r"does not match the seal in the registration history: .*weights.pt differs from the file registered"
    with pytest.raises(ServingError, match=swapped):
        load_champion(reg.name)
    with pytest.raises(Exception, match=swapped):
        mlflow.pyfunc.load_model(f"models:/{reg.name}@champion")
    shutil.rmtree(champion_dir)
    shutil.copytree(other_dir, champion_dir)  # a whole, self-consistent bundle of the other version
    with pytest.raises(ServingError, match=swapped):
        load_champion(reg.name)
    with pytest.raises(Exception, match=swapped):
        mlflow.pyfunc.load_model(f"models:/{reg.name}@champion")
    shutil.rmtree(champion_dir)
    shutil.copytree(saved, champion_dir)
    assert load_champion(reg.name).version == names[0]
    assert mlflow.pyfunc.load_model(f"models:/{reg.name}@champion") is not None
