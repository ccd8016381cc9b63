"""``mlassets promote | rollback | history``: the ``champion`` alias, moved only through the promotion log.

Exit codes: 0 done; 2 refused or bad input (nothing changed); 3 lost a race to a concurrent promotion (the
attempt is in the log, the alias untouched); 1 ``history`` found the log's hash chain broken, its anchor not
reached, or the alias disagreeing with the log (``promote`` and ``rollback`` repair the latter, saying so).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from mlassets.core.config import load_config, shipped_configs

if TYPE_CHECKING:  # the commands import MLflow, torch and SQLAlchemy only when they run
    from mlassets.core.registry.promotion import Entry, PromotionLog


def default_model() -> str:
    """The registered model of the one dataset config this stack builds graphs for (``$MLASSETS_CONFIGS`` or the
    configs ``ingest``, ``run`` and ``demo`` registered); the shipped flights config's when none is registered;
    an error naming the choices when there are several."""
    from mlassets.core.config import ConfigError, config_paths

    names = sorted({load_config(p).model.registered_name for p in config_paths()})
    if len(names) == 1:
        return names[0]
    if not names or set(names) == {load_config(p).model.registered_name for p in shipped_configs().values()}:
        return load_config(shipped_configs()["flights"]).model.registered_name  # nothing of one's own yet
    raise ConfigError(f"--model: this stack has {len(names)} models ({', '.join(names)}); name one with --model "
                      "or --config")


def _done(entry: Entry, replaced: Entry | None) -> str:
    origin = f"v{entry.from_version}" if entry.from_version else "none"
    why = f": {entry.reason}" if entry.reason else ""
    text = (f"{entry.model}: champion {origin} -> v{entry.to_version} "
            f"({entry.action}, seq {entry.seq}, by {entry.who}{why})")
    if replaced is not None:  # a concurrent promotion may have moved it since the caller last looked
        text += f"\n  replaced v{replaced.to_version}, live since {replaced.at[:19]} UTC ({replaced.action} by " \
                f"{replaced.who})"
    return text


def _act(args: argparse.Namespace, move: Callable[[], Entry]) -> int:
    """Repair what an interrupted promotion left behind (saying so), then promote or roll back."""
    from mlassets.core.registry import promote
    from mlassets.core.registry.promotion import PromotionLog
    from mlassets.core.tracking import connect

    connect()
    log = PromotionLog()
    for line in promote.sync(args.model, log):
        print(line, file=sys.stderr)
    replaced = log.live(args.model)
    print(_done(move(), replaced))
    return 0


def cmd_promote(args: argparse.Namespace) -> int:
    from mlassets.core.identity.access import model_principal
    from mlassets.core.registry import promote

    who = model_principal("promote", args.model)
    return _act(args, lambda: promote.promote(args.model, args.version, who=who, reason=args.reason,
                                              force=args.force))


def cmd_rollback(args: argparse.Namespace) -> int:
    from mlassets.core.identity.access import model_principal
    from mlassets.core.registry import promote

    who = model_principal("rollback", args.model)
    return _act(args, lambda: promote.rollback(args.model, who=who, reason=args.reason))


def _findings(name: str, log: PromotionLog) -> tuple[str, list[str], bool]:
    """(chain line, error lines, consistent) for ``name``: tampering and the alias or anchor behind the log."""
    from mlassets.core.registry import projection

    entries = log.entries(name)
    state = projection.inspect(name, log)
    if state.problems:  # promote, rollback, serving and warm starts refuse it: say what does repair it
        chain = "hash chain BROKEN: " + "; ".join(state.problems)
        errors = [f"error: {projection.repair_hint(name, log)}; until then promote, rollback, serving and warm "
                  "starts refuse this model's log"]
        errors += [f"error: {d} (repaired from the log once the log is restored)" for d in state.drift]
        return chain, errors, False
    chain = f"hash chain intact ({len(entries)} rows, head {entries[-1].hash[:12]})" if entries else ""
    errors = [f"error: {d} (the log is the truth; the next promote or rollback repairs it)" for d in state.drift]
    return chain, errors, state.consistent


def history_text(name: str, log: PromotionLog | None = None) -> tuple[str, bool]:
    """The log of ``name`` as a table, a line on its hash chain and anchor, and every disagreement between the
    log and MLflow's alias; ``(text, consistent)``."""
    from mlassets.core.registry.promotion import PromotionLog, format_history

    log = log or PromotionLog()
    chain, errors, consistent = _findings(name, log)
    table = format_history(log.entries(name), families(name))
    return "\n".join(line for line in (table, chain, *errors) if line), consistent


