"""``mlassets rebuild MODEL --version N``: exit 0 when the rebuilt model predicts identically."""

from __future__ import annotations

import argparse
import sys


def cmd_rebuild(args: argparse.Namespace) -> int:
    from mlassets.core.registry.rebuild import RebuildError, rebuild
    from mlassets.core.registry.versions import RegistryError

    try:
        report = rebuild(args.model, args.version)
    except (RegistryError, RebuildError) as exc:
        print(f"mlassets rebuild: error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(report.lines()))
    return 0 if report.identical else 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("rebuild", help="retrain a registered version from its record; compare predictions")
    parser.add_argument("model", help="registered model name, e.g. flights_arr_delay")
    parser.add_argument("--version", required=True, help="model version number")
    parser.set_defaults(func=cmd_rebuild)
