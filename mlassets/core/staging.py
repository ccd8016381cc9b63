"""Staging for async checkpoints: a copy of the training state in CPU buffers, made off the training thread."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch
from torch.distributed.tensor import DTensor


class Stager:
    """Copies a (nested, tensor-only) state into cached CPU buffers on one background thread.

    ``Tensor.copy_`` runs without the GIL; DCP's ``DefaultStager`` copies storages while holding it, which
    stalls the training loop ~10 ms per 100 MB. Buffers are reused, so a save must finish before the next.
    """

    def __init__(self, pin: bool = False) -> None:
        self.pin = pin
        self._buffers: dict[tuple[str, ...], torch.Tensor] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpoint-stager")

    def stage(self, state: dict[str, Any]) -> Future[dict[str, Any]]:
        return self._pool.submit(self._copy, state, ())

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._buffers.clear()

    @torch.no_grad()
    def _copy(self, state: dict[str, Any], prefix: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, value in state.items():
            key = (*prefix, str(name))
            if isinstance(value, dict):
                out[name] = self._copy(value, key)
            elif isinstance(value, DTensor):  # a shard: stage the local part, keep the layout
                local = self._buffer(key, value.to_local())
                out[name] = DTensor.from_local(local, value.device_mesh, value.placements, run_check=False,
                                               shape=value.shape, stride=value.stride())
            elif isinstance(value, torch.Tensor):
                out[name] = self._buffer(key, value)
            else:
                raise TypeError(f"checkpoint entry {'.'.join(key)} is a {type(value).__name__}, not a tensor")
        return out

    def _buffer(self, key: tuple[str, ...], tensor: torch.Tensor) -> torch.Tensor:
        buffer = self._buffers.get(key)
        if buffer is None or buffer.shape != tensor.shape or buffer.dtype != tensor.dtype:
            buffer = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=self.pin)
            self._buffers[key] = buffer
        return buffer.copy_(tensor)
