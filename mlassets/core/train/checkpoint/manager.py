"""Full-state checkpoints: sharded DCP tensors, per-rank JSON state, a sha256 manifest; async and atomic.

A checkpoint is written into ``.tmp-step-N/`` and becomes ``step-N/`` only after every rank's files are
written and rank 0 has written ``MANIFEST.json`` (sha256 and size of every file), so a crash leaves no
half checkpoint under a valid name. Loading checks the manifest first, reads DCP metadata with a
restricted unpickler, refuses any non-tensor entry, and reads tensors with ``weights_only=True``.

Async saves do what ``dcp.async_save`` does in its thread mode, with long-lived threads: the state is
copied to CPU buffers by a stager thread (the optimizer waits only for that copy), and a writer thread runs
``dcp.save`` and finalizes the checkpoint.
"""

from __future__ import annotations

import json
import pickle
import shutil
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.metadata import BytesStorageMetadata, Metadata, StorageMeta

from mlassets.core.train.checkpoint.files import PREFIX, publish, retain, step_dirs, verify, write_json, write_manifest
from mlassets.core.train.checkpoint.files import set_aside as _set_aside
from mlassets.core.train.checkpoint.staging import Stager
from mlassets.core.train.torch_run.distributed import DistEnv

META = "meta.json"
SLOW_WRITE_S = 0.1  # a save that waits longer for the previous one is reported (once per run)
_DCP_CLASSES = {("torch.distributed.checkpoint.metadata", name) for name in (
    "Metadata", "TensorStorageMetadata", "BytesStorageMetadata", "ChunkStorageMetadata", "TensorProperties",
    "StorageMeta", "MetadataIndex", "_MEM_FORMAT_ENCODING")} | {
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"), ("torch", "Size"),
    ("torch.serialization", "_get_layout"), ("pathlib", "PosixPath"), ("pathlib", "WindowsPath"),
    ("collections", "OrderedDict")}
# A one-process save is intended here (no process group with one rank); DCP warns about it on every save.
warnings.filterwarnings("ignore", message="torch.distributed is disabled, unavailable or uninitialized")


class _MetadataUnpickler(pickle.Unpickler):
    """Unpickles DCP metadata classes, torch sizes and dtypes; nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _DCP_CLASSES:
            return super().find_class(module, name)
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise pickle.UnpicklingError(f"checkpoint metadata refers to {module}.{name}: refused")


def read_metadata(path: Path) -> Metadata:
    """DCP ``.metadata`` read safely; a checkpoint holding a non-tensor entry raises ``ValueError``."""
    try:
        with path.open("rb") as fh:
            metadata = _MetadataUnpickler(fh).load()
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError) as exc:
        raise ValueError(f"{path}: unreadable checkpoint metadata: {exc}") from None
    if not isinstance(metadata, Metadata):
        raise ValueError(f"{path}: not DCP metadata")
    bad = sorted(k for k, v in metadata.state_dict_metadata.items() if isinstance(v, BytesStorageMetadata))
    if bad:
        raise ValueError(f"{path}: non-tensor entries refused (tensor-only checkpoints): {', '.join(bad[:5])}")
    return metadata


class SafeReader(dcp.FileSystemReader):
    """``FileSystemReader`` whose metadata goes through ``read_metadata`` (no arbitrary unpickling)."""

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        metadata = read_metadata(Path(self._get_metadata_path(kwargs.get("rank"))))
        if getattr(metadata, "storage_meta", None) is None:
            metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata


def load_tensors(directory: Path, tensors: dict[str, Any]) -> None:
    """Load a checkpoint's tensors in place into ``tensors`` (same keys and shapes); tensor-only."""
    read_metadata(directory / ".metadata")
    single = not (torch.distributed.is_available() and torch.distributed.is_initialized())
    dcp.load(tensors, storage_reader=SafeReader(directory), no_dist=single)


def read_meta(directory: Path) -> dict[str, Any]:
    return json.loads((directory / META).read_text())


