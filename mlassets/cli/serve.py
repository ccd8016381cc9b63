"""``mlassets serve MODEL``: the gated champion of a registered model behind an HTTP endpoint (127.0.0.1).

Bound beyond loopback it needs bearer tokens (``mlassets token issue NAME --scope predict``) and refuses to start
without one unless ``--insecure`` is given; whenever tokens exist the endpoint checks them (``mlassets.serve.auth``).
"""

from __future__ import annotations

import argparse
import ipaddress
from typing import Any

from mlassets.core import paths
from mlassets.serve.build import TRACE_FILE, build

LOGGER = "mlassets.serve"  # the logger of the serve package (swaps, refusals, online tests)


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: whatever it resolves to, it is not known to be loopback
        return False


def auth_store(host: str, insecure: bool):  # noqa: ANN201 - TokenStore | None
    """The tokens the endpoint checks (None: open); ``ServingError`` beyond loopback with no token and no
    ``--insecure``."""
    from mlassets.core.identity.tokens import TokenStore
    from mlassets.serve.load import ServingError

    if insecure:
        return None
    store = TokenStore()
    records = store.records()
    if not loopback(host) and not any("predict" in r.scopes for r in records.values()):
        raise ServingError(f"--host {host} is beyond loopback and no token with the 'predict' scope is configured "
                           f"in {store.path}: issue one (mlassets token issue NAME --scope predict) or say "
                           "--insecure to serve anyone who reaches the port")
    return store if records else None


def batching_text(batcher: Any) -> str:
    """Whether concurrent requests share a forward pass (``serving.batching``), and its limits."""
    if not batcher.enabled:
        return "batching off (one forward pass per request: serving.batching false)"
    return f"batching on (up to {batcher.max_rows} rows a pass, waiting up to {batcher.wait_s * 1000:g} ms for more)"


def start_line(app: Any, url: str, guard: str) -> str:
    """What ``mlassets serve`` prints once it is ready: the version, the address, the routes, who may call it,
    whether requests are batched, and where the traces go."""
    model = app.state.champion.current
    return (f"serving {model.name} v{model.version} ({model.basis}) on {url} (POST /invocations, /predict; GET "
            f"/health, /ready, /metrics; {guard}); {batching_text(app.state.batcher)}; traces in "
            f"{paths.home() / TRACE_FILE}")


def stamp_log() -> None:
    """The server's own log lines (a champion swapped or refused, an online test's decision) on stderr, each with
    its time (ISO 8601, UTC) and level."""
    import logging
    import time

    handler = logging.StreamHandler()
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%dT%H:%M:%SZ")
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    logger = logging.getLogger(LOGGER)
    if not any(getattr(h, "mlassets_stamped", False) for h in logger.handlers):
        handler.mlassets_stamped = True  # type: ignore[attr-defined]  # once per process
        logger.addHandler(handler)


def cmd_serve(args: argparse.Namespace) -> int:
    import sys

    import uvicorn

    from mlassets.core.identity.access import load_access, model_principal
    from mlassets.serve.auth import BearerAuth
    from mlassets.serve.load import ServingError
    from mlassets.serve.telemetry import stamped_http

    # the endpoint decides online tests by itself (rows of the promotion log): an owner of the model's team starts it
    who = model_principal("serve", args.model)
    try:
        store = auth_store(args.host, args.insecure)
        app = build(args.model, args.config)
    except ServingError as exc:
        print(f"mlassets serve: refused: {exc}", file=sys.stderr)
        return 2
    if load_access() is not None:  # its decisions name the person who started it
        app.state.online.who += f", started by {who}"
    if store is not None:
        app.add_middleware(BearerAuth, store=store)
    guard = f"bearer tokens of {store.path}" if store is not None else "no token asked (--insecure or loopback)"
    stamp_log()
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False,
                            http=stamped_http())
    server = listening_server()(config, start_line(app, f"http://{args.host}:{args.port}", guard))
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn raises the Ctrl-C it caught again once it has shut down
        pass
    return 0 if server.started else 1


def listening_server() -> type:
    """uvicorn's ``Server`` that prints ``line`` once its socket listens (a client that reads it may connect at
    once), not before; a port it cannot bind prints uvicorn's error instead."""
    import uvicorn

    class Listening(uvicorn.Server):
        def __init__(self, config: uvicorn.Config, line: str) -> None:
            super().__init__(config)
            self.line = line

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                print(self.line, flush=True)

    return Listening


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("serve", help="the champion of a registered model behind an HTTP endpoint")
    parser.add_argument("model", help="the registered model (e.g. flights_arr_delay)")
    parser.add_argument("--host", default="127.0.0.1", help="the address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="default 8080")
    parser.add_argument("--config", help="the dataset config (a shipped name or a YAML file); default: the one "
                                         "whose model.registered_name is MODEL")
    parser.add_argument("--insecure", action="store_true",
                        help="serve without bearer tokens even beyond loopback (anyone who reaches the port)")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    parser.set_defaults(func=cmd_serve)
