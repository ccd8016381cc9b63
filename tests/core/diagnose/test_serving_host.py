"""The serving verdict on a busy host: spans with wall and CPU time and the host's CPU pressure, as a server
records them; the pressure sampler on PSI and on the run queue without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlassets.core.diagnose import host, spans
from mlassets.core.diagnose.host import Pressure, Sampler
from mlassets.core.diagnose.serving_example import seed_p99_spans
from mlassets.core.diagnose.serving_verdict import recorded

# a fast configuration: a few ms a request, its CPU-bound stages computing all their wall time
FAST = {"receive": 0.3, "preprocessing": 1.0, "batch_queue": 1.5, "model": 2.0, "postprocessing": 0.5}
FAST_CPU = {"preprocessing": 1.0, "model": 2.0, "postprocessing": 0.5}
# the same requests under a CPU hog: the CPU-bound stages and the queue behind the passes stretched by waits
HOGGED = {"receive": 4.0, "preprocessing": 20.0, "batch_queue": 30.0, "model": 40.0, "postprocessing": 10.0}
SATURATED = Pressure(95.0, 6.0, 2)
CALM = Pressure(2.0, 1.0, 2)


def test_a_fast_configuration_under_a_hog_blames_the_host_and_no_stage() -> None:
    found = recorded(seed_p99_spans(slow=HOGGED, fast=FAST, cpu=(FAST_CPU, FAST_CPU), pressure=SATURATED,
                                    window=(1.5, 1.5)))
    assert found.causes == ["the host"]
    assert found.saturated and found.headline == "the host, not the model"
    sentence = found.sentence()
    assert "The host is saturated: CPU pressure 95 %, run queue 6 on 2 cores" in sentence
    assert "batch_wait_ms" not in sentence and "profile" not in sentence
    assert found.slow["model"] == pytest.approx(2.0) and found.slow["cpu_wait"] > 90
    from mlassets.cli.diagnose_serving import report

    printed = report(seed_p99_spans(slow=HOGGED, fast=FAST, cpu=(FAST_CPU, FAST_CPU), pressure=SATURATED), "hog")
    assert "waiting for a CPU" in printed and "Verdict: the host, not the model" in printed


def test_a_queue_that_waited_for_a_cpu_beyond_its_window_is_the_hosts_not_batching() -> None:
    """As a clean-clone CI run saw under a CPU hog: the slow requests' stages computed almost all their wall time,
    but the queue behind the passes (and the batcher's thread waking) stretched to 7 ms past a 0.5 ms window.
    Batching held only its window: the rest is the host's, and no batching advice is given."""
    slow = {"receive": 12.0, "preprocessing": 0.9, "batch_queue": 7.5, "model": 0.5, "postprocessing": 0.2}
    fast = {"receive": 0.8, "preprocessing": 0.4, "batch_queue": 0.6, "model": 0.4, "postprocessing": 0.1}
    cpu = ({"preprocessing": 0.5, "model": 0.4, "postprocessing": 0.1}, {"preprocessing": 0.4, "model": 0.4,
                                                                         "postprocessing": 0.1})
    found = recorded(seed_p99_spans(slow=slow, fast=fast, cpu=cpu, pressure=Pressure(82.0, 7.0, 2),
                                    window=(0.5, 0.5)))
    assert found.causes == ["the host"], found.causes
    assert "batch_wait_ms" not in found.sentence() and found.slow["batch_queue"] == pytest.approx(0.5)
    held = recorded(seed_p99_spans(slow=slow, fast=fast, cpu=cpu, pressure=Pressure(82.0, 7.0, 2),
                                   window=(7.5, 0.5)))  # the same queue held open for others: batching's own
    assert "batching" in held.causes


def test_without_the_hosts_pressure_the_same_spans_blame_the_stages() -> None:
    """What the pressure changes: the same walls on a calm host are the stages' own."""
    found = recorded(seed_p99_spans(slow=HOGGED, fast=FAST, cpu=(FAST_CPU, FAST_CPU), pressure=CALM,
                                    window=(1.5, 1.5)))
    assert not found.saturated and found.causes[0] == "the model"
    assert "batching" in found.causes and "saturated" not in found.sentence()


@pytest.mark.parametrize(("change", "slow_cpu", "cause"), [
    ({"downstream": 300.0}, {}, "a dependency"),
    ({"batch_queue": 300.0}, {}, "batching"),
    ({"feature_retrieval": 250.0}, {}, "feature retrieval"),
    ({"model": 300.0}, {"model": 240.0}, "the model"),  # it computes more, and waits for a CPU besides
])
def test_an_injected_fault_on_a_saturated_host_is_named_first(change: dict, slow_cpu: dict, cause: str) -> None:
    slow = {**HOGGED, **change}
    found = recorded(seed_p99_spans(slow=slow, fast=FAST, cpu=({**FAST_CPU, **slow_cpu}, FAST_CPU),
                                    pressure=SATURATED, window=(slow["batch_queue"] if cause == "batching" else 1.5,
                                                                1.5)))
    assert found.causes[0] == cause and "the host" in found.causes
    others = {"a dependency", "batching", "feature retrieval", "the model"} - {cause}
    assert not others & set(found.causes), found.causes


def test_the_seeds_situation_on_a_busy_host_names_batching_and_the_dependency() -> None:
    """A batch window of 55 ms and a dependency that always sleeps 45 ms: the slow requests waited the whole window,
    the fast ones less; the dependency gains nothing but holds a large share of every request."""
    fast = {**FAST, "batch_queue": 8.0, "downstream": 46.0}
    slow = {**HOGGED, "batch_queue": 70.0, "downstream": 47.0}
    found = recorded(seed_p99_spans(slow=slow, fast=fast, cpu=(FAST_CPU, FAST_CPU), pressure=SATURATED,
                                    window=(55.0, 6.0)))
    assert {"batching", "a dependency"} <= set(found.causes) and "the model" not in found.causes
    assert found.headline.endswith(", not the model")


def test_pressure_without_psi_is_the_run_queue_on_the_cores() -> None:
    assert Pressure(None, 5.0, 2).saturated and not Pressure(None, 2.0, 2).saturated
    assert Pressure(None, 5.0, 2).sentence() == "run queue 5 on 2 cores"
    found = recorded(seed_p99_spans(slow=HOGGED, fast=FAST, cpu=(FAST_CPU, FAST_CPU), pressure=Pressure(None, 7.0, 2)))
    assert found.causes == ["the host"] and "The host is saturated: run queue 7 on 2 cores" in found.sentence()


def test_the_sampler_reads_psi_and_falls_back_to_the_run_queue(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "loadavg").write_text("3.10 2.00 1.50 5/345 9999\n")
    monkeypatch.setattr(host, "LOADAVG_FILE", tmp_path / "loadavg")
    monkeypatch.setattr(host, "PSI_FILE", tmp_path / "absent")
    assert Sampler().sample().pressure_pct is None and Sampler().sample().run_queue == 5.0
    (tmp_path / "cpu").write_text("some avg10=42.50 avg60=30.00 avg300=20.00 total=123456\n"
                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    monkeypatch.setattr(host, "PSI_FILE", tmp_path / "cpu")
    sampler = Sampler(every_s=3600)  # its baseline: total=123456 now, so the first request measures since then
    (tmp_path / "cpu").write_text(f"some avg10=1.00 avg60=1.00 avg300=1.00 total={123456 + 10**15}\n")
    first = sampler.sample()  # a waiting total far beyond the time elapsed: 100 %, not avg10's 1 %
    assert first.pressure_pct == 100.0 and first.attributes()["cpu_pressure"] == 100.0 and first.saturated
    (tmp_path / "cpu").write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=999999999\n")
    assert sampler.sample() is first  # cached between reads


def test_a_servers_spans_carry_cpu_window_and_pressure_to_the_verdict(tmp_path: Path) -> None:
    """Written by the endpoint's own ``RequestTrace``, read back by ``read_spans``: the attributes survive."""
    from mlassets.serve.batcher import Timing
    from mlassets.serve.telemetry import RequestTrace

    spans.enable(tmp_path / "serving.jsonl")
    ms = 1_000_000
    for i in range(4):
        start = i * 1000 * ms
        request = RequestTrace(start, "predict")
        request.stage("receive", start, start + 2 * ms)
        request.stage("preprocessing", start + 2 * ms, start + 10 * ms, cpu_ns=3 * ms)
        timing = Timing(start + 30 * ms, start + 40 * ms, start + 70 * ms, 4, 2, cpu_ns=8 * ms,
                        held_from_ns=start, held_to_ns=start + 15 * ms)
        request.batch(start + 10 * ms, timing)
        request.end(start + 70 * ms, status=200, variant="champion", **SATURATED.attributes())
    frame = spans.read_spans(tmp_path / "serving.jsonl")
    cpu = host.attribute(frame, spans.ENDPOINT, "cpu_ms", ("preprocessing", "model"))
    assert cpu["preprocessing"].round(6).eq(3.0 + 2.0).all()  # the handler's 3 and the pass's 10/40 of 8
    assert cpu["model"].round(6).eq(6.0).all()
    window = host.attribute(frame, spans.ENDPOINT, "window_ms", ("batch_queue",))["batch_queue"]
    assert window.round(6).eq(5.0).all()  # held 0-15 ms, queued from 10 ms
    assert host.pressure_of(host.pressures(frame, spans.ENDPOINT)) == SATURATED
    assert spans.requests(frame, spans.ENDPOINT)["receive"].round(6).eq(2.0).all()


def test_a_model_computing_longer_is_named_beside_a_host_whose_waits_dwarf_it() -> None:
    slow = {**HOGGED, "model": 950.0}  # 150 ms more CPU, and 800 ms waiting for a CPU
    found = recorded(seed_p99_spans(slow=slow, fast=FAST, cpu=({**FAST_CPU, "model": 152.0}, FAST_CPU),
                                    pressure=SATURATED, window=(1.5, 1.5)))
    assert found.causes == ["the host", "the model"]
