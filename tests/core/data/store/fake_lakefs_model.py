"""The in-memory state of the fake lakeFS: repositories, branches with staging areas, commits, tags, blobs.

It follows lakeFS's semantics where the store depends on them: a repository starts with one
"Repository created" commit; commit ids are 64-hex content hashes; a branch read includes its staged
(uncommitted) changes; a commit with nothing staged fails with "no changes" unless ``allow_empty``; merges
are three-way from the merge base, make a commit with parents (destination, source) (only destination for a
squash merge), refuse a dirty destination, and fail with 409 on a conflict; objects are compared by checksum.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field


class LakeFSError(Exception):
    """An API error: HTTP status and the ``message`` of lakeFS's Error body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclass(frozen=True)
class Entry:
    address: str
    checksum: str
    size: int
    mtime: int
    metadata: Mapping[str, str]
    content_type: str


Tree = dict[str, Entry]


@dataclass(frozen=True)
class Commit:
    id: str
    parents: tuple[str, ...]
    message: str
    metadata: Mapping[str, str]
    creation_date: int
    tree: Mapping[str, Entry]
    meta_range_id: str
    generation: int


@dataclass
class Branch:
    head: str
    hidden: bool = False
    staging: dict[str, Entry | None] = field(default_factory=dict)  # None = tombstone


@dataclass
class Repo:
    name: str
    namespace: str
    default_branch: str
    creation_date: int
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, Branch] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)


def meta_range_id(tree: Mapping[str, Entry]) -> str:
    return hashlib.sha256(json.dumps(sorted((p, e.checksum) for p, e in tree.items())).encode()).hexdigest()


