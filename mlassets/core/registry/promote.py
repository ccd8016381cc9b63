"""Promotions and rollbacks: each one is a row of the promotion log first (the row is the lock); then the
``champion`` alias and the log's anchor are set from the log (``projection``). The ``champion`` asset and the
CLI go through the same functions, and each first repairs a projection an interrupted promotion left behind.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mlassets.core.registry import projection, promotion
from mlassets.core.registry.promotion import (
    FORCE,
    GENESIS,
    LOST,
    PROMOTE,
    ROLLBACK,
    Entry,
    PromotionError,
    PromotionLog,
)
from mlassets.core.registry.versions import RegistryError, check_model, gate_passed, get_version

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion

_log = logging.getLogger("mlassets.promotion")


def serving_basis(record: ModelVersion, log: PromotionLog | None = None) -> str:
    """Why ``record`` may be served: its passing gate, or a forced promotion with a reason; else raise."""
    if gate_passed(record):
        return "gate passed"
    log = log or PromotionLog()
    projection.refuse_if_damaged(record.name, log)  # a forced row is trusted only in an intact log
    forced = log.forced_reason(record.name, str(record.version))
    if forced:
        return f"forced promotion: {forced}"
    summary = record.tags.get("gate_summary") or "no gate result recorded"
    summary = summary if len(summary) <= 300 else summary[:297] + "..."
    raise RegistryError(f"model {record.name!r} version {record.version} has no passing gate result ({summary}) "
                        "and no forced promotion with a reason in the promotion log; refusing it")


def version_number(version: str | int) -> str:
    text = str(version).strip()
    return text[1:] if text[:1] in "vV" and text[1:].isdigit() else text


def check_registered(record: ModelVersion) -> None:
    """``PromotionError`` unless mlassets registered ``record`` and its model folder is the one sealed then (forced or
    not: a forged or edited version never moves)."""
    from mlassets.core.registry import registrations, seal

    try:
        registrations.check(record)
        registrations.verify_seal(record, seal.model_folder(record))
    except RegistryError as exc:
        raise PromotionError(str(exc)) from None


def live_version(name: str, log: PromotionLog | None = None) -> str | None:
    """The champion by the promotion log, the only truth about it (None before the first promotion)."""
    live = (log or PromotionLog()).live(name)
    return live.to_version if live else None


def trusted_live_version(name: str, log: PromotionLog | None = None) -> str | None:
    """``live_version`` for a reader that acts on it (serving, a warm start): the log's chain and its anchor in
    MLflow are checked first, and a damaged log is refused (``PromotionError``, the sentence ``history``
    prints)."""
    log = log or PromotionLog()
    return projection.refuse_if_damaged(name, log).live


def sync(name: str, log: PromotionLog | None = None) -> list[str]:
    """Refuse a tampered log (``PromotionError``); repair an alias or anchor left behind by an interrupted
    promotion, from the log. Returns one sentence per repair (empty when everything agreed)."""
    log = log or PromotionLog()
    state = projection.refuse_if_damaged(name, log)
    return projection.repair(name, log, state)  # the caller says so (CLI: stderr; asset: the run's log)


def promote(name: str, version: str | int, *, who: str | None = None, reason: str = "", force: bool = False,
            gated_against: str | None = None, expected_seq: int | None = None,
            log: PromotionLog | None = None) -> Entry:
    """Move ``champion`` to ``version`` through the log. Refused (nothing changed) for an unknown model or
    version, a version without a passing gate unless ``force`` with a ``reason``, a damaged log, or
    ``gated_against`` (the champion the gate compared with, "none" for none) that is no longer the champion.
    ``expected_seq``: promote only if the log still ends at that seq. ``LostRace`` when another promotion
    took the seq first."""
    log = log or PromotionLog()
    check_model(name)
    record = get_version(name, version_number(version))
    check_registered(record)
    if force and not reason.strip():
        raise PromotionError(f"forcing {name!r} version {record.version} needs a reason (--reason TEXT)")
    if not force:
        try:
            serving_basis(record, log)
        except RegistryError as exc:
            raise PromotionError(f"{exc}; to promote it anyway: --force --reason TEXT") from None
    return _move(name, FORCE if force else PROMOTE, str(record.version), who=who, reason=reason, log=log,
                 gated_against=gated_against, expected_seq=expected_seq)


def rollback(name: str, *, who: str | None = None, reason: str = "", log: PromotionLog | None = None,
             expected_seq: int | None = None) -> Entry:
    """Move ``champion`` back to the champion before the live one (rollbacks stack: two go back two)."""
    log = log or PromotionLog()
    check_model(name)
    champions = log.lineage(name)
    if len(champions) < 2:
        live = f"v{champions[-1]}" if champions else "none"
        raise PromotionError(f"model {name!r} has no earlier champion to roll back to (champion: {live})")
    target = get_version(name, champions[-2])
    check_registered(target)
    return _move(name, ROLLBACK, str(target.version), who=who, reason=reason or f"rollback from v{champions[-1]}",
                 log=log, expected_seq=expected_seq)


def _move(name: str, action: str, version: str, *, who: str | None, reason: str, log: PromotionLog,
          gated_against: str | None = None, expected_seq: int | None = None) -> Entry:
    import sqlalchemy as sa

    for line in sync(name, log):
        _log.warning(line)
    head = log.head(name)
    head_seq = head.seq if head else 0
    current = live_version(name, log)
    if gated_against is not None and gated_against != (current or "none"):
        raise PromotionError(f"model {name!r} version {version} was gated against champion {gated_against}, but "
                             f"the champion is now {current or 'none'}; evaluate it again (nothing changed)")
    if current == version and action != ROLLBACK:
        raise PromotionError(f"model {name!r} version {version} is already the champion (nothing changed)")
    seq = head_seq if expected_seq is None else expected_seq
    if seq > head_seq:
        raise PromotionError(f"promotion log of {name!r} ends at seq {head_seq}, not {seq}")
    fields = {"action": action, "from_version": current, "to_version": version, "who": who, "reason": reason}
    if seq == head_seq:
        try:
            entry = log.append(name, seq + 1, head.hash if head else GENESIS, fields)  # the row is the lock
        except sa.exc.IntegrityError:
            pass  # another promotion took seq + 1 first
        else:
            projection.project(name, log)  # then the alias and the anchor follow the log
            return entry
    winner = next((e for e in log.entries(name) if e.seq == seq + 1), None)
    won = f"seq {winner.seq} ({winner.action} v{winner.to_version} by {winner.who})" if winner else f"seq {seq + 1}"
    attempt = log.append_next(name, {**fields, "action": action + LOST, "from_version": live_version(name, log),
                                     "reason": f"lost the race to {won}" + (f"; {reason}" if reason else "")})
    projection.project(name, log)
    raise promotion.LostRace(f"model {name!r}: {action} to v{version} lost the race to {won}; the attempt is "
                             f"recorded as seq {attempt.seq} and the champion was not touched", attempt, winner)