class Checkpointer:
    """Writes checkpoints of one run into ``root`` (async or blocking) and keeps the last K plus the best."""

    def __init__(self, root: Path, env: DistEnv, keep_last: int, use_async: bool, log: Callable[[str], None],
                 write_delay_s: float = 0.0):
        self.root, self.env, self.keep_last, self.log = root, env, keep_last, log
        self.write_delay_s = write_delay_s  # the slow-checkpoint fault: every write takes this much longer
        self.root.mkdir(parents=True, exist_ok=True)
        self._stager = Stager(env.device) if use_async else None
        self._staging: Future[Any] | None = None
        self._final: Future[None] | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpoint-writer")
        self._abandoned = threading.Event()
        self._warned = False

    def save(self, step: int, tensors: dict[str, Any], rank_state: dict[str, Any], meta: dict[str, Any]) -> None:
        """Start writing checkpoint ``step``; waits only for the previous one (staging buffers are reused)."""
        started = time.perf_counter()
        self.wait()
        waited = time.perf_counter() - started
        if waited > SLOW_WRITE_S and not self._warned:  # once per run: the cadence outruns the writer
            self._warned = True
            self.log(f"checkpoint at step {step} waited {waited:.2f} s for the previous one to finish writing: "
                     "training stalls; checkpoint less often (training.checkpoint_every_steps / _minutes)")
        tmp = self.root / f".tmp-{PREFIX}{step:09d}"
        tmp.mkdir(parents=True, exist_ok=True)
        write_json(tmp / f"rank{self.env.rank}.json", rank_state)
        if self.env.is_main:
            write_json(tmp / META, meta)
        group = self.env.checkpoint_group
        if self._stager is None:
            time.sleep(self.write_delay_s)
            dcp.save(tensors, checkpoint_id=tmp, process_group=group, no_dist=not self.env.distributed)
            self._finalize(step, tmp)
            return
        # What dcp.async_save does in its thread mode, with long-lived threads: no thread is started per save
        # (each start hands the GIL back and forth, a stall of milliseconds for the training loop).
        staging = self._stager.stage(tensors)
        self._staging = staging
        self._final = self._executor.submit(self._upload, staging, step, tmp)

    def _upload(self, staging: Future[Any], step: int, tmp: Path) -> None:
        time.sleep(self.write_delay_s)
        dcp.save(staging.result(), checkpoint_id=tmp, process_group=self.env.checkpoint_group,
                 no_dist=not self.env.distributed)
        self._finalize(step, tmp)

    def wait_staged(self) -> tuple[Any, Any] | None:
        """Before the optimizer changes the state: the last save's copy must be complete.

        On CPU this blocks until the stager thread has copied; on CUDA the training stream waits for the copy on
        the GPU and the (before, after) CUDA events of that wait are returned.
        """
        if self._staging is None:
            return None
        staging, self._staging = self._staging, None
        if self._stager is not None and self._stager.cuda:
            return self._stager.order_after_copy()
        staging.result()
        return None

    def wait(self) -> None:
        """Block until the last save is written and finalized; re-raise its error."""
        self.wait_staged()
        if self._final is not None:
            final, self._final = self._final, None
            final.result()

    def abandon(self, wait: bool) -> None:
        """A crash: the save in flight must never become a valid checkpoint."""
        self._abandoned.set()
        if wait and self._final is not None:
            try:
                self._final.result()
            except Exception:  # noqa: BLE001 - the save is being thrown away anyway
                pass

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        if self._stager is not None:
            self._stager.close()

    def _finalize(self, step: int, tmp: Path) -> None:
        if not self.env.is_main or self._abandoned.is_set():
            return
        write_manifest(tmp, step)
        publish(tmp, self.root / f"{PREFIX}{step:09d}")
        self._retain()

    def _retain(self) -> None:
        """Keep the newest ``keep_last`` checkpoints plus the one with the best validation metric."""
        retain(self.root, self.keep_last, best_checkpoint(step_dirs(self.root)))

    def find_latest(self, resume_key: str) -> Path | None:
        """Rank 0: the newest checkpoint that passes its manifest and belongs to this run's config."""
        for tmp in self.root.glob(f".tmp-{PREFIX}*"):
            self.log(f"removing unfinished checkpoint {tmp.name} (the run died while writing it)")
            shutil.rmtree(tmp, ignore_errors=True)
        for path in step_dirs(self.root):
            try:
                verify(path)
                meta = read_meta(path)
            except (OSError, ValueError) as exc:
                self.log(f"checkpoint {path.name} is not valid ({exc}); falling back to the previous one")
                _set_aside(path, "corrupt")
                continue
            if meta.get("resume_key") != resume_key:
                self.log(f"checkpoint {path.name} belongs to another config or world size; not resuming from it")
                _set_aside(path, "stale")
                continue
            return path
        return None


def best_checkpoint(dirs: list[Path]) -> Path | None:
    """The checkpoint with the lowest validation metric (the earliest on ties)."""
    scored = []
    for path in dirs:
        try:
            value = read_meta(path).get("val_metric")
        except (OSError, ValueError):
            continue
        if value is not None:
            scored.append((float(value), path.name, path))
    return min(scored)[2] if scored else None


def list_checkpoints(root: Path) -> list[dict[str, Any]]:
    """Finalized checkpoints, oldest first: step, epoch, validation metric, path."""
    out = []
    for path in reversed(step_dirs(root)):
        meta = read_meta(path)
        out.append({"name": path.name, "step": meta["step"], "epoch": meta["epoch"],
                    "val_metric": meta.get("val_metric"), "path": str(path.resolve())})
    return out
