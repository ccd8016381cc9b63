"""The command line, read from the ``mlassets`` argument parser: every command, its usage and its arguments."""

from __future__ import annotations

import argparse

from mlassets.cli import build_parser
from mlassets.cli.reference.markdown import cell, code, page, table

INTRO = """Every `mlassets` command, as its parser defines it (`mlassets COMMAND --help` prints the same). Bad
input is an error that names it, with exit code 2, and changes nothing."""


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=100)  # not the terminal's width: the page is stable
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _help(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if "%(" in text:
        text = text % {**vars(action), "prog": prog}
    return text


def _default(action: argparse.Action) -> str:
    if action.required or action.default in (None, argparse.SUPPRESS) or isinstance(
            action, argparse._StoreTrueAction | argparse._StoreFalseAction):
        return ""
    return code(action.default) if action.default not in ("", []) else code("")


def _arguments(parser: argparse.ArgumentParser) -> str:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        name = ", ".join(action.option_strings) or action.dest
        choices = f" (one of {', '.join(map(str, action.choices))})" if action.choices else ""
        rows.append((code(name), _default(action), _help(action, parser.prog) + choices))
    return table(("argument", "default", "meaning"), rows) if rows else ""


def _commands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """``(full name, one-line help, parser)`` of every command below ``parser``, depth first, in parser order."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                found.append((sub.prog, helps.get(name, ""), sub))
                found += _commands(sub)
    return found


def render() -> str:
    parser = build_parser()
    sections = []
    for prog, summary, sub in _commands(parser):
        text = [f"## `{prog}`\n"]
        if summary:
            text.append(cell(summary) + "\n")
        if sub.description and sub.description != summary:
            text.append(" ".join(sub.description.split()) + "\n")
        text.append(f"```text\n{_usage(sub)}\n```\n")
        args = _arguments(sub)
        if args:
            text.append(args)
        sections.append("\n".join(text))
    return page("Command line", INTRO, *sections)
