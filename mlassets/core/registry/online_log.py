"""The online test of a candidate in the promotion log: started, then promoted or rolled back, each a row.

``gate.promotion: online`` does not move ``champion`` for a version that passed the offline gate: it appends a
``canary-start`` (or ``shadow-start``) row naming the candidate, and sets the MLflow alias ``candidate`` to it
(a projection, like ``champion``: the log is the truth). The endpoint serves it as the config's
``serving.online`` says and ends the test with a ``promote`` row (through ``promote.promote``, gated against
the champion the test compared it with) or an ``online-rollback`` row; both carry the rule's reason. Any row
that moves the champion (a promotion, a rollback) ends a running test too: it compared against a champion that
is no longer live.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

from mlassets.core.registry import projection, promote
from mlassets.core.registry.client import mlflow_client
from mlassets.core.registry.promotion import APPLIED, Entry, PromotionError, PromotionLog
from mlassets.core.registry.versions import RegistryError, check_model, get_version, set_alias

_log = logging.getLogger("mlassets.promotion")  # the promotion log's logger, as promote's

CANDIDATE = "candidate"  # the MLflow alias of the version under test
STARTS = {"canary": "canary-start", "shadow": "shadow-start"}
ROLLED_BACK = "online-rollback"


@dataclass(frozen=True)
class OnlineTest:
    """A running online test: ``candidate`` against ``champion`` in ``mode``, started by log row ``seq``."""

    model: str
    candidate: str
    champion: str
    mode: str  # canary | shadow
    seq: int
    started_at: str
    who: str
    reason: str


def running(name: str, log: PromotionLog | None = None) -> OnlineTest | None:
    """The test the (trusted) log says is running, or None."""
    log = log or PromotionLog()
    projection.refuse_if_damaged(name, log)
    return _running(log.entries(name))


def _running(entries: list[Entry]) -> OnlineTest | None:
    test = None
    for entry in entries:
        mode = next((m for m, action in STARTS.items() if action == entry.action), None)
        if mode is not None:
            test = OnlineTest(entry.model, entry.to_version, entry.from_version or "", mode, entry.seq, entry.at,
                              entry.who, entry.reason)
        elif entry.action == ROLLED_BACK or entry.action in APPLIED:
            test = None
    return test


def start(name: str, version: str | int, mode: str = "canary", *, who: str | None = None, reason: str = "",
          log: PromotionLog | None = None) -> Entry:
    """Start the online test of ``version`` against the live champion; refused (nothing changed) for an unknown
    or ungated version, no champion, the champion itself, a damaged log or a test already running."""
    log = log or PromotionLog()
    if mode not in STARTS:
        raise PromotionError(f"online test mode {mode!r} is not one of {sorted(STARTS)}")
    check_model(name)
    record = get_version(name, promote.version_number(version))
    promote.check_registered(record)
    try:
        basis = promote.serving_basis(record, log)
    except RegistryError as exc:
        raise PromotionError(str(exc)) from None
    for line in promote.sync(name, log):
        _log.warning(line)
    live = promote.live_version(name, log)
    if live is None:
        raise PromotionError(f"model {name!r} has no champion to test v{record.version} against online; promote "
                             "it instead (mlassets promote VERSION)")
    if live == str(record.version):
        raise PromotionError(f"model {name!r} version {record.version} is already the champion (nothing changed)")
    if (test := _running(log.entries(name))) is not None:
        raise PromotionError(f"model {name!r} already has an online test running: v{test.candidate} "
                             f"({test.mode}, seq {test.seq}); promote or roll it back first")
    head = log.head(name)
    fields = {"action": STARTS[mode], "from_version": live, "to_version": str(record.version), "who": who,
              "reason": reason or f"{basis}; {mode} against v{live}"}
    entry = _append(name, log, head, fields)
    set_alias(name, CANDIDATE, str(record.version))
    return entry


def roll_back(name: str, test: OnlineTest, reason: str, *, who: str | None = None,
              log: PromotionLog | None = None) -> Entry:
    """End ``test`` without a promotion: an ``online-rollback`` row; the champion stays. ``PromotionError``
    when the log moved since the test's state was read (another replica or a person decided first)."""
    log = log or PromotionLog()
    projection.refuse_if_damaged(name, log)
    current = _running(log.entries(name))
    if current != test:
        raise PromotionError(f"the online test of {name!r} v{test.candidate} is no longer running (decided "
                             "elsewhere); nothing changed")
    head = log.head(name)
    fields = {"action": ROLLED_BACK, "from_version": test.champion, "to_version": test.candidate, "who": who,
              "reason": reason}
    entry = _append(name, log, head, fields)
    _drop_alias(name)
    return entry


def promote_candidate(name: str, test: OnlineTest, reason: str, *, who: str | None = None,
                      log: PromotionLog | None = None) -> Entry:
    """End ``test`` by promoting its candidate (a ``promote`` row gated against the champion it was tested
    against, from the log's head the test was read at: a decision made elsewhere first wins)."""
    log = log or PromotionLog()
    head = log.head(name)
    if _running(log.entries(name)) != test or head is None:
        raise PromotionError(f"the online test of {name!r} v{test.candidate} is no longer running (decided "
                             "elsewhere); nothing changed")
    entry = promote.promote(name, test.candidate, who=who, reason=reason, gated_against=test.champion,
                            expected_seq=head.seq, log=log)
    _drop_alias(name)
    return entry


def _append(name: str, log: PromotionLog, head: Entry | None, fields: dict[str, str | None]) -> Entry:
    """Append after ``head`` (the row is the lock: a concurrent writer makes this one fail), then the anchor."""
    import sqlalchemy as sa

    from mlassets.core.registry.promotion import GENESIS

    try:
        entry = log.append(name, (head.seq if head else 0) + 1, head.hash if head else GENESIS, fields)
    except sa.exc.IntegrityError:
        raise PromotionError(f"the promotion log of {name!r} moved while this was decided; nothing changed "
                             "(read it again: mlassets online status)") from None
    projection.project(name, log)
    return entry


def _drop_alias(name: str) -> None:
    with contextlib.suppress(Exception):  # the alias is a courtesy for MLflow's UI; the log is the truth
        mlflow_client().delete_registered_model_alias(name, CANDIDATE)
