"""The served champion, and its swap when the promotion log moves (promote, rollback) without a restart.

A poll thread reads the log (its chain and anchor checked, as ``load_champion`` does); a new live version is
loaded through ``load_version``'s checks off the request path and swapped in at once; a version that fails them
is refused with an alert (logged, counted) and the old one keeps serving.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mlassets.core.registry import promote
from mlassets.core.registry.promotion import PromotionError
from mlassets.serve.load import ServedModel, ServingError, load_version

LOG = logging.getLogger("mlassets.serve")


class Champion:
    """``current`` is the model answering requests; ``poll_once`` follows the promotion log."""

    def __init__(self, model: ServedModel, on_swap: Callable[[str, str], None] | None = None) -> None:
        self.current = model
        self.name = model.name
        self.on_swap = on_swap  # (outcome, message): "swapped" or "refused"
        self.pollers: list[Callable[[], object]] = []  # run after each poll (the online test follows the log)
        self._refused: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll_once(self) -> str:
        """``unchanged``, ``swapped`` or ``refused`` (the reason logged as an alert)."""
        try:
            live = promote.trusted_live_version(self.name)
        except PromotionError as exc:
            return self._refuse("log", f"the promotion log of {self.name!r} is not trusted: {exc}")
        if live is None or str(live) == self.current.version:
            self._refused = None
            return "unchanged"
        if str(live) == self._refused:
            return "refused"
        try:
            model = load_version(self.name, live)
        except ServingError as exc:
            return self._refuse(str(live), f"{self.name} v{live} is refused, v{self.current.version} keeps "
                                           f"serving: {exc}")
        old, self.current = self.current, model
        self._refused = None
        message = f"{self.name}: v{old.version} -> v{model.version} ({model.basis})"
        LOG.warning("champion swapped: %s", message)
        if self.on_swap:
            self.on_swap("swapped", message)
        return "swapped"

    def _refuse(self, what: str, message: str) -> str:
        if self._refused != what:
            LOG.error("ALERT: %s", message)
            if self.on_swap:
                self.on_swap("refused", message)
        self._refused = what
        return "refused"

    def start(self, every_s: float) -> None:
        def loop() -> None:
            while not self._stop.wait(every_s):
                try:
                    self.poll_once()
                except Exception:  # noqa: BLE001 - the registry may be down a moment; the old model keeps serving
                    LOG.exception("champion poll of %s failed; v%s keeps serving", self.name, self.current.version)
                for poller in self.pollers:
                    try:
                        poller()
                    except Exception:  # noqa: BLE001 - as above: logged, the next poll tries again
                        LOG.exception("online test poll of %s failed", self.name)

        self._thread = threading.Thread(target=loop, name="mlassets-champion-poll", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
