"""When a landing sensor reads a delivery: only once it is whole, and only once.

A delivery is whole when its stamp (the size and mtime of each of its files) is unchanged across the settle
interval (``automation.landing_settle_s``) and while its content is read; renaming a finished copy into place
(``cp x landing/.x.tmp && mv landing/.x.tmp landing/2024-01.csv``) is the safe way to deliver, since hidden and
``.tmp`` names are never read. A delivery whose content changes after it was ingested is NOT a new version: the
sensor says so once, and ``mlassets ingest --partition KEY --from PATH`` makes it one when the user means it.

The cursor (a JSON object kept by Dagster) holds, per key: ``KEY`` the fingerprint ingested (the format of
earlier releases), ``stamp:KEY`` ``[stamp, first seen]``, ``read:KEY`` the stamp last read, ``changed:KEY``
the changed fingerprint already reported.
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
        ingested = cursor.get(d.key)
        if ingested is None:
            cursor[d.key] = digest
            out.ready.append((d, digest))
        elif ingested != digest and cursor.get(f"changed:{d.key}") != digest:
            cursor[f"changed:{d.key}"] = digest
            out.changed.append(d)
    return out
