"""When a landing sensor reads a delivery: only once it is whole, and only once it is ingested.

A delivery is whole when its stamp (the size and mtime of each of its files) is unchanged across the settle
interval (``automation.landing_settle_s``) and while its content is read; renaming a finished copy into place
(``cp x landing/.x.tmp && mv landing/.x.tmp landing/2024-01.csv``) is the safe way to deliver, since hidden and
``.tmp`` names are never read. What the sensor requests is pending until its ingest run ends (``resolve``): a run
that succeeded ingested it; one that failed (the file changed after the sensor read it, or its checks refused it)
did not, and the delivery is taken again once its content changes and it is whole again (a writer that stalled
longer than the settle interval delivers the whole file after all). A delivery whose content changes after it WAS
ingested is NOT a new version: the sensor says so once, and ``mlassets ingest --partition KEY --from PATH`` makes it
one when the user means it.

The cursor (a JSON object kept by Dagster) holds, per key: ``KEY`` the fingerprint ingested, ``pending:KEY`` the
fingerprint requested and not yet ingested or refused (earlier releases wrote the requested one under ``KEY``),
``refused:KEY`` the fingerprint whose ingest run failed, ``stamp:KEY`` ``[stamp, first seen]``, ``read:KEY`` the
stamp last read, ``changed:KEY`` the changed fingerprint already reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mlassets.core.automation.landing import Delivery, Refused, fingerprint


@dataclass
class Decision:
    ready: list[tuple[Delivery, str]] = field(default_factory=list)  # to ingest now, with the fingerprint read
    waiting: list[Delivery] = field(default_factory=list)  # not yet unchanged for the settle interval
    changed: list[Delivery] = field(default_factory=list)  # changed after it was ingested: reported, not ingested
    held: list[Delivery] = field(default_factory=list)  # changed while its requested ingest has not ended: later
    refused: list[tuple[Delivery, str]] = field(default_factory=list)  # became unreadable while read


def decide(deliveries: list[Delivery], cursor: dict, now: float, settle_s: float,
           restamp: Callable[[Delivery], str]) -> Decision:
    """What to do with each delivery at this tick; ``cursor`` is updated in place. ``restamp`` stamps a delivery
    again after its content was read (a file still being written changes its stamp meanwhile)."""
    out = Decision()
    for d in deliveries:
        first = cursor.get(f"stamp:{d.key}")
        if first is None or first[0] != d.stamp:
            cursor[f"stamp:{d.key}"] = [d.stamp, now]
            first = [d.stamp, now]
        if now - first[1] < settle_s:
            out.waiting.append(d)
            continue
        if cursor.get(f"read:{d.key}") == d.stamp:
            continue  # read already, unchanged since
        try:
            digest = fingerprint(d.path)
            again = restamp(d)
        except (Refused, OSError) as exc:
            out.refused.append((d, str(exc)))
            continue
        if again != d.stamp:  # written while read: wait a settle interval from now
            cursor[f"stamp:{d.key}"] = [again, now]
            out.waiting.append(d)
            continue
        cursor[f"read:{d.key}"] = d.stamp
        ingested, pending = cursor.get(d.key), cursor.get(f"pending:{d.key}")
        if ingested is not None:
            if ingested != digest and cursor.get(f"changed:{d.key}") != digest:
                cursor[f"changed:{d.key}"] = digest
                out.changed.append(d)
        elif pending is not None:
            if pending != digest and cursor.get(f"changed:{d.key}") != digest:
                cursor[f"changed:{d.key}"] = digest
                out.held.append(d)  # judged again when that run ends (``resolve`` forgets the read)
        elif cursor.get(f"refused:{d.key}") != digest:  # new, or changed since its ingest was refused
            cursor[f"pending:{d.key}"] = digest
            out.ready.append((d, digest))
    return out


def pending(cursor: dict) -> dict[str, str]:
    """The deliveries requested whose ingest has not been seen to end: key -> fingerprint."""
    return {k.removeprefix("pending:"): v for k, v in cursor.items() if k.startswith("pending:")}


def resolve(cursor: dict, key: str, ingested: bool) -> None:
    """The ingest run of ``key``'s pending delivery ended: it was ingested, or refused (taken again once its content
    changes and it is whole). The delivery is read again at the next tick, to judge what lies there now."""
    digest = cursor.pop(f"pending:{key}")
    cursor[key if ingested else f"refused:{key}"] = digest
    if ingested:
        cursor.pop(f"refused:{key}", None)
    for stale in (f"read:{key}", f"changed:{key}"):
        cursor.pop(stale, None)
