"""Stage 1, data: where a data version comes from and whether it may be trained on.

``store`` keeps repositories of objects with immutable commits (a commit id is a data version; ``local`` by
default, ``lakefs`` beyond one machine); ``sources`` produce a partition's raw tables; ``ingest`` lands them on
the watched branch through one store transaction, only after ``schema`` and ``partition_checks`` passed (with
per-partition ``summary`` objects, so a new version never re-reads its history); ``snapshot`` records a version
and runs the same blocking checks on what it adds; ``raw`` is the repository layout and the reads.
"""
