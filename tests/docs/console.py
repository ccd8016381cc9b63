"""Run the ``console`` blocks of a Markdown page as a reader would, and check what they print.

A block's lines that start with ``$ `` are commands (run by bash in one working folder, one after the other, with
``export``/``cd`` kept for the next); the lines after a command, up to the next one, are what it prints. The
printed lines must appear in the command's output in order (other lines may come between them), compared
with runs of spaces folded and these parts free: ``…`` (anything), decimals (``10.07``), hexadecimal ids of eight
digits or more (a commit ``455b59e9``), dates and times. A command that exits non-zero must say so on its last
printed line, ``exit status N``, as a shell prompt would. A command ending in `` &`` runs in the background until
the page is done; the lines shown for it are waited for in its output.

``python -m tests.docs.console PAGE`` runs a page in a scratch folder and prints what each command printed.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w*)")
_FREE = re.compile("|".join([
    "…",
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",  # a run id
    r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?",  # a date and time
    r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,}\b",  # a commit or trace id
    r"(?<![\w.])-?\d+\.\d+(?![\w.])",  # a decimal
]))


@dataclass
class Command:
    line: str
    expected: list[str] = field(default_factory=list)
    page_line: int = 0

    @property
    def background(self) -> bool:
        return self.line.rstrip().endswith("&")


def blocks(text: str) -> list[tuple[str, int, list[str]]]:
    """``(language, first line number, lines)`` of every fenced block."""
    found, lang, start, body = [], None, 0, []
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if match and lang is None:
            lang, start, body = match.group(1), number + 1, []
        elif line.startswith("```") and lang is not None:
            found.append((lang, start, body))
            lang = None
        elif lang is not None:
            body.append(line)
    return found


def commands(text: str) -> list[Command]:
    out: list[Command] = []
    for lang, start, body in blocks(text):
        if lang != "console":
            continue
        for offset, line in enumerate(body):
            if line.startswith("$ "):
                out.append(Command(line[2:], page_line=start + offset))
            elif out and line.strip():
                out[-1].expected.append(line)
    return out


def pattern(expected: str) -> re.Pattern[str]:
    """One printed line as a regular expression: the free parts match anything of their kind."""
    parts, last = [], 0
    for match in _FREE.finditer(expected):
        free = match.group()
        parts += [re.escape(expected[last:match.start()]), ".*?" if free == "…" or " " in free else r"\S+?"]
        last = match.end()
    parts.append(re.escape(expected[last:]))
    text = re.sub(r"(\\ )+", r"\\s+", "".join(parts))
    return re.compile(r"^\s*" + text.strip() + r"\s*$")


def missing(expected: list[str], output: str) -> list[str]:
    """The expected lines not found, in order, among the output's lines (empty: the output matches)."""
    lines, at = output.splitlines(), 0
    for i, want in enumerate(expected):
        regex = pattern(want)
        while at < len(lines) and not regex.match(lines[at]):
            at += 1
        if at == len(lines):
            return expected[i:]
        at += 1
    return []


class Page:
    """A page's commands run in ``folder``, with a fresh ``$MLASSETS_HOME`` under it."""

    def __init__(self, folder: Path, replace: dict[str, str] | None = None) -> None:
        self.cwd = folder
        self.replace = replace or {}
        self.env = {**os.environ, "MLASSETS_HOME": str(folder / "home"), "PYTHONPATH": str(ROOT),
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                    "MLFLOW_DISABLE_TELEMETRY": "true", "COLUMNS": "200"}
        for var in ("MLASSETS_CONFIGS", "DAGSTER_HOME", "MLFLOW_TRACKING_URI", "MLASSETS_PROFILE"):
            self.env.pop(var, None)
        self.background: list[tuple[subprocess.Popen, Path]] = []

    def _text(self, text: str) -> str:
        for old, new in self.replace.items():
            text = text.replace(old, new)
        return text

    def run(self, command: Command, timeout: float = 600) -> str:
        """Run one command; return what it printed (stdout and stderr), ``exit status N`` last when it failed."""
        line = self._text(command.line)
        words = shlex.split(line) if not command.background else []
        if words[:1] == ["export"]:
            for word in words[1:]:
                name, _, value = word.partition("=")
                self.env[name] = os.path.expandvars(value.replace("$PWD", str(self.cwd)))
            return ""
        if words[:1] == ["cd"] and len(words) == 2:
            self.cwd = (self.cwd / os.path.expandvars(words[1])).resolve()
            return ""
        if command.background:
            return self._start(line.rstrip()[:-1], command, timeout)
        done = subprocess.run(["bash", "-c", line], cwd=self.cwd, env=self.env, capture_output=True, text=True,
                              timeout=timeout, start_new_session=True)
        output = done.stdout + done.stderr
        return output + (f"\nexit status {done.returncode}" if done.returncode else "")

    def _start(self, line: str, command: Command, timeout: float) -> str:
        log = self.cwd / f".background-{len(self.background)}.log"
        with log.open("w") as out:
            proc = subprocess.Popen(["bash", "-c", line], cwd=self.cwd, env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.background.append((proc, log))
        expected = [self._text(e) for e in command.expected]
        deadline = time.monotonic() + min(timeout, 180)  # a server that never says its line fails in minutes
        while missing(expected, log.read_text()) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        # a server says its line just before it listens: the next command waits until its loopback port accepts
        for port in sorted(set(re.findall(r"127\.0\.0\.1:(\d+)", "\n".join(expected)))):
            while proc.poll() is None and time.monotonic() < deadline:
                with socket.socket() as sock:
                    sock.settimeout(1.0)
                    if sock.connect_ex(("127.0.0.1", int(port))) == 0:
                        break
                time.sleep(0.2)
        return log.read_text()

    def close(self) -> None:
        for proc, _ in self.background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


def check(page: Path, folder: Path, replace: dict[str, str] | None = None) -> None:
    """Run every command of ``page``; AssertionError naming the first command whose output does not match."""
    runner = Page(folder, replace)
    try:
        for command in commands(page.read_text()):
            output = runner.run(command)
            expected = [runner._text(e) for e in command.expected]
            failed = "exit status" in output and not any(e.startswith("exit status") for e in expected)
            lost = missing(expected, output)
            assert not failed and not lost, (
                f"{page.name}:{command.page_line}: $ {command.line}\n"
                + (f"expected, not found: {lost[0]!r}\n" if lost else "it failed, and the page does not say so\n")
                + f"--- it printed:\n{output[-4000:]}")
    finally:
        runner.close()


def main(argv: list[str]) -> int:
    page = Path(argv[0]).resolve()
    with tempfile.TemporaryDirectory(prefix="mlassets-docs-") as folder:
        runner = Page(Path(folder))
        try:
            for command in commands(page.read_text()):
                started = time.monotonic()
                output = runner.run(command)
                print(f"$ {command.line}    [{time.monotonic() - started:.1f} s]\n{output.rstrip()}")
                lost = missing([runner._text(e) for e in command.expected], output)
                if lost:
                    print(f"!!! not found: {lost[0]!r}")
        finally:
            runner.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
