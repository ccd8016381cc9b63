"""Two nodes for real: two torchrun agents that meet by c10d rendezvous on loopback (``--nnodes=2``), the way the
k8s manifests launch them. One node's agent is SIGKILLed mid-run (with its rank); both are started again and the
run resumes from the newest checkpoint to the same final weights as an unkilled run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from mlassets.core.train.job import TrainJob
from mlassets.core.train.launch import node_command
from mlassets.core.train.outcome import read_outcome
from mlassets.core.train.synthetic import tiny_config, write_splits

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[3]
TRAINING = {"epochs": 2, "checkpoint_every_steps": 4, "keep_last": 2, "collective_timeout_s": 20}  # 16 steps


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}
    return {**base, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


def _job(data: tuple[Path, Path], out: Path, **training: object) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    config = tiny_config(**{**TRAINING, **training})
    return TrainJob(config, str(data[0]), str(data[1]), str(out), "v1").to_json(out / "job.json")


def _start_nodes(job: Path, run_id: str) -> list[subprocess.Popen]:
    """Node 0 hosts the rendezvous store; both run one rank; each agent leads its own process group."""
    endpoint = f"127.0.0.1:{_port()}"
    return [subprocess.Popen(node_command(job, 2, 1, endpoint, run_id, node_rank=rank, is_host=rank == 0),
                             env=_env(), start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True) for rank in (0, 1)]


def _finish(nodes: list[subprocess.Popen], timeout: float = 300) -> list[tuple[int, str]]:
    out = []
    for node in nodes:
        try:
            _, err = node.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(node.pid, signal.SIGKILL)
            _, err = node.communicate(timeout=30)
        out.append((node.returncode, err))
    return out


def test_a_node_killed_mid_run_resumes_on_two_nodes_to_the_same_weights(tmp_path: Path) -> None:
    data = write_splits(tmp_path / "data", 1000, 300)
    reference = tmp_path / "reference"
    for code, err in _finish(_start_nodes(_job(data, reference), "ref")):
        assert code == 0, err[-3000:]
    expected = read_outcome(reference).result
    assert expected.environment.world_size == 2

    out = tmp_path / "killed"
    nodes = _start_nodes(_job(data, out, faults={"slow_loader_ms": 500}), "run-1")  # the kill lands mid-run
    first = out / "checkpoints" / "step-000000004"
    deadline = time.monotonic() + 180
    while not first.is_dir() and all(n.poll() is None for n in nodes) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert first.is_dir(), "no checkpoint was written"
    os.killpg(nodes[1].pid, signal.SIGKILL)  # node 1's agent and its rank, as a lost machine
    codes = [code for code, _ in _finish(nodes, timeout=120)]
    assert codes[1] == -signal.SIGKILL and codes[0] != 0  # node 0 cannot go on alone; it fails, it does not hang
    assert not (out / "result.json").exists()
    alive = [p.info["pid"] for p in psutil.process_iter(["pid", "cmdline"])
             if str(out) in " ".join(p.info["cmdline"] or [])]
    assert not alive, f"ranks outlived their agents: {alive}"  # torchrun starts each rank in a session of its own

    results = _finish(_start_nodes(_job(data, out), "run-2"))  # the retry: both nodes again, a new rendezvous
    for code, err in results:
        assert code == 0, err[-3000:]
    resumed = read_outcome(out).result
    assert resumed.resumed_from_step >= 4 and resumed.environment.world_size == 2
    assert resumed.final_weights_sha256 == expected.final_weights_sha256
    assert resumed.weights_sha256 == expected.weights_sha256
