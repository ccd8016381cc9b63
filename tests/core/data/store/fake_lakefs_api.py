"""The fake lakeFS's operations: HTTP request -> ``Model`` call -> the JSON body lakeFS's spec describes.

``ROUTES`` lists every operation the fake serves, by the spec's own method and path template (a test checks
each one exists in ``swagger.yml``). Handlers return ``(status, body)``; errors raise ``LakeFSError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from werkzeug.wrappers import Request

from tests.core.data.store.fake_lakefs_model import Branch, Commit, LakeFSError, Model, Repo
from tests.core.data.store.fake_lakefs_objects import (
    delete_object,
    get_object,
    list_objects,
    stat_object,
    upload_object,
)
from tests.core.data.store.fake_lakefs_util import body, flag, page

Handler = Callable[..., tuple[int, Any]]


def repo_json(r: Repo) -> dict:
    return {"id": r.name, "creation_date": r.creation_date, "default_branch": r.default_branch,
            "storage_namespace": r.namespace, "read_only": False}


def commit_json(c: Commit) -> dict:
    return {"id": c.id, "parents": list(c.parents), "committer": "fake", "message": c.message,
            "creation_date": c.creation_date, "meta_range_id": c.meta_range_id, "metadata": dict(c.metadata),
            "generation": c.generation, "version": 1}


# ---------------------------------------------------------------- handlers (named after operationIds)


def get_config(m: Model, req: Request) -> tuple[int, Any]:
    storage = {"blockstore_type": "mem", "blockstore_namespace_example": "local://example",
               "blockstore_namespace_ValidityRegex": "^(local|mem)://", "default_namespace_prefix": "local://",
               "pre_sign_support": False, "pre_sign_support_ui": False, "import_support": False,
               "import_validity_regex": "^$"}
    return 200, {"version_config": {"version": "fake"}, "storage_config": storage}


def create_repository(m: Model, req: Request) -> tuple[int, Any]:
    b = body(req)
    if flag(req, "bare"):
        raise LakeFSError(400, "bare repositories are not supported by the fake")
    return 201, repo_json(m.create_repo(b["name"], b["storage_namespace"], b.get("default_branch") or "main"))


def list_repositories(m: Model, req: Request) -> tuple[int, Any]:
    prefix = req.args.get("prefix") or ""
    return 200, page([repo_json(r) for n, r in sorted(m.repos.items()) if n.startswith(prefix)],
                     lambda r: r["id"], req)


def delete_repository(m: Model, req: Request, repository: str) -> tuple[int, Any]:
    m.repo(repository)
    del m.repos[repository]
    return 204, None


def list_branches(m: Model, req: Request, repository: str) -> tuple[int, Any]:
    prefix, hidden = req.args.get("prefix") or "", flag(req, "show_hidden")
    refs = [{"id": n, "commit_id": b.head} for n, b in sorted(m.repo(repository).branches.items())
            if n.startswith(prefix) and (hidden or not b.hidden)]
    return 200, page(refs, lambda r: r["id"], req)


def create_branch(m: Model, req: Request, repository: str) -> tuple[int, Any]:
    b, r = body(req), m.repo(repository)
    if b["name"] in r.branches:
        raise LakeFSError(409, f"branch already exists: {b['name']}")
    head = m.resolve(repository, b["source"])
    r.branches[b["name"]] = Branch(head, hidden=bool(b.get("hidden")))
    return 201, head


def delete_branch(m: Model, req: Request, repository: str, branch: str) -> tuple[int, Any]:
    m.branch(repository, branch)
    if branch == m.repo(repository).default_branch:
        raise LakeFSError(403, "cannot delete the default branch")
    del m.repo(repository).branches[branch]
    return 204, None


def commit(m: Model, req: Request, repository: str, branch: str) -> tuple[int, Any]:
    if req.args.get("source_metarange"):
        raise LakeFSError(400, "source_metarange is not supported by the fake")
    b = body(req)
    c = m.commit_branch(repository, branch, b["message"], b.get("metadata") or {}, bool(b.get("allow_empty")))
    return 201, commit_json(c)


def log_commits(m: Model, req: Request, repository: str, ref: str) -> tuple[int, Any]:
    if any(req.args.get(k) for k in ("objects", "prefixes", "since", "stop_at")):
        raise LakeFSError(400, "objects, prefixes, since and stop_at are not supported by the fake")
    commits, cid, chain = m.repo(repository).commits, m.resolve(repository, ref), []
    if flag(req, "first_parent"):
        while cid:
            chain.append(commits[cid])
            cid = commits[cid].parents[0] if commits[cid].parents else ""
    else:
        chain = sorted((commits[c] for c in m.ancestors(repository, cid)), key=lambda c: -c.generation)
    return 200, page([commit_json(c) for c in chain], lambda c: c["id"], req, sorted_by_key=False)


def diff_refs(m: Model, req: Request, repository: str, leftRef: str, rightRef: str) -> tuple[int, Any]:  # noqa: N803
    if req.args.get("delimiter"):
        raise LakeFSError(400, "delimiter is not supported by the fake's diff")
    right = m.resolve(repository, rightRef)
    left = m.resolve(repository, leftRef)
    if req.args.get("type", "three_dot") == "three_dot":
        left = m.merge_base(repository, left, right)
    a, b = (m.repo(repository).commits[c].tree for c in (left, right))
    prefix, diffs = req.args.get("prefix") or "", []
    for path in sorted(a.keys() | b.keys()):
        x, y = a.get(path), b.get(path)
        if path.startswith(prefix) and (x is None or y is None or x.checksum != y.checksum):
            kind = "added" if x is None else "removed" if y is None else "changed"
            diffs.append({"path": path, "path_type": "object", "type": kind, "size_bytes": (y or x).size})
    return 200, page(diffs, lambda d: d["path"], req)


def find_merge_base(m: Model, req: Request, repository: str, sourceRef: str,  # noqa: N803
                    destinationBranch: str) -> tuple[int, Any]:  # noqa: N803
    source, dest = m.resolve(repository, sourceRef), m.branch(repository, destinationBranch).head
    return 200, {"source_commit_id": source, "destination_commit_id": dest,
                 "base_commit_id": m.merge_base(repository, source, dest)}


def merge_into_branch(m: Model, req: Request, repository: str, sourceRef: str,  # noqa: N803
                      destinationBranch: str) -> tuple[int, Any]:  # noqa: N803
    b = body(req)
    try:
        c = m.merge(repository, sourceRef, destinationBranch, b.get("message") or "", b.get("metadata") or {},
                    b.get("strategy"), bool(b.get("squash_merge")), bool(b.get("allow_empty") or b.get("force")))
    except LakeFSError as exc:
        if exc.status != 409:
            raise
        # lakeFS sends an Error body; the spec's (deprecated) 409 schema is MergeResult: both fit this one
        return 409, {"message": exc.message, "reference": ""}
    return 200, {"reference": c.id}


def list_tags(m: Model, req: Request, repository: str) -> tuple[int, Any]:
    prefix = req.args.get("prefix") or ""
    refs = [{"id": n, "commit_id": c} for n, c in sorted(m.repo(repository).tags.items()) if n.startswith(prefix)]
    return 200, page(refs, lambda r: r["id"], req)


def create_tag(m: Model, req: Request, repository: str) -> tuple[int, Any]:
    b, r = body(req), m.repo(repository)
    if b["id"] in r.tags:
        raise LakeFSError(409, f"tag already exists: {b['id']}")
    r.tags[b["id"]] = m.resolve(repository, b["ref"])
    return 201, {"id": b["id"], "commit_id": r.tags[b["id"]]}


_R = "/repositories/{repository}"
ROUTES: list[tuple[str, str, Handler]] = [
    ("GET", "/healthcheck", lambda m, req: (204, None)),
    ("GET", "/config", get_config),
    ("GET", "/repositories", list_repositories),
    ("POST", "/repositories", create_repository),
    ("GET", _R, lambda m, req, repository: (200, repo_json(m.repo(repository)))),
    ("DELETE", _R, delete_repository),
    ("GET", f"{_R}/branches", list_branches),
    ("POST", f"{_R}/branches", create_branch),
    ("GET", f"{_R}/branches/{{branch}}",
     lambda m, req, repository, branch: (200, {"id": branch, "commit_id": m.branch(repository, branch).head})),
    ("DELETE", f"{_R}/branches/{{branch}}", delete_branch),
    ("POST", f"{_R}/branches/{{branch}}/commits", commit),
    ("GET", f"{_R}/commits/{{commitId}}", lambda m, req, repository, commitId: (200, commit_json(
        m.commit(repository, commitId)))),
    ("GET", f"{_R}/refs/{{ref}}/commits", log_commits),
    ("POST", f"{_R}/branches/{{branch}}/objects", upload_object),
    ("DELETE", f"{_R}/branches/{{branch}}/objects", delete_object),
    ("GET", f"{_R}/refs/{{ref}}/objects", get_object),
    ("HEAD", f"{_R}/refs/{{ref}}/objects", get_object),
    ("GET", f"{_R}/refs/{{ref}}/objects/stat", stat_object),
    ("GET", f"{_R}/refs/{{ref}}/objects/ls", list_objects),
    ("GET", f"{_R}/refs/{{leftRef}}/diff/{{rightRef}}", diff_refs),
    ("GET", f"{_R}/refs/{{sourceRef}}/merge/{{destinationBranch}}", find_merge_base),
    ("POST", f"{_R}/refs/{{sourceRef}}/merge/{{destinationBranch}}", merge_into_branch),
    ("GET", f"{_R}/tags", list_tags),
    ("POST", f"{_R}/tags", create_tag),
]
