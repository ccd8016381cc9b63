"""The ``mlassets`` command and its subcommands (``mlassets --help`` lists them, each with its one line): one module in
``mlassets/cli/`` per command or group of commands, each adding its own parser here."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings

from mlassets.cli.fleet import add_parser as add_fleet
from mlassets.core.config import ConfigError


def operated(what: str) -> str:
    """``what``'s name in the home's lock once the principal may run it, with who started it when access.yaml
    exists (a platform admin: the UI launches any team's runs, the daemon's sensors ingest and train every
    dataset); a second daemon or UI is refused naming it."""
    from mlassets.core import paths
    from mlassets.core.identity.access import authorize, load_access

    who = authorize("operate", None, f"{what} on {paths.home()}")
    return f"{what}, started by {who}" if load_access() is not None else what


def cmd_ui(args: argparse.Namespace) -> int:
    from mlassets.cli.ui import serve
    from mlassets.core.config import load_config, resolve_config
    from mlassets.host.runs import register

    what = operated("mlassets ui")
    for spec in args.config:  # the graphs the UI shows: these, beside those already registered
        register(load_config(resolve_config(spec)))
    return serve(args.host, args.port, args.mlflow_port, args.dashboard_port, args.redirect_old_links, what)


def cmd_daemon(args: argparse.Namespace) -> int:
    from mlassets.cli.daemon import serve
    from mlassets.core.config import load_config, resolve_config
    from mlassets.host.runs import register

    what = operated("mlassets daemon")
    for spec in args.config:  # the datasets it watches: these, beside those already registered
        register(load_config(resolve_config(spec)))
    return serve(what)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser; ``command="fleet"``: the fleet's alone (its commands import no other group's)."""
    parser = argparse.ArgumentParser(prog="mlassets", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    if command == "fleet":
        add_fleet(sub)
        return parser
    from mlassets.cli.access import add_parser as add_access
    from mlassets.cli.data import add_commands as add_data_commands
    from mlassets.cli.diagnose import add_parser as add_diagnose
    from mlassets.cli.doctor import add_parser as add_doctor
    from mlassets.cli.env import add_parser as add_env
    from mlassets.cli.online import add_parser as add_online
    from mlassets.cli.prune_transactions import add_parser as add_prune_transactions
    from mlassets.cli.prune_work import add_parser as add_prune
    from mlassets.cli.rebuild import add_parser as add_rebuild
    from mlassets.cli.registry import add_commands
    from mlassets.cli.serve import add_parser as add_serve

    add_data_commands(sub)
    ui = sub.add_parser("ui", help="Dagster webserver and MLflow UI on the embedded stack")
    ui.add_argument("--host", default="127.0.0.1")
    ui.add_argument("--port", type=int, default=None,
                    help="the Dagster UI's port (default: the UI setting's, $MLASSETS_HOME/ui.json, else 3000)")
    ui.add_argument("--mlflow-port", type=int, default=None,
                    help="the MLflow UI's port (default: the setting's, else 5000); 0 to skip the MLflow UI")
    ui.add_argument("--dashboard-port", type=int, default=None,
                    help="the dashboard's port (default: $MLASSETS_DASHBOARD_PORT, else the setting's, else 8501, "
                         "else a free one); 0 to skip the dashboard")
    ui.add_argument("--redirect-old-links", action="store_true",
                    help="also answer on the UIs' earlier loopback addresses (where links recorded before point) "
                         "with a redirect to the new ones; without it only the UIs' own ports are bound")
    ui.add_argument("--config", action="append", default=[],
                    help="a dataset config to show (a shipped name or a YAML file; repeatable)")
    ui.set_defaults(func=cmd_ui)
    daemon = sub.add_parser("daemon", help="the Dagster daemon alone (sensors, schedules, run queue), no UIs")
    daemon.add_argument("--config", action="append", default=[],
                        help="a dataset config to watch (a shipped name or a YAML file; repeatable)")
    daemon.set_defaults(func=cmd_daemon)
    add_prune_transactions(sub)
    add_prune(sub)
    add_commands(sub)
    add_rebuild(sub)
    add_doctor(sub)
    add_diagnose(sub)
    add_serve(sub)
    add_env(sub)
    add_online(sub)
    add_fleet(sub)
    add_access(sub)
    return parser


def _quiet_mlflow() -> None:
    """MLflow's INFO lines (database set-up, signature checks) are not the command's output; warnings stay."""
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")  # read when mlflow is imported
    if "mlflow" in sys.modules:
        logging.getLogger("mlflow").setLevel(os.environ["MLFLOW_LOGGING_LEVEL"].upper())


def main(argv: list[str] | None = None) -> int:
    _quiet_mlflow()
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*is currently in beta.*")
    warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
    warnings.filterwarnings("ignore", message=".*is currently in preview.*")
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser("fleet" if argv[:1] == ["fleet"] else None).parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, ValueError) as exc:
        print(f"mlassets: error: {exc}", file=sys.stderr)
        return 2

