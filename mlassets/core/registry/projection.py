"""The promotion log's projection onto MLflow: the ``champion`` alias and the anchor of the log's head.

The log is the truth. After each committed row, the alias is set to the log's live version and the registered
model's tag ``mlassets.promotion_log_head`` to the log's head (``seq:hash``); a promotion killed between the
row and these writes leaves them *behind* the log, which the next command repairs from the log, saying so.

What the chain and the anchor can prove: every row links to the one before it (a rewritten or deleted row
breaks the chain), and the anchor, kept in another service than the log, records how far the chain reached:
a deleted or rewritten tail (the newest rows) no longer reaches the anchored seq and hash. What they cannot
prove: who wrote a row, or that rows appended after the anchor by someone who can write both the log and
MLflow are genuine; an anchor behind the log with an intact chain looks like an interrupted promotion.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlassets.core import settings
from mlassets.core.registry.peek import ModelView, read_model
from mlassets.core.registry.promotion import Entry, PromotionError, PromotionLog
from mlassets.core.registry.versions import CHALLENGER, CHAMPION, alias_version, mlflow_client, set_alias

ANCHOR_TAG = "mlassets.promotion_log_head"


@dataclass
class LogState:
    """What ``inspect`` found: tampering (``problems``: refuse to act) and a projection behind the log
    (``drift``: repaired from the log)."""

    live: str | None  # the champion by the log
    head: Entry | None
    problems: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    alias: str | None = None
    anchor: tuple[int, str] | None = None

    @property
    def consistent(self) -> bool:
        return not self.problems and not self.drift


def _anchor(model: ModelView | None) -> tuple[int, str] | None:
    seq, _, digest = (model.tags.get(ANCHOR_TAG, "") if model else "").partition(":")
    return (int(seq), digest) if seq.isdigit() and digest else None


def anchored(name: str) -> bool:
    """Whether ``name``'s promotions are logged by mlassets (its anchor tag exists in MLflow)."""
    return _anchor(read_model(name)) is not None


def inspect(name: str, log: PromotionLog) -> LogState:
    """Check the chain, the anchored head and the alias of ``name`` against each other; change nothing.

    The projection is read before the log: a promotion commits its row before it moves the alias and the
    anchor, so a concurrent promotion can make them look behind the log (repaired, harmless) but never
    ahead of it; an anchor ahead of the log is then only ever deleted rows."""
    model = read_model(name)  # alias and anchor in one read, without importing MLflow (``history`` is fast)
    entries = log.entries(name)
    live = log.live(name)
    state = LogState(live=live.to_version if live else None, head=entries[-1] if entries else None)
    state.problems = log.verify(name)
    state.alias = model.aliases.get(CHAMPION) if model else None
    state.anchor = _anchor(model)
    head_seq = state.head.seq if state.head else 0
    if state.anchor is not None:
        seq, digest = state.anchor
        at = next((e for e in entries if e.seq == seq), None)
        if seq > head_seq:
            state.problems.append(f"promotion log of {name!r} ends at seq {head_seq}, but its anchor in MLflow "
                                  f"says seq {seq} was written: rows were deleted")
        elif at is not None and at.hash != digest:
            state.problems.append(f"promotion log of {name!r}, seq {seq}: the row was rewritten (its hash "
                                  f"{at.hash[:12]} is not the anchored {digest[:12]})")
        elif seq < head_seq:
            state.drift.append(f"the anchor of {name!r} is at seq {seq}, the log at seq {head_seq}")
    elif head_seq:
        state.drift.append(f"the promotion log of {name!r} has no anchor in MLflow yet (log at seq {head_seq})")
    if state.alias != state.live:
        state.drift.append(f"the champion alias of {name!r} points at {_v(state.alias)} but the promotion log "
                           f"says {_v(state.live)} is live")
    return state


def repair_hint(name: str, log: PromotionLog) -> str:
    """What repairs a damaged log: nothing automatic (the rows it lost or that were changed are not kept
    anywhere else); a person restores it."""
    return (f"nothing automatic repairs a damaged promotion log: restore {settings.mask_url(log.url)} from a "
            "backup taken before the damaged row, or, if the log is right and only MLflow's tag "
            f"{ANCHOR_TAG} of {name!r} was changed, set that tag back to the log's head (seq:hash); then run "
            "`mlassets history` again")


def refuse_if_damaged(name: str, log: PromotionLog, state: LogState | None = None) -> LogState:
    """``PromotionError`` naming the first problem (the sentence ``history`` prints) when the chain or the
    anchor of ``name``'s log is broken; otherwise the state. Every reader that trusts a row calls this first."""
    state = state or inspect(name, log)
    if state.problems:
        hint = repair_hint(name, log)  # its first letter up, the path and names in it as they are
        raise PromotionError(f"{state.problems[0]}; refusing to act on a damaged log (nothing changed). "
                             f"{hint[:1].upper()}{hint[1:]}")
    return state


def _v(version: str | None) -> str:
    return f"v{version}" if version else "no version"


def project(name: str, log: PromotionLog) -> None:
    """Make the alias and the anchor what the log says now (after a row committed, or to repair); a ``challenger``
    alias on the new champion is removed (it named the version while it waited)."""
    live = log.live(name)
    if live is None:
        if alias_version(name, CHAMPION) is not None:
            mlflow_client().delete_registered_model_alias(name, CHAMPION)
    else:
        set_alias(name, CHAMPION, live.to_version)
        waiting = alias_version(name, CHALLENGER)
        if waiting is not None and str(waiting.version) == live.to_version:  # it waited for this: no longer waits
            mlflow_client().delete_registered_model_alias(name, CHALLENGER)
    head = log.head(name)
    if head is not None:
        mlflow_client().set_registered_model_tag(name, ANCHOR_TAG, f"{head.seq}:{head.hash}")


def repair(name: str, log: PromotionLog, state: LogState | None = None) -> list[str]:
    """Repair a projection that is behind the log (never tampering: ``state.problems`` must be empty); one
    sentence per repair."""
    state = state or inspect(name, log)
    if state.problems or not state.drift:
        return []
    project(name, log)
    return [f"repaired from the promotion log: {d}" for d in state.drift]
