"""Config inputs with limits (issue 22, case 5): duplicate keys, alias bombs, huge files and ranks the machine
cannot run are refused at load, naming the key path (and lines, value or size)."""

from __future__ import annotations

import dataclasses
import tracemalloc
from pathlib import Path

import pytest
import yaml

from mlassets.core.config import ConfigError, load_config, shipped_configs

FLIGHTS = shipped_configs()["flights"].read_text()
NODE_ENV = "MLASSETS_TRAINING_NODE"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return path


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(needle))


def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path: Path) -> None:
    twice = FLIGHTS.replace("  epochs: 4\n", "  epochs: 4\n  batch_size: 512\n  epochs: 400\n", 1)
    first = _line(twice, "  epochs: 4")
    with pytest.raises(ConfigError, match=rf"training\.epochs is given twice \(lines {first} and {first + 2}\)"):
        load_config(_write(tmp_path, twice))
    gates = FLIGHTS + "gate:\n  tolerance: 0.5\n"  # a second top-level section
    with pytest.raises(ConfigError, match=rf"gate is given twice \(lines {_line(gates, 'gate:')} and "
                                          rf"{len(gates.splitlines()) - 1}\)"):
        load_config(_write(tmp_path, gates))


def test_anchors_and_merge_keys_still_load(tmp_path: Path) -> None:
    from mlassets.core.config.yaml_limits import load_yaml

    data = yaml.safe_load(FLIGHTS)
    text = FLIGHTS.replace("training:\n", "training: &train\n", 1) + "tuning:\n  params: [lr]\n"
    text = text.replace("gate:\n", "x_unused: &g {tolerance: 0.03}\ngate:\n  <<: *g\n", 1)
    with pytest.raises(ConfigError, match="x_unused: unknown key"):  # the anchor itself is fine; the key is not
        load_config(_write(tmp_path, text))
    merged = load_yaml(text, "cfg")
    assert merged["gate"]["tolerance"] == data["gate"]["tolerance"]  # the explicit key overrides the merge


def test_a_billion_laughs_alias_is_refused_at_once(tmp_path: Path) -> None:
    levels = ["&a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    levels += [f"&a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    text = FLIGHTS.replace("  epochs: 4\n", f"  epochs: [{', '.join(levels)}]\n", 1)  # 10^9 values as one
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError, match=r"expands to more than 100000 values through its aliases \(line \d+: "
                                              r"the alias \*a4\)"):  # the first one past the bound
            load_config(_write(tmp_path, text))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, peak  # it took 165 s and 3.2 GB; the bound is checked before building
    with pytest.raises(ConfigError, match="a recursive structure"):
        load_config(_write(tmp_path, "a: &a [1, *a]\n"))


def test_a_huge_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as fh:
        fh.truncate(50 * 1024 * 1024)  # 50 MB (sparse): refused by its size, before a byte is parsed
    with pytest.raises(ConfigError, match=r"52428800 bytes is more than a config may hold \(1048576 bytes\)"):
        load_config(path)


def test_ranks_are_checked_against_the_machine_with_an_override_for_clusters(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(NODE_ENV, raising=False)
    monkeypatch.delenv("MLASSETS_PROFILE", raising=False)
    text = FLIGHTS.replace("  nproc: 1\n", "  nproc: 1000\n").replace("  batch_size: 512\n", "  batch_size: 4096\n")
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError, match=r"training\.nproc: 1000 ranks x training\.threads 1 need 1000 CPU "
                                          r"cores; this machine has \d+ CPU core\(s\)"):
        load_config(path)
    monkeypatch.setenv(NODE_ENV, "cpus=2048,gpus=0")  # the cluster's training nodes
    assert load_config(path).training.nproc == 1000
    monkeypatch.setenv(NODE_ENV, "any")
    assert load_config(path).training.nproc == 1000
    monkeypatch.setenv(NODE_ENV, "lots")
    with pytest.raises(ConfigError, match=rf"\${NODE_ENV}: 'lots' is not 'cpus=N,gpus=M'"):
        load_config(path)
    from mlassets.core.config.resources import Node, check_resources

    monkeypatch.delenv(NODE_ENV)
    flights = load_config(shipped_configs()["flights"])
    gpu = dataclasses.replace(flights, training=dataclasses.replace(flights.training, backend="nccl", nproc=8))
    with pytest.raises(ConfigError, match=r"training\.nproc: 8 ranks need 8 GPUs with backend 'nccl'; node x has "
                                          r"64 CPU core\(s\) and 4 GPU\(s\)"):
        check_resources(gpu, Node(64, 4, "node x"))
    check_resources(gpu, Node(64, 8, "node x"))
