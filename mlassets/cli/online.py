"""``mlassets online status|start|promote|rollback|labels MODEL``: see and decide an online test by hand.

The endpoint decides by itself once ``serving.online.min_requests`` is reached (``auto_decide``); these commands
show what it saw (``GET /online`` of a running endpoint) and let a person start, promote or roll back a test, or
hand it labels that arrived (``labels_cli``). Every step is a row of the promotion log, as ``mlassets history``
shows.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import Any

from mlassets.cli.online_labels import add_parser as add_labels
from mlassets.cli.online_labels import cmd_labels


def _endpoint(url: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/online", timeout=5) as reply:  # noqa: S310 - http(s) only
            return json.loads(reply.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:.1f}{unit}" if isinstance(value, float) else str(value)


def status_text(model: str, url: str) -> str:
    from mlassets.core.metric_defs import get_metric
    from mlassets.core.registry import online_log

    test = online_log.running(model)
    if test is None:
        lines = [f"{model}: no online test running (mlassets history {model} shows the past ones)"]
    else:
        lines = [f"{model}: v{test.candidate} as {test.mode} against champion v{test.champion}, started "
                 f"{test.started_at[:19]} UTC by {test.who} (seq {test.seq}): {test.reason}"]
    seen = _endpoint(url) if url.startswith(("http://", "https://")) else None
    if seen is None:
        return "\n".join([*lines, f"no endpoint answered at {url}/online (its figures need it running)"])
    if not seen.get("test"):
        return "\n".join([*lines, f"the endpoint at {url} runs no online test"])
    lines += ["", f"{'variant':<12}{'requests':>9}{'errors':>8}{'p50 ms':>9}{'p95 ms':>9}{'mean':>10}"]
    for name, figures in seen["variants"].items():
        label = seen["test"]["mode"] if name == "candidate" else name
        lines.append(f"{label:<12}{figures['requests']:>9}{figures['errors']:>8}{_fmt(figures['p50_ms']):>9}"
                     f"{_fmt(figures['p95_ms']):>9}{_fmt(figures.get('mean')):>10}")
    decision = seen["decision"]
    figures = decision.get("figures") or {}
    if "metric" in figures:
        metric = get_metric(figures["metric"])
        values = [figures[f"metric_{who}"] for who in ("champion", "candidate")]
        values = ["-" if v is None else metric.fmt(v) for v in values]
        lines += ["", f"labels: {figures['labelled_champion']} champion and {figures['labelled_candidate']} "
                      f"{seen['test']['mode']} rows labelled; {metric.label} {values[0]} and {values[1]}"]
    lines += ["", f"rule: {decision['outcome']}: {decision['reason']}"]
    return "\n".join(lines)


def cmd_online(args: argparse.Namespace) -> int:
    from mlassets.core.registry import online_log
    from mlassets.core.registry.promotion import PromotionError
    from mlassets.core.tracking import connect

    if args.action != "status":  # every other action changes the test: an owner of the model's team, checked first
        from mlassets.core.identity.access import model_principal

        args.who = model_principal("online", args.model)
    connect()
    if args.action == "labels":
        return cmd_labels(args)
    try:
        if args.action == "status":
            print(status_text(args.model, args.url))
            return 0
        who = args.who
        if args.action == "start":
            entry = online_log.start(args.model, args.version, args.mode, who=who, reason=args.reason)
            print(f"{args.model}: v{entry.to_version} started as {args.mode} against v{entry.from_version} "
                  f"(seq {entry.seq}); a running `mlassets serve {args.model}` picks it up at its next poll")
            return 0
        test = online_log.running(args.model)
        if test is None:
            raise PromotionError(f"model {args.model!r} has no online test running")
        reason = f"by hand: {args.reason}"
        if args.action == "promote":
            entry = online_log.promote_candidate(args.model, test, reason, who=who)
        else:
            entry = online_log.roll_back(args.model, test, reason, who=who)
        print(f"{args.model}: {entry.action} v{entry.to_version} (seq {entry.seq}): {entry.reason}")
        return 0
    except PromotionError as exc:
        print(f"mlassets online: refused: {exc}", file=sys.stderr)
        return 2


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("online", help="see and decide the online test (canary or shadow) of a model")
    actions = parser.add_subparsers(dest="action", required=True)
    status = actions.add_parser("status", help="the running test, and what the endpoint saw of each variant")
    status.add_argument("model")
    status.add_argument("--url", default="http://127.0.0.1:8080", help="the endpoint (default 127.0.0.1:8080)")
    start = actions.add_parser("start", help="start a test of VERSION against the champion")
    start.add_argument("model")
    start.add_argument("version")
    start.add_argument("--mode", default="canary", choices=["canary", "shadow"])
    start.add_argument("--reason", default="")
    for name, text in (("promote", "end the test by promoting the candidate"),
                       ("rollback", "end the test; the champion stays")):
        decide = actions.add_parser(name, help=text)
        decide.add_argument("model")
        decide.add_argument("--reason", required=True, help="why (a row of the promotion log)")
    add_labels(actions)
    parser.set_defaults(func=cmd_online)
