"""``mlassets env``: the variables that point a user's own Python (a notebook, a script) at the home's registry,
as ``export`` lines (``eval "$(mlassets env)"``); ``mlassets.use_home()`` does the same from Python."""

from __future__ import annotations

import argparse
import sys


def cmd_env(args: argparse.Namespace) -> int:
    from mlassets.core.home_env import NoHome, exports, user_env

    try:
        env = user_env(args.home)
    except NoHome as exc:
        print(f"mlassets env: error: {exc}", file=sys.stderr)
        return 2
    print(exports(env))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    env = sub.add_parser("env", help="export lines that point your own Python at the home's MLflow registry")
    env.add_argument("--home", default=None,
                     help="the mlassets home (default: $MLASSETS_HOME, else ./.mlassets)")
    env.set_defaults(func=cmd_env)
