"""Data versions by the readable key every other view uses (``2013-04.ff6dd3fa``), never by hex: from the name
MLflow holds for a version (``mlassets.version_name``: ``2013-04 · ff6dd3fa``) and its data commit."""

from __future__ import annotations

from mlassets.core import naming
from mlassets.core.data.version_keys import version_key

NAME_TAG = "mlassets.version_name"  # on training runs and model versions (mlassets.defs.lookup)


def readable_key(label: str, commit: str) -> str:
    """``2013-04.ff6dd3fa`` from the name ``2013-04 · ff6dd3fa`` and the commit; the name itself when it only counts
    some partitions (``… +3 more``); ``data.ff6dd3fa`` when the version has no name; "" without a commit."""
    if not commit:
        return ""
    parts, sep, _ = label.rpartition(naming.SEPARATOR)
    if sep and "more" not in parts:
        try:
            return version_key(parts.split(", "), commit)
        except ValueError:
            return label
    try:
        return version_key([], commit)
    except ValueError:  # not a store commit id (an old or foreign record): its short form
        return commit[:12]


def keys_by_commit(tag_sets: list[dict[str, str]]) -> dict[str, str]:
    """Full data commit -> readable key, from tag sets that hold ``data_commit`` (and a name where recorded)."""
    keys: dict[str, str] = {}
    for tags in tag_sets:
        commit = tags.get("data_commit", "")
        if commit and (commit not in keys or tags.get(NAME_TAG)):
            keys[commit] = readable_key(tags.get(NAME_TAG, ""), commit)
    return keys


def key_for_prefix(keys: dict[str, str], prefix: str) -> str:
    """The readable key of the commit starting with ``prefix`` (a run folder's 16 digits); ``prefix`` if unknown."""
    return next((key for commit, key in keys.items() if prefix and commit.startswith(prefix)), prefix)