class Model:
    """All repositories; one lock serialises every operation (lakeFS's branch updates are atomic)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.repos: dict[str, Repo] = {}
        self.blobs: dict[str, bytes] = {}

    def repo(self, name: str) -> Repo:
        if name not in self.repos:
            raise LakeFSError(404, f"repository not found: {name}")
        return self.repos[name]

    def branch(self, repo: str, name: str) -> Branch:
        r = self.repo(repo)
        if name not in r.branches:
            raise LakeFSError(404, f"branch not found: {name}")
        return r.branches[name]

    def resolve(self, repo: str, ref: str) -> str:
        """Branch, then tag, then commit id (lakeFS's order for a plain name)."""
        r = self.repo(repo)
        if ref in r.branches:
            return r.branches[ref].head
        if ref in r.tags:
            return r.tags[ref]
        if ref in r.commits:
            return ref
        raise LakeFSError(404, f"reference not found: {ref}")

    def commit(self, repo: str, ref: str) -> Commit:
        return self.repo(repo).commits[self.resolve(repo, ref)]

    def tree(self, repo: str, ref: str) -> Tree:
        """What a read at ``ref`` sees: for a branch, its head plus its staged changes."""
        tree = dict(self.commit(repo, ref).tree)
        branch = self.repo(repo).branches.get(ref)
        for path, entry in (branch.staging.items() if branch else ()):
            if entry is None:
                tree.pop(path, None)
            else:
                tree[path] = entry
        return tree

    def new_commit(self, r: Repo, parents: tuple[str, ...], tree: Mapping[str, Entry], message: str,
                   metadata: Mapping[str, str]) -> Commit:
        date = int(time.time())
        mr = meta_range_id(tree)
        generation = 1 + max((r.commits[p].generation for p in parents), default=0)
        cid = hashlib.sha256(json.dumps([parents, message, sorted(metadata.items()), date, mr]).encode()).hexdigest()
        commit = Commit(cid, parents, message, dict(metadata), date, dict(tree), mr, generation)
        return r.commits.setdefault(cid, commit)

    # ------------------------------------------------------------ operations

    def create_repo(self, name: str, namespace: str, default_branch: str) -> Repo:
        if name in self.repos:
            raise LakeFSError(409, f"repository already exists: {name}")
        if any(r.namespace == namespace for r in self.repos.values()):
            raise LakeFSError(400, f"storage namespace already in use: {namespace}")
        r = Repo(name, namespace, default_branch, int(time.time()))
        root = self.new_commit(r, (), {}, "Repository created", {})
        r.branches[default_branch] = Branch(root.id)
        self.repos[name] = r
        return r

    def put(self, repo: str, branch: str, path: str, data: bytes, metadata: Mapping[str, str],
            content_type: str, if_none_match: str | None, if_match: str | None) -> Entry:
        b = self.branch(repo, branch)
        current = self.tree(repo, branch).get(path)
        if if_none_match == "*" and current is not None:
            raise LakeFSError(412, f"object already exists: {path}")
        if if_match is not None and (current is None or current.checksum != if_match.strip('"')):
            raise LakeFSError(412, f"object ETag does not match: {path}")
        address = f"{self.repo(repo).namespace.rstrip('/')}/data/{uuid.uuid4().hex}"
        self.blobs[address] = data
        entry = Entry(address, hashlib.md5(data).hexdigest(), len(data), int(time.time()), dict(metadata),
                      content_type)
        b.staging[path] = entry
        return entry

    def delete(self, repo: str, branch: str, path: str) -> None:
        """Tombstone ``path`` (missing objects are not an error, as in lakeFS)."""
        b = self.branch(repo, branch)
        if path in self.commit(repo, branch).tree:
            b.staging[path] = None
        else:
            b.staging.pop(path, None)

    def commit_branch(self, repo: str, branch: str, message: str, metadata: Mapping[str, str],
                      allow_empty: bool) -> Commit:
        r, b = self.repo(repo), self.branch(repo, branch)
        tree = self.tree(repo, branch)
        if meta_range_id(tree) == r.commits[b.head].meta_range_id and not allow_empty:
            raise LakeFSError(400, "commit: no changes")
        c = self.new_commit(r, (b.head,), tree, message, metadata)
        b.head, b.staging = c.id, {}
        return c

    def ancestors(self, repo: str, start: str) -> Iterator[str]:
        commits, seen, queue = self.repo(repo).commits, {start}, deque([start])
        while queue:
            cid = queue.popleft()
            yield cid
            for p in commits[cid].parents:
                if p not in seen:
                    seen.add(p)
                    queue.append(p)

    def merge_base(self, repo: str, left: str, right: str) -> str:
        right_side = set(self.ancestors(repo, right))
        base = next((c for c in self.ancestors(repo, left) if c in right_side), None)
        if base is None:
            raise LakeFSError(400, "no merge base")
        return base

    def merge(self, repo: str, source: str, destination: str, message: str, metadata: Mapping[str, str],
              strategy: str | None, squash: bool, allow_empty: bool) -> Commit:
        r, dest = self.repo(repo), self.branch(repo, destination)
        theirs = self.resolve(repo, source)
        if dest.staging:
            raise LakeFSError(400, f"branch has uncommitted changes (dirty branch): {destination}")
        base = self.merge_base(repo, theirs, dest.head)
        b, t, o = (r.commits[c] for c in (base, theirs, dest.head))
        if b.meta_range_id == t.meta_range_id and not allow_empty:
            raise LakeFSError(400, "no changes")
        merged: Tree = {}
        conflicts = []
        for path in sorted(b.tree.keys() | t.tree.keys() | o.tree.keys()):
            bs, ts, os_ = (x.tree.get(path) for x in (b, t, o))
            ids = [e.checksum if e else None for e in (bs, ts, os_)]
            if ids[1] == ids[2] or ids[1] == ids[0]:
                result = os_
            elif ids[2] == ids[0] or strategy == "source-wins":
                result = ts
            elif strategy == "dest-wins":
                result = os_
            else:
                conflicts.append(path)
                continue
            if result is not None:
                merged[path] = result
        if conflicts:
            raise LakeFSError(409, "conflict found")
        if meta_range_id(merged) == o.meta_range_id and not allow_empty:
            raise LakeFSError(400, "no changes")
        parents = (dest.head,) if squash else (dest.head, theirs)
        c = self.new_commit(r, parents, merged, message or f"Merge '{source}' into '{destination}'", metadata)
        dest.head = c.id
        return c
