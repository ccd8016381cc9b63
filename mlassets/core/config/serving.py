"""The ``serving`` section: how ``mlassets serve`` batches, bounds and traces requests (checked at load)."""

from __future__ import annotations

from dataclasses import dataclass

from mlassets.core.config._typed import ConfigError


@dataclass(frozen=True)
class ServingConfig:
    """Dynamic batching, request limits, the champion poll and an optional downstream call of the endpoint."""

    batching: bool = True  # merge concurrent requests into one forward pass; false: one pass per request
    max_batch_size: int = 256  # rows of one forward pass (a request larger than this runs alone)
    batch_wait_ms: float = 2.0  # the longest a request waits for others while more are on their way
    max_rows: int = 1000  # rows of one request
    max_body_bytes: int = 1_048_576  # size of one request body
    swap_poll_s: float = 2.0  # how often the promotion log is read for a new champion
    downstream_url: str = ""  # a URL each request waits on (a dependency, traced as its own span); "": none
    downstream_timeout_ms: float = 1000.0

    def __post_init__(self) -> None:
        for name in ("max_batch_size", "max_rows", "max_body_bytes"):
            if getattr(self, name) < 1:
                raise ConfigError(f"serving.{name}: must be >= 1, got {getattr(self, name)}")
        for name in ("batch_wait_ms", "downstream_timeout_ms"):
            value = getattr(self, name)
            if not 0 <= value <= 10_000:
                raise ConfigError(f"serving.{name}: must be between 0 and 10000 ms, got {value}")
        if not 0.05 <= self.swap_poll_s <= 3600:
            raise ConfigError(f"serving.swap_poll_s: must be between 0.05 and 3600 s, got {self.swap_poll_s}")
        if self.downstream_url and not self.downstream_url.startswith(("http://", "https://")):
            raise ConfigError(f"serving.downstream_url: must be an http:// or https:// URL, got "
                              f"{self.downstream_url!r}")
