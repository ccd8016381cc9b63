"""``mlassets serve MODEL``: the gated champion of a registered model behind an HTTP endpoint (127.0.0.1)."""

from __future__ import annotations

import argparse

from mlassets.core import paths
from mlassets.serve.build import TRACE_FILE, build


def cmd_serve(args: argparse.Namespace) -> int:
    import sys

    import uvicorn

    from mlassets.serve.load import ServingError

    try:
        app = build(args.model, args.config)
    except ServingError as exc:
        print(f"mlassets serve: refused: {exc}", file=sys.stderr)
        return 2
    model = app.state.champion.current
    print(f"serving {model.name} v{model.version} ({model.basis}) on http://{args.host}:{args.port} "
          f"(POST /invocations, /predict; GET /health, /ready, /metrics); traces in {paths.home() / TRACE_FILE}",
          flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("serve", help="the champion of a registered model behind an HTTP endpoint")
    parser.add_argument("model", help="the registered model (e.g. flights_arr_delay)")
    parser.add_argument("--host", default="127.0.0.1", help="the address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="default 8080")
    parser.add_argument("--config", help="the dataset config (a shipped name or a YAML file); default: the one "
                                         "whose model.registered_name is MODEL")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    parser.set_defaults(func=cmd_serve)
