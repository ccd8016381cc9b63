"""Safe by default: every YAML load in the repository is a safe load, and every service mlassets starts (or ships a
manifest for) listens on 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import ast
import socket

from mlassets.cli import build_parser
from mlassets.cli.ui import servers
from tests.infra.conftest import ROOT, load_all

SOURCES = ["mlassets", "dashboard", "tests", "bench", "scripts", "infra"]
UNSAFE_CALLS = {"unsafe_load", "unsafe_load_all", "full_load", "full_load_all"}


def _yaml_loads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, problem) for each YAML load that is not safe."""
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "yaml":
            bad = {a.name for a in node.names} & (UNSAFE_CALLS | {"load", "load_all", "Loader", "FullLoader"})
            if bad:
                problems.append((node.lineno, f"from yaml import {', '.join(sorted(bad))}"))
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = getattr(node.func.value, "id", "")
        if owner != "yaml":
            continue
        if node.func.attr in UNSAFE_CALLS:
            problems.append((node.lineno, f"yaml.{node.func.attr}"))
        elif node.func.attr in ("load", "load_all"):
            loader = next((k.value for k in node.keywords if k.arg == "Loader"), node.args[1] if len(node.args) > 1
                          else None)
            text = ast.unparse(loader) if loader is not None else ""
            names = {n.attr if isinstance(n, ast.Attribute) else getattr(n, "value", getattr(n, "id", ""))
                     for n in ast.walk(loader)} if loader is not None else set()
            loaders = {n for n in names if isinstance(n, str) and n.endswith("Loader")}
            if not loaders or not loaders <= {"SafeLoader", "CSafeLoader"}:
                problems.append((node.lineno, f"yaml.{node.func.attr}(Loader={text or 'missing'})"))
    return problems


def test_every_yaml_load_in_the_repository_is_safe() -> None:
    found = []
    for folder in SOURCES:
        for path in (ROOT / folder).rglob("*.py"):
            for line, problem in _yaml_loads(ast.parse(path.read_text(), str(path))):
                found.append(f"{path.relative_to(ROOT)}:{line}: {problem}")
    assert not found, "unsafe YAML loads:\n" + "\n".join(found)


def test_the_checker_catches_unsafe_loads() -> None:
    code = ("import yaml\nyaml.load(t, Loader=yaml.Loader)\nyaml.load(t)\nyaml.unsafe_load(t)\n"
            "yaml.load(t, Loader=yaml.SafeLoader)\nyaml.load(t, Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))\n"
            "yaml.safe_load(t)\n")
    assert [line for line, _ in _yaml_loads(ast.parse(code))] == [2, 3, 4]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_mlassets_ui_binds_loopback_unless_told_otherwise(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("MLASSETS_HOME", str(tmp_path))
    monkeypatch.setenv("MLASSETS_DASHBOARD_PORT", str(_free_port()))
    args = build_parser().parse_args(["ui"])
    assert args.host == "127.0.0.1"
    planned = servers(args.host, _free_port(), _free_port())
    assert [s.name for s in planned] == ["Dagster UI", "MLflow UI", "dashboard"]
    for server in planned:
        flags = {"-h", "--host", "--server.address"}
        hosts = [server.command[i + 1] for i, word in enumerate(server.command) if word in flags]
        assert hosts == ["127.0.0.1"], f"{server.name}: {server.command}"
        assert server.url.startswith("http://127.0.0.1:")


def test_kubernetes_services_are_cluster_internal() -> None:
    for manifest in ("k8s/dagster.yaml", "k8s/train-multinode.yaml"):
        for doc in load_all(manifest):
            if doc["kind"] == "Service":
                assert doc["spec"].get("type", "ClusterIP") == "ClusterIP", doc["metadata"]["name"]
            assert doc["kind"] != "Ingress"  # exposure is the operator's choice, behind their SSO
