"""The fake lakeFS's object operations (upload, delete, get, head, stat, list); see ``fake_lakefs_api``."""

from __future__ import annotations

import time
from typing import Any

from werkzeug.wrappers import Request, Response

from tests.core.data.store.fake_lakefs_model import Entry, LakeFSError, Model
from tests.core.data.store.fake_lakefs_util import flag, page

META_PREFIX = "x-lakefs-meta-"


def stats_json(path: str, e: Entry, user_metadata: bool = True) -> dict:
    out = {"path": path, "path_type": "object", "physical_address": e.address, "checksum": e.checksum,
           "size_bytes": e.size, "mtime": e.mtime, "content_type": e.content_type}
    return {**out, "metadata": dict(e.metadata)} if user_metadata else out


def entry(m: Model, repository: str, ref: str, req: Request) -> Entry:
    path = req.args["path"]
    found = m.tree(repository, ref).get(path)
    if found is None:
        raise LakeFSError(404, f"object not found: {path}")
    return found


def upload_object(m: Model, req: Request, repository: str, branch: str) -> tuple[int, Any]:
    if req.mimetype == "multipart/form-data":
        data = req.files["content"].read()
    else:
        data = req.get_data()
    meta = {k.lower()[len(META_PREFIX):]: v for k, v in req.headers.items() if k.lower().startswith(META_PREFIX)}
    e = m.put(repository, branch, req.args["path"], data, meta, req.mimetype or "application/octet-stream",
              req.headers.get("If-None-Match"), req.headers.get("If-Match"))
    return 201, stats_json(req.args["path"], e)


def delete_object(m: Model, req: Request, repository: str, branch: str) -> tuple[int, Any]:
    m.delete(repository, branch, req.args["path"])
    return 204, None


def get_object(m: Model, req: Request, repository: str, ref: str) -> tuple[int, Any]:
    e = entry(m, repository, ref, req)
    data, status = m.blobs[e.address], 200
    if req.range is not None:  # one range only; no Content-Range (the spec's pattern for it is not RFC 9110's)
        ranges = req.range.range_for_length(len(data))
        if ranges is None:
            raise LakeFSError(416, "requested range not satisfiable")
        data, status = data[ranges[0]:ranges[1]], 206
    headers = {"ETag": f'"{e.checksum}"', "Last-Modified": time.strftime("%a, %d %b %Y %H:%M:%S GMT",
                                                                         time.gmtime(e.mtime))}
    return status, Response(data, status=status, headers=headers, mimetype="application/octet-stream")


def stat_object(m: Model, req: Request, repository: str, ref: str) -> tuple[int, Any]:
    return 200, stats_json(req.args["path"], entry(m, repository, ref, req), flag(req, "user_metadata", True))


def list_objects(m: Model, req: Request, repository: str, ref: str) -> tuple[int, Any]:
    prefix, delimiter = req.args.get("prefix") or "", req.args.get("delimiter") or ""
    meta, items = flag(req, "user_metadata", True), {}
    for path, e in sorted(m.tree(repository, ref).items()):
        if not path.startswith(prefix):
            continue
        cut = path.find(delimiter, len(prefix)) if delimiter else -1
        if cut >= 0:
            items.setdefault(path[:cut + 1], {"path": path[:cut + 1], "path_type": "common_prefix",
                                              "physical_address": "", "checksum": "", "mtime": 0})
        else:
            items[path] = stats_json(path, e, meta)
    return 200, page(sorted(items.values(), key=lambda s: s["path"]), lambda s: s["path"], req)
