"""The ``serving`` section: how ``mlassets serve`` batches, bounds and traces requests (checked at load)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from mlassets.core.config.typed import ConfigError


@dataclass(frozen=True)
class OnlineConfig:
    """The online test of ``gate.promotion: online``: a candidate that passed the offline gate answers a share
    of the traffic (``canary``) or scores every request without answering (``shadow``) until ``min_requests``,
    then it is promoted or rolled back by these limits against the champion over the same period."""

    mode: Literal["canary", "shadow"] = "canary"
    """`canary`: the candidate answers `share` of the requests; `shadow`: it scores every request and answers none."""
    share: float = 0.1
    """Canary: the share of requests the candidate answers."""
    min_requests: int = 200
    """Requests each variant scores before the rule decides."""
    max_latency_ratio: float = 1.5
    """The candidate's p95 scoring latency (queued to scored) over the champion's, at most."""
    max_error_rate: float = 0.01
    """The candidate's failed passes over its requests, at most (a failed canary pass is answered by the
    champion)."""
    max_prediction_shift: float = 0.25
    """|mean difference| / the champion's std, at most (multiclass: the distance of the label shares); the candidate
    is rolled back only when the shift's always-valid lower bound is over it."""
    confidence: float = 0.95
    """The confidence of the always-valid intervals (`mlassets/core/evaluate/sequential.py`) on the labelled metric's
    difference and on the prediction shift (at least 0.5, under 1)."""
    auto_decide: bool = True
    """The endpoint decides by itself once `min_requests` is reached; false: `mlassets online promote` or
    `rollback` decides."""
    label_key: list[str] = field(default_factory=list)
    """Input columns (of `features.categorical`/`numeric`) that labels arriving later join on; set, the endpoint
    records every scored row of the test for `mlassets online labels`; `[]`: labels off."""
    min_labelled: int = 100
    """Labelled rows of each variant the metric's interval is planned for: the rule states the regression it detects
    there with 95 % power (a clear regression rolls back earlier)."""
    max_metric_regression: float | None = None
    """The candidate's `gate.main_metric` on labelled rows at most this much worse than the champion's (relative);
    unset: `gate.tolerance`."""
    require_labels: bool = False
    """No promotion before `min_labelled` labelled rows of each variant (a rollback by the other limits still goes);
    needs `label_key`."""

    def __post_init__(self) -> None:
        if not 0 < self.share < 1:
            raise ConfigError(f"serving.online.share: must be between 0 and 1 (exclusive), got {self.share}")
        if self.min_requests < 1:
            raise ConfigError(f"serving.online.min_requests: must be >= 1, got {self.min_requests}")
        for name in ("max_latency_ratio", "max_prediction_shift"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"serving.online.{name}: must be > 0, got {getattr(self, name)}")
        if not 0 <= self.max_error_rate <= 1:
            raise ConfigError(f"serving.online.max_error_rate: must be between 0 and 1, got {self.max_error_rate}")
        if not 0.5 <= self.confidence < 1:
            raise ConfigError(f"serving.online.confidence: must be at least 0.5 and under 1 (e.g. 0.95), got "
                              f"{self.confidence!r}")
        if self.min_labelled < 1:
            raise ConfigError(f"serving.online.min_labelled: must be >= 1, got {self.min_labelled}")
        if self.max_metric_regression is not None and self.max_metric_regression < 0:
            raise ConfigError(f"serving.online.max_metric_regression: must be >= 0, got {self.max_metric_regression}")
        twice = sorted({c for c in self.label_key if self.label_key.count(c) > 1})
        if twice:
            raise ConfigError(f"serving.online.label_key: {twice[0]!r} is listed twice in {self.label_key!r}")
        if self.require_labels and not self.label_key:
            raise ConfigError("serving.online.require_labels: true needs serving.online.label_key (the columns that "
                              "labels are joined on); got label_key []")


@dataclass(frozen=True)
class ServingConfig:
    """Dynamic batching, request limits, the champion poll and an optional downstream call of the endpoint."""

    batching: bool = True
    """`mlassets serve` merges concurrent requests into one forward pass; false: one pass per request."""
    max_batch_size: int = 256
    """Rows of one forward pass (a request larger than this runs alone)."""
    batch_wait_ms: float = 2.0
    """The longest a request waits for others while more are on their way."""
    max_rows: int = 1000
    """Rows of one request (more: a 413 naming the limit)."""
    max_body_bytes: int = 1_048_576
    """Size of one request body (more: a 413 naming the limit)."""
    ignore_extra_columns: bool = False
    """Drop columns the model does not take (a whole CSV row, say) and score the rest; false: such a request is a
    422 naming the columns."""
    swap_poll_s: float = 2.0
    """How often the endpoint reads the promotion log for a new champion."""
    downstream_url: str = ""
    """A URL each request waits on (a dependency, traced as its own span); `""`: none."""
    downstream_timeout_ms: float = 1000.0
    """The downstream call's timeout."""
    online: OnlineConfig = field(default_factory=OnlineConfig)
    """The online test, used when `gate.promotion` is `online`."""
    min_replicas: int = 1
    """`infra/k8s/render_serving.py`: the Deployment's autoscaler scales between this ..."""
    max_replicas: int = 4
    """... and this many replicas ..."""
    target_queue_depth: float = 4.0
    """... on each pod's `mlassets_serving_queue_depth` (average), not on CPU."""

    def __post_init__(self) -> None:
        if not 1 <= self.min_replicas <= self.max_replicas:
            raise ConfigError(f"serving.min_replicas/max_replicas: need 1 <= min <= max, got {self.min_replicas} and "
                              f"{self.max_replicas}")
        if self.target_queue_depth <= 0:
            raise ConfigError(f"serving.target_queue_depth: must be > 0, got {self.target_queue_depth}")
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


def check_serving(serving: ServingConfig, inputs: list[str]) -> None:
    """``serving.online.label_key`` names columns the model takes (``inputs``, the features): the endpoint records
    only those of a row."""
    for column in serving.online.label_key:
        if column not in inputs:
            raise ConfigError(f"serving.online.label_key: {column!r} is not one of the model's input columns "
                              f"(features.categorical and features.numeric: {', '.join(inputs)}); got "
                              f"{serving.online.label_key!r}")
