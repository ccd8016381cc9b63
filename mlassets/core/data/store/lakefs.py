"""``LakeFSStore``: the ``VersionedStore`` on a lakeFS server, through the ``lakefs`` SDK.

Configuration: arguments, else the SDK's own variables ``LAKECTL_SERVER_ENDPOINT_URL``,
``LAKECTL_CREDENTIALS_ACCESS_KEY_ID`` and ``LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY``; new repositories get
the storage namespace ``namespace`` (a prefix, or a template with ``{repo}``; default: the server's
``default_namespace_prefix``, else ``local://``). Every write goes through a hidden short-lived branch
(``lakefs_tx``). Objects carry their sha256 as user metadata, so ``stat`` reports the same checksum as
the local backend. One client per process: the store can be handed to forked or spawned workers.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterator, Mapping

import lakefs
import lakefs_sdk

from mlassets.core.data.store.base import (
    Change,
    Commit,
    Conflict,
    NotFound,
    check_changes,
    check_metadata,
    validate_names,
    validate_path,
    validate_ref,
    validate_repo,
)
from mlassets.core.data.store.lakefs_api import Connection, pages, to_commit, translate
from mlassets.core.data.store.lakefs_tx import RESERVED_PREFIX, TX_PREFIX, LakeFSTransaction, started_at
from mlassets.core.data.store.transaction import run


class LakeFSStore(Connection):
    """A ``VersionedStore`` on lakeFS (see the module docstring for configuration)."""

    backend = "lakefs"

    # ------------------------------------------------------------ repositories and refs

    def create_repo(self, repo: str, default_branch: str = "main") -> None:
        """Create the repository (lakeFS makes its "Repository created" root commit); idempotent."""
        validate_names(repo, default_branch)
        with translate():
            with contextlib.suppress(lakefs.exceptions.NotFoundException):
                lakefs.Repository(repo, client=self.client).properties  # noqa: B018 (exists: nothing to do)
                return
            lakefs.Repository(repo, client=self.client).create(
                storage_namespace=self._namespace(repo), default_branch=default_branch, exist_ok=True)

    def list_repos(self) -> list[str]:
        with translate():
            return sorted(r.id for r in lakefs.repositories(client=self.client))

    def delete_repo(self, repo: str) -> None:
        with translate(lambda: NotFound(f"repository {repo!r} does not exist")):
            lakefs.Repository(validate_repo(repo), client=self.client).delete()

    def create_branch(self, repo: str, branch: str, source: str) -> str:
        validate_names(repo, branch, source)
        with translate(lambda: self._no_ref(repo, source),
                       lambda _: Conflict(f"branch {branch!r} already exists in repository {repo!r}")):
            self.api.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name=branch, source=source))
        return self._branch_head(repo, branch)

    def delete_branch(self, repo: str, branch: str) -> None:
        validate_ref(branch)
        with translate(lambda: NotFound(f"repository {repo!r} does not exist")):
            default = self.api.repositories_api.get_repository(validate_repo(repo)).default_branch
        if branch == default:
            raise Conflict(f"branch {branch!r} is the default branch of {repo!r}; it cannot be deleted")
        with translate(lambda: NotFound(f"branch {branch!r} does not exist in repository {repo!r}")):
            self.api.branches_api.delete_branch(repo, branch)

    def list_branches(self, repo: str) -> dict[str, str]:
        """Branch name -> head commit id (transaction branches are hidden)."""
        with translate(lambda: NotFound(f"repository {repo!r} does not exist")):
            refs = list(pages(self.api.branches_api.list_branches, validate_repo(repo)))
        return {r.id: r.commit_id for r in sorted(refs, key=lambda r: r.id) if not r.id.startswith(TX_PREFIX)}

    def prune_transactions(self, repo: str, older_than_s: float = 3600.0) -> list[str]:
        """Delete the hidden branches of transactions that began more than ``older_than_s`` ago."""
        with translate(lambda: NotFound(f"repository {repo!r} does not exist")):
            refs = list(pages(self.api.branches_api.list_branches, validate_repo(repo), prefix=TX_PREFIX,
                              show_hidden=True))
        cutoff, pruned = time.time() - older_than_s, []
        for ref in refs:
            began = started_at(ref.id)
            if began is None or began >= cutoff:
                continue
            try:
                with translate():
                    self.api.branches_api.delete_branch(repo, ref.id)
            except NotFound:  # its writer removed it meanwhile
                continue
            pruned.append(ref.id)
        return sorted(pruned)

    def prune_objects(self, older_than_s: float = 3600.0) -> tuple[int, int]:
        """Nothing here: lakeFS's garbage collection removes objects no branch reaches, on the server."""
        return 0, 0

    def resolve(self, repo: str, ref: str) -> str:
        return self.get_commit(repo, ref).id

    def create_tag(self, repo: str, tag: str, ref: str) -> str:
        validate_names(repo, tag, ref)
        with translate(lambda: self._no_ref(repo, ref),
                       lambda _: Conflict(f"tag {tag!r} already exists in repository {repo!r}")):
            return self.api.tags_api.create_tag(repo, lakefs_sdk.TagCreation(id=tag, ref=ref)).commit_id

    def list_tags(self, repo: str) -> dict[str, str]:
        with translate(lambda: NotFound(f"repository {repo!r} does not exist")):
            refs = list(pages(self.api.tags_api.list_tags, validate_repo(repo)))
        return {r.id: r.commit_id for r in sorted(refs, key=lambda r: r.id)}

    # ------------------------------------------------------------ writes

    @contextlib.contextmanager
    def transaction(
        self, repo: str, branch: str, message: str, metadata: Mapping[str, str] | None = None, *,
        expected_head: str | None = None, allow_empty: bool = False,
    ) -> Iterator[LakeFSTransaction]:
        """Write through a hidden short-lived branch; squash-merge it into ``branch`` on exit."""
        with run(LakeFSTransaction(self, repo, branch, message, metadata, expected_head, allow_empty)) as tx:
            yield tx

    def commit(
        self, repo: str, branch: str, changes: Mapping[str, bytes | None], message: str,
        metadata: Mapping[str, str] | None = None, expected_head: str | None = None,
    ) -> Commit:
        """One transaction holding ``changes`` (an empty one still makes a commit)."""
        check_metadata(metadata)
        check_changes(changes)
        with self.transaction(repo, branch, message, metadata, expected_head=expected_head, allow_empty=True) as tx:
            for path, data in changes.items():
                if data is None:
                    tx.delete(path)
                else:
                    tx.put(path, data)
        assert tx.commit is not None
        return tx.commit

    def merge(
        self, repo: str, source: str, destination: str, message: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> Commit:
        """lakeFS merge (a merge commit: destination first, then source); Conflict names the paths."""
        meta = check_metadata(metadata)
        theirs = self.resolve(repo, validate_ref(source))
        ours = self._branch_head(repo, destination)
        with translate(lambda: self._no_ref(repo, source)):
            base = self.api.refs_api.find_merge_base(repo, theirs, destination).base_commit_id
        if base == theirs:  # nothing new on source: a no-op, as on the local backend
            return self.get_commit(repo, ours)
        merge = lakefs_sdk.Merge(message=message or f"Merge '{source}' into '{destination}'", metadata=meta)
        try:
            with translate(lambda: self._no_ref(repo, source)):
                reference = self.api.refs_api.merge_into_branch(repo, theirs, destination, merge=merge).reference
        except Conflict as exc:
            paths = ", ".join(map(repr, self._conflicts(repo, base, theirs, destination))) or str(exc)
            raise Conflict(f"merge {source!r} into {destination!r} of {repo!r} conflicts on: {paths}") from exc
        return self.get_commit(repo, reference)

    def _conflicts(self, repo: str, base: str, theirs: str, ours: str) -> list[str]:
        """Paths both sides changed differently since ``base`` (lakeFS's 409 does not list them)."""
        left, right = ({c.path for c in self.diff(repo, base, side)} for side in (theirs, ours))

        def state(ref: str, path: str) -> object:
            with contextlib.suppress(NotFound):
                return self.stat(repo, ref, path)["checksum"]
            return None

        return sorted(p for p in left & right if state(theirs, p) != state(ours, p))

    # ------------------------------------------------------------ reads

    def get_commit(self, repo: str, ref: str) -> Commit:
        validate_names(repo, ref)
        with translate(lambda: self._no_ref(repo, ref)):
            return to_commit(self.api.commits_api.get_commit(repo, ref))

    def log(self, repo: str, ref: str, limit: int | None = None) -> list[Commit]:
        """First-parent history of ``ref``, newest first."""
        commit_id = self.resolve(repo, ref)
        out: list[Commit] = []
        with translate(lambda: self._no_ref(repo, ref)):
            for c in pages(self.api.refs_api.log_commits, repo, commit_id, first_parent=True, amount=limit or 1000):
                if limit is not None and len(out) >= limit:
                    break
                out.append(to_commit(c))
        return out

    def list_objects(self, repo: str, ref: str, prefix: str = "") -> list[str]:
        validate_names(repo, ref)
        with translate(lambda: self._no_ref(repo, ref)):
            stats = pages(self.api.objects_api.list_objects, repo, ref, prefix=prefix or None, user_metadata=False)
            return sorted(s.path for s in stats if not s.path.startswith(RESERVED_PREFIX))

    def _object_missing(self, repo: str, ref: str, path: str) -> NotFound:
        self.resolve(repo, ref)  # raises the ref's own NotFound first
        return NotFound(f"object {path!r} does not exist at {ref!r} in repository {repo!r}")

    def read(self, repo: str, ref: str, path: str) -> bytes:
        validate_names(repo, ref)
        obj = lakefs.StoredObject(repo, ref, validate_path(path), client=self.client)
        with translate(lambda: self._object_missing(repo, ref, path)):
            return bytes(obj.reader(mode="rb", pre_sign=False).read())

    def stat(self, repo: str, ref: str, path: str) -> dict[str, str | int]:
        """Size and sha256 (from the object's user metadata; computed for objects written by others)."""
        validate_names(repo, ref)
        with translate(lambda: self._object_missing(repo, ref, path)):
            s = self.api.objects_api.stat_object(repo, ref, validate_path(path), user_metadata=True)
        sha = next((v for k, v in (s.metadata or {}).items() if k.lower().endswith("sha256")), None)
        if sha is None:
            sha = hashlib.sha256(self.read(repo, ref, path)).hexdigest()
        return {"path": path, "size": int(s.size_bytes or 0), "checksum": sha}

    def diff(self, repo: str, left: str, right: str) -> list[Change]:
        """Two-dot diff (``left`` against ``right`` directly, not from their merge base)."""
        left_id, right_id = self.resolve(repo, left), self.resolve(repo, right)
        with translate(lambda: self._no_ref(repo, left)):
            diffs = list(pages(self.api.refs_api.diff_refs, repo, left_id, right_id, type="two_dot"))
        kinds = {"added", "removed", "changed"}
        return sorted((Change(d.path, d.type) for d in diffs
                       if d.path_type == "object" and d.type in kinds and not d.path.startswith(RESERVED_PREFIX)),
                      key=lambda c: c.path)

    def uri(self, repo: str, ref: str, path: str = "") -> str:
        """``lakefs://<repo>/<commit id>/<path>``."""
        commit_id = self.resolve(repo, ref)
        return f"lakefs://{repo}/{commit_id}/{validate_path(path)}" if path else f"lakefs://{repo}/{commit_id}"