def families(name: str) -> dict[str, str]:
    """Each registered version's model family (versions registered before families are the MLP's)."""
    from mlassets.core.config.families import DEFAULT
    from mlassets.core.registry.peek import version_tags

    recorded = dict.fromkeys(version_tags(name, "dagster_run_id"), DEFAULT)  # every version mlassets registered
    return recorded | version_tags(name, "family")


def cmd_history(args: argparse.Namespace) -> int:
    """Reads only (the log, the alias, the anchor): no MLflow import, see ``core.registry.peek``."""
    from mlassets.core.registry.peek import read_model
    from mlassets.core.registry.promotion import PromotionLog, parse_time
    from mlassets.core.registry.versions import RegistryError

    log = PromotionLog()
    if not log.entries(args.model) and read_model(args.model) is None:
        raise RegistryError(f"model {args.model!r} is not registered")  # rather than an empty log
    if not args.at:
        text, consistent = history_text(args.model, log)
        print(text)
        return 0 if consistent else 1
    moment = parse_time(args.at)
    live = log.live(args.model, moment)
    if live is None:
        print(f"{args.model}: no version was live at {moment.isoformat()}")
    else:
        family = families(args.model).get(live.to_version, "-")
        print(f"{args.model}: v{live.to_version} ({family}) was live at {moment.isoformat()} "
              f"({live.action} at {live.at}, seq {live.seq}, by {live.who})")
    chain, errors, consistent = _findings(args.model, log)
    for line in ([chain] if not consistent and chain.startswith("hash chain BROKEN") else []) + errors:
        print(f"warning: {line}", file=sys.stderr)
    return 0 if consistent else 1


def _guarded(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from mlassets.core.registry.promotion import LostRace, PromotionError
        from mlassets.core.registry.versions import RegistryError

        if getattr(args, "config", ""):
            from mlassets.core.config import resolve_config

            args.model = load_config(resolve_config(args.config)).model.registered_name
        args.model = args.model or default_model()
        try:
            return command(args)
        except LostRace as exc:
            print(f"mlassets: {exc}", file=sys.stderr)
            return 3
        except (PromotionError, RegistryError) as exc:
            print(f"mlassets: error: {exc}", file=sys.stderr)
            return 2

    return run


def add_commands(sub: argparse._SubParsersAction) -> None:
    model_help = "registered model name (default: the one registered config's, else the flights config's)"
    promote = sub.add_parser("promote", help="move `champion` to a version with a passing gate (logged)")
    promote.add_argument("version", help="model version number (3 or v3)")
    promote.add_argument("--model", default="", help=model_help)
    promote.add_argument("--config", default="", help="or the dataset config whose model it is")
    promote.add_argument("--force", action="store_true", help="promote a version without a passing gate")
    promote.add_argument("--reason", default="", help="why (required with --force)")
    promote.set_defaults(func=_guarded(cmd_promote))
    rollback = sub.add_parser("rollback", help="move `champion` back to the previous champion (logged)")
    rollback.add_argument("--model", default="", help=model_help)
    rollback.add_argument("--config", default="", help="or the dataset config whose model it is")
    rollback.add_argument("--reason", default="", help="why")
    rollback.set_defaults(func=_guarded(cmd_rollback))
    history = sub.add_parser("history", help="the promotion log; --at TIME names the version live then")
    history.add_argument("--model", default="", help=model_help)
    history.add_argument("--config", default="", help="or the dataset config whose model it is")
    history.add_argument("--at", default="", help="ISO 8601 time (UTC unless it names a zone)")
    history.set_defaults(func=_guarded(cmd_history))
    from mlassets.cli.adopt import add_command

    add_command(sub, model_help, _guarded)
