"""New commits of a watched branch since a cursor: each one is a data version, handled oldest first."""

from __future__ import annotations

from dataclasses import dataclass

from mlassets.core.data.store import Commit, NotFound, VersionedStore

LOOKBACK = 1000  # commits read back from the head when the cursor is not among them (a first start)


@dataclass(frozen=True)
class NewCommits:
    commits: list[Commit]  # oldest first; never the repository's root (it holds no data)
    head: str  # the next cursor ("" while the repository does not exist)
    cursor_found: bool  # False: the cursor was not in the branch's history (a first start, or history rewritten)


def new_commits(store: VersionedStore, repo: str, branch: str, cursor: str | None) -> NewCommits:
    """The commits on ``branch``'s first-parent history after ``cursor`` (all of them on a first start)."""
    try:
        log = store.log(repo, branch, limit=LOOKBACK)
    except NotFound:  # no repository yet: nothing committed
        log = []
    if not log:
        return NewCommits([], cursor or "", cursor_found=not cursor)
    fresh: list[Commit] = []
    found = False
    for commit in log:
        if cursor and commit.id == cursor:
            found = True
            break
        if commit.parents:  # the root commit of a repository holds no data
            fresh.append(commit)
    return NewCommits(list(reversed(fresh)), log[0].id, cursor_found=found or not cursor)
