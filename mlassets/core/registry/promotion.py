"""The promotion log: every promotion, rollback and forced promotion, appended; it is also the lock.

One table, primary key ``(model, seq)``: a promotion decided when the log stood at ``seq = N`` appends row
``N + 1``. Of two racing promotions exactly one insert succeeds; the other gets the key violation, records
its attempt as a ``<action>-lost-race`` row and leaves the alias alone. The alias (and the anchor of the log's
head) are set from the log after the row commits (``projection``), so they can lag it but never run ahead of
it. Each row carries
``hash = sha256(prev_hash + canonical JSON of the row)``: a silent rewrite breaks the chain (``verify``).

sqlite at ``$MLASSETS_HOME/promotions.db`` by default; ``$MLASSETS_PROMOTION_DB`` takes any SQLAlchemy URL
(``postgresql://...``) for more than one machine.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import sqlalchemy as sa

from mlassets.core import paths, settings

PROMOTE, FORCE, ROLLBACK = "promote", "force-promote", "rollback"
APPLIED = (PROMOTE, FORCE, ROLLBACK)  # rows that moved the alias; others record attempts
LOST = "-lost-race"
GENESIS = "0" * 64
_META = sa.MetaData()


def _table(name: str) -> sa.Table:
    return sa.Table(
        name, _META,
        sa.Column("model", sa.String(250), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),  # (model, seq) is the lock
        sa.Column("action", sa.String(40), nullable=False),
        sa.Column("from_version", sa.String(40), nullable=True),
        sa.Column("to_version", sa.String(40), nullable=False),
        sa.Column("who", sa.String(250), nullable=False),
        sa.Column("at", sa.String(40), nullable=False),  # UTC ISO 8601, microseconds
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
    )


TABLE = _table("promotions")
REGISTRATIONS = _table("registrations")  # the same chain for the versions mlassets registered (``registrations``)


class PromotionError(ValueError):
    """A refused promotion or rollback (bad input, ungated version, damaged log); nothing was changed."""


class LostRace(PromotionError):
    """Another promotion took the sequence number first; this attempt is recorded, the alias untouched."""

    def __init__(self, message: str, attempt: Entry, winner: Entry | None) -> None:
        super().__init__(message)
        self.attempt, self.winner = attempt, winner


@dataclass(frozen=True)
class Entry:
    model: str
    seq: int
    action: str
    from_version: str | None
    to_version: str
    who: str
    at: str
    reason: str
    prev_hash: str
    hash: str

    @property
    def applied(self) -> bool:
        return self.action in APPLIED

    def expected_hash(self) -> str:
        fields = {k: v for k, v in asdict(self).items() if k != "hash"}
        canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256((self.prev_hash + canonical).encode()).hexdigest()


def default_url() -> str:
    """``$MLASSETS_PROMOTION_DB``; embedded: sqlite in the home (production: the variable is required)."""
    return settings.service_env(settings.PROMOTION_ENV) or f"sqlite:///{paths.home() / 'promotions.db'}"


def current_user() -> str:
    """Who a row names when the caller gives no principal (``core.identity.access.claimed_user``)."""
    from mlassets.core.identity.access import claimed_user

    return claimed_user()


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def parse_time(text: str) -> datetime:
    """An ISO 8601 time; without a zone it is UTC."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise PromotionError(f"time {text!r} is not ISO 8601 (e.g. 2026-01-31T12:00:00Z)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class PromotionLog:
    """The append-only table behind ``mlassets history``; see the module docstring."""

    table: sa.Table = TABLE

    def __init__(self, url: str | None = None, busy_timeout_s: float = 60.0) -> None:
        from sqlalchemy.pool import NullPool

        self.url = url or default_url()
        sqlite = self.url.startswith("sqlite")
        self.engine = sa.create_engine(
            self.url, poolclass=NullPool, connect_args={"timeout": busy_timeout_s} if sqlite else {}
        )
        if sqlite:  # SQLAlchemy's recipe: every transaction takes the write lock up front, waiting for it
            sa.event.listen(self.engine, "connect", lambda dbapi, _: setattr(dbapi, "isolation_level", None))
            sa.event.listen(self.engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
        try:
            _META.create_all(self.engine)
        except sa.exc.DatabaseError:  # created concurrently (servers without transactional DDL locks)
            if not sa.inspect(self.engine).has_table(self.table.name):
                raise

    def entries(self, model: str | None = None) -> list[Entry]:
        table = self.table
        query = sa.select(table).order_by(table.c.model, table.c.seq)
        if model is not None:
            query = query.where(table.c.model == model)
        with self.engine.begin() as conn:
            return [Entry(**row._mapping) for row in conn.execute(query)]

    def head(self, model: str) -> Entry | None:
        with self.engine.begin() as conn:
            return self._head(conn, model)

    def _head(self, conn: sa.Connection, model: str) -> Entry | None:
        table = self.table
        row = conn.execute(sa.select(table).where(table.c.model == model).order_by(table.c.seq.desc()).limit(1))
        found = row.first()
        return Entry(**found._mapping) if found else None

    def live(self, model: str, at: datetime | None = None) -> Entry | None:
        """The applied row in force at ``at`` (now by default): the newest at or before it."""
        rows = [e for e in self.entries(model) if e.applied]
        if at is not None:
            rows = [e for e in rows if datetime.fromisoformat(e.at) <= at]
        return rows[-1] if rows else None

    def lineage(self, model: str) -> list[str]:
        """Champions a rollback can return to, oldest first; the last one is live."""
        stack: list[str] = []
        for entry in self.entries(model):
            if entry.action == ROLLBACK and stack:
                stack.pop()
            elif entry.action in (PROMOTE, FORCE):
                stack.append(entry.to_version)
        return stack

    def forced_reason(self, model: str, version: str) -> str | None:
        """The reason of the newest forced promotion of ``version``, if one was recorded with a reason."""
        forced = [e for e in self.entries(model) if e.action == FORCE and e.to_version == str(version)]
        return forced[-1].reason if forced and forced[-1].reason.strip() else None

    def verify(self, model: str | None = None) -> list[str]:
        """Recompute every chain; one line per model naming its first bad row (empty: intact)."""
        by_model: dict[str, list[Entry]] = {}
        for entry in self.entries(model):
            by_model.setdefault(entry.model, []).append(entry)
        problems = []
        for name, rows in by_model.items():
            previous = GENESIS
            for expected_seq, entry in enumerate(rows, 1):
                where = f"promotion log of {name!r}, seq {entry.seq}"
                if entry.seq != expected_seq:
                    problems.append(f"{where}: seq {expected_seq} is missing (rows were deleted)")
                elif entry.prev_hash != previous:
                    problems.append(f"{where}: prev_hash does not match seq {expected_seq - 1} (a row was rewritten)")
                elif entry.expected_hash() != entry.hash:
                    problems.append(f"{where}: the row was changed after it was written (hash mismatch)")
                else:
                    previous = entry.hash
                    continue
                break
        return problems

    def append(self, model: str, seq: int, prev_hash: str, fields: dict[str, str | None]) -> Entry:
        """Insert row ``seq``; ``sa.exc.IntegrityError`` when it exists (another writer took it first)."""
        entry = _entry(model, seq, prev_hash, fields)
        deadline = time.monotonic() + 60
        while True:
            try:
                with self.engine.begin() as conn:
                    conn.execute(self.table.insert().values(**asdict(entry)))
                return entry
            except sa.exc.OperationalError as exc:  # sqlite busy beyond its timeout: retry the same seq
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise PromotionError(f"promotion log {self.url} is busy: {exc.orig}") from exc
                time.sleep(0.05)

    def append_next(self, model: str, fields: dict[str, str | None]) -> Entry:
        """Append after whatever is the head now (used to record attempts, which take no lock)."""
        for _ in range(20):
            try:
                with self.engine.begin() as conn:
                    head = self._head(conn, model)
                    entry = _entry(model, head.seq + 1 if head else 1, head.hash if head else GENESIS, fields)
                    conn.execute(self.table.insert().values(**asdict(entry)))
                return entry
            except sa.exc.IntegrityError:
                continue
        raise PromotionError(f"promotion log {self.url}: could not append after 20 attempts")


def _entry(model: str, seq: int, prev_hash: str, fields: dict[str, str | None]) -> Entry:
    entry = Entry(model=model, seq=seq, action=str(fields["action"]), from_version=fields.get("from_version"),
                  to_version=str(fields["to_version"]), who=str(fields.get("who") or current_user()),
                  at=now(), reason=str(fields.get("reason") or ""), prev_hash=prev_hash, hash="")
    return Entry(**{**asdict(entry), "hash": entry.expected_hash()})


def format_history(entries: list[Entry], families: dict[str, str] | None = None) -> str:
    """The log as a table: seq, time, action, from -> to, the family of the version it moved to (``families``:
    version -> model family, from the registry records), who, why."""
    if not entries:
        return "(no promotions recorded)"
    families = families or {}
    header = ["seq", "at (UTC)", "action", "from", "to", "family", "who", "why"]
    lines = [[str(e.seq), e.at[:19].replace("T", " "), e.action, f"v{e.from_version}" if e.from_version else "-",
              f"v{e.to_version}", families.get(e.to_version, "-"), e.who, e.reason or "-"] for e in entries]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header[:-1])]
    out = []
    for line in [header, *lines]:
        out.append("  ".join(c.ljust(w) for c, w in zip(line, [*widths, 0], strict=True)).rstrip())
    return "\n".join(out)
