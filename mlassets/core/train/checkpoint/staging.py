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
    On CPU the copy runs on the stager thread; on CUDA it is queued on a side stream (see ``stage``).
    """

    def __init__(self, device: torch.device | None = None) -> None:
        self.device = device
        self.cuda = device is not None and device.type == "cuda"
        self._stream = torch.cuda.Stream(device) if self.cuda else None
        self._copied: torch.cuda.Event | None = None
        self._buffers: dict[tuple[str, ...], torch.Tensor] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpoint-stager")

    def stage(self, state: dict[str, Any]) -> Future[dict[str, Any]]:
        """Start the copy; the future resolves to the CPU copy once it is complete.

        On CUDA the device-to-host copies are queued on a side stream behind the work that produced the state
        (into pinned buffers, so they overlap the next forward/backward); ``order_after_copy`` then makes the
        training stream, not the CPU, wait for them before the optimizer changes the state.
        """
        if not self.cuda:
            return self._pool.submit(self._copy, state, ())
        stream = self._stream
        stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(stream):
            out = self._copy(state, ())
            copied = self._copied = torch.cuda.Event()
            copied.record(stream)
        return self._pool.submit(_when_done, copied, out)

    def order_after_copy(self) -> tuple[torch.cuda.Event, torch.cuda.Event] | None:
        """CUDA: the training stream waits on the GPU for the last copy; (before, after) events time the wait."""
        if self._copied is None:
            return None
        stream = torch.cuda.current_stream(self.device)
        before, after = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        before.record(stream)
        stream.wait_event(self._copied)
        after.record(stream)
        self._copied = None
        return before, after

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
            buffer = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=self.cuda)
            self._buffers[key] = buffer
        return buffer.copy_(tensor, non_blocking=self.cuda)


def _when_done(event: torch.cuda.Event, out: dict[str, Any]) -> dict[str, Any]:
    event.synchronize()  # releases the GIL while it waits
    return out
