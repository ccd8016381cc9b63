"""Data-version partition keys, readable and sortable: ``2013-03.6870220f``. One mapping, both ways.

A data version is a commit of the watched branch, and its full commit id stays its permanent identity (records,
registry tags, MLflow). What Dagster lists as the version's partition key is the partitions the commit added
(the first three, then a count) and the first ``SHORT`` hex digits of its id; a commit whose added partition is
unknown (made outside mlassets, or adding nothing) is ``data.<short id>``. A key is a valid Dagster partition
key and a safe store ref and file name (letters, digits, ``_``, ``-`` and one ``.``).

Homes made before keys were readable used the full commit id as the key: such a key still resolves, to itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from mlassets.core.config import PipelineConfig
from mlassets.core.data.raw import WATCHED_BRANCH, changed_partitions, raw_repo
from mlassets.core.data.store import StoreError, VersionedStore
from mlassets.core.data.store.base import Commit

SHORT = 8  # hex digits of the commit id in a key
SHOWN = 3  # partitions named in a key; more are counted ("_4more")
UNKNOWN = "data"  # the label of a commit whose added partition is unknown
MAX_LABEL = 100
_KEY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_-]{0,99})\.([0-9a-f]{8,64})$")
_COMMIT = re.compile(r"^[0-9a-f]{40,64}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_maps: dict[tuple[str, str, str], dict[str, str]] = {}  # (store, repo, head) -> key -> commit id


def version_key(partitions: Sequence[str], commit: str) -> str:
    """``2013-03.6870220f`` (one partition), ``2013-01_2013-02.6870220f``, ``2013-01_2013-02_2013-03_4more.…``;
    ``data.6870220f`` when no partition is known."""
    if not _COMMIT.fullmatch(commit):
        raise ValueError(f"data version {commit[:80]!r} is not a store commit id (40-64 lowercase hex digits)")
    named = [_UNSAFE.sub("-", p).strip("-") for p in partitions if p]
    named = [p for p in named if p]
    label = "_".join(named[:SHOWN]) + (f"_{len(named) - SHOWN}more" if len(named) > SHOWN else "")
    return f"{label[:MAX_LABEL].strip('_-') or UNKNOWN}.{commit[:SHORT]}"


def is_commit_id(key: str) -> bool:
    """A key of a home made before readable keys: the full commit id."""
    return isinstance(key, str) and bool(_COMMIT.fullmatch(key))


def shown(key: str) -> str:
    """A key as tables print it: readable keys whole, an old home's commit-id key by its first 12 digits (which
    ``--version`` takes)."""
    return key[:12] if is_commit_id(key) else key


def check_version_key(key: str) -> str:
    """A data-version partition key (readable, or an old full commit id), checked before it names any path."""
    if not isinstance(key, str) or not (_KEY.fullmatch(key) or _COMMIT.fullmatch(key)):
        raise ValueError(f"data version {str(key)[:80]!r} is not a data-version key (e.g. 2013-03.6870220f) "
                         "or a store commit id")
    return key


def added_partitions(store: VersionedStore, cfg: PipelineConfig, commit: Commit | str) -> list[str]:
    """The partitions a commit added or changed: its ingest's metadata, else its diff against its parent; empty
    when the store does not know the commit."""
    try:
        info = commit if isinstance(commit, Commit) else store.get_commit(raw_repo(cfg), commit)
        if info.metadata.get("partition"):
            return [info.metadata["partition"]]
        return changed_partitions(store, cfg, info.id, info.parents[0] if info.parents else "")
    except StoreError:
        return []


def key_of(store: VersionedStore, cfg: PipelineConfig, commit: Commit | str) -> str:
    """The partition key of the data version at ``commit``."""
    commit_id = commit.id if isinstance(commit, Commit) else commit
    return version_key(added_partitions(store, cfg, commit), commit_id)


def _store_id(store: VersionedStore) -> str:
    settings = getattr(store, "settings", None)
    return str(getattr(store, "root", "") or getattr(settings, "endpoint", "") or id(store))


def version_map(store: VersionedStore, cfg: PipelineConfig) -> dict[str, str]:
    """Key -> full commit id of every commit of the watched branch (read once per head, then remembered)."""
    repo = raw_repo(cfg)
    try:
        head = store.resolve(repo, WATCHED_BRANCH)
    except StoreError:
        return {}
    cache_key = (_store_id(store), repo, head)
    if cache_key not in _maps:
        _maps[cache_key] = {key_of(store, cfg, c): c.id for c in store.log(repo, head)}
    return _maps[cache_key]


def resolve_key(store: VersionedStore, cfg: PipelineConfig, key: str) -> str:
    """The full commit id a data-version key names; ``ValueError`` naming the key when none of the watched
    branch's commits has it. An old key (a full commit id) names itself."""
    if is_commit_id(check_version_key(key)):
        return key
    commit = version_map(store, cfg).get(key)
    if commit is None:
        raise ValueError(f"data version {key!r}: no commit of {raw_repo(cfg)}@{WATCHED_BRANCH} has this key")
    return commit


def matching(keys: Iterable[str], commits: dict[str, str], wanted: str) -> list[str]:
    """The keys ``wanted`` names (the CLI's ``--version``): the key itself, its partition label (``2013-03``), its
    full commit id, or a prefix of at least ``SHORT`` characters of the key or the commit id."""
    keys = list(keys)
    if wanted in keys:
        return [wanted]

    def names(key: str) -> bool:
        commit = commits.get(key, "")
        return (key.rsplit(".", 1)[0] == wanted or commit == wanted
                or len(wanted) >= SHORT and (key.startswith(wanted) or commit.startswith(wanted)))

    return [k for k in keys if names(k)]
