"""The streamed evaluation of a multiclass holdout in chunks against the same predictions as one chunk: the same record
(overall metrics, class rows, slice rows and intervals, sanity counts, derived baseline) to float rounding, whatever
the chunks; the same gate verdicts; a class only one model knows; missing targets refused; real bundles and the
predictions file; memory that does not grow with the rows."""

from __future__ import annotations

import dataclasses
import math
import tracemalloc
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate import stream
from mlassets.core.evaluate.bootstrap import GROUPS
from mlassets.core.evaluate.derived import derive
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.evaluate.score import score_holdout
from mlassets.core.evaluate.scored import evaluation_of
from tests.core.evaluate.test_multiclass import CLASSES, mc_config, probabilities
from tests.core.evaluate.test_score_multiclass import bundle

CANDIDATE = [*CLASSES, "Macaroni"]  # Macaroni: known to the candidate alone, never true
CHAMPION = ["Adelie", "Emperor", "Gentoo"]  # Emperor: true on a few late rows, unknown to the candidate
UNEVEN = (1, 997, 2500, 13, 1400, 333)  # chunk sizes, repeated to the end


class Columns:
    """A model whose class probabilities are columns of the holdout (``<name>_<class>``): both paths score the same."""

    def __init__(self, name: str, classes: list[str]) -> None:
        self.name, self.classes = name, classes
        self.preprocessor = SimpleNamespace(categorical=["island"], numeric=[])

    def predict(self, frame: pd.DataFrame, factorized: Any = None) -> np.ndarray:
        return frame[[f"{self.name}_{c}" for c in self.classes]].to_numpy(dtype=np.float64)


def holdout(n: int = 7000, seed: int = 0, champion: list[str] = CHAMPION) -> pd.DataFrame:
    """Three islands (Torgersen small enough for the row bootstrap), a sex column with missing values, species with
    Emperor only in the last tenth; probabilities of both models (the champion's of the classes ``champion``)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"island": rng.choice(["Biscoe", "Dream", "Torgersen"], n, p=[0.46, 0.46, 0.08]),
                          "sex": rng.choice(["female", "male", None], n, p=[0.48, 0.48, 0.04])})
    y = rng.choice(CLASSES, n, p=[0.45, 0.2, 0.35]).astype(object)
    y[-n // 10:][rng.random(n // 10) < 0.1] = "Emperor"
    cand = probabilities(y, CANDIDATE, 2.0, seed + 1)
    champ = probabilities(y, champion, 2.0, seed + 2)
    return pd.concat([frame.assign(species=y), cand.add_prefix("candidate_"), champ.add_prefix("champion_")], axis=1)


def chunks(frame: pd.DataFrame, sizes: tuple[int, ...]) -> Iterator[pa.Table]:
    table, start, i = pa.Table.from_pandas(frame, preserve_index=False), 0, 0
    while start < table.num_rows:
        yield table.slice(start, sizes[i % len(sizes)])
        start, i = start + sizes[i % len(sizes)], i + 1


TRAIN_Y = np.array(["Adelie"] * 50 + ["Gentoo"] * 35 + ["Chinstrap"] * 15, dtype=object)


def in_memory(frame: pd.DataFrame, cfg: PipelineConfig, candidate, champion) -> Evaluation:
    """The holdout scored in one frame, evaluated as one chunk, its baseline derived from its target at once."""
    predictions = score_holdout(frame, cfg, candidate, champion)
    derived = derive(cfg, TRAIN_Y, predictions["y"].to_numpy(), has_champion=champion is not None)
    return evaluation_of(predictions, cfg, derived=derived)


def streamed(frame: pd.DataFrame, cfg: PipelineConfig, candidate, champion, sizes=UNEVEN, path=None) -> Evaluation:
    return stream.evaluate_streamed(chunks(frame, sizes), cfg, candidate, champion, TRAIN_Y, predictions_path=path)


def same(got: Any, want: Any, rel: float, where: str = "record") -> None:
    """Equal field by field, in the same order; floats to ``rel`` (sums add up in another order; NaN equals NaN)."""
    if isinstance(want, dict):
        assert list(got) == list(want), where
        for key in want:
            same(got[key], want[key], rel, f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (mine, theirs) in enumerate(zip(got, want, strict=True)):
            same(mine, theirs, rel, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=rel, abs=1e-12, nan_ok=True), where
    else:
        assert got == want, where


def assert_same_multiclass(got: Evaluation, want: Evaluation, rel: float = 1e-9) -> None:
    """Every field: overall metrics, slice rows and intervals, class rows, calibration, sanity counts, baseline."""
    same(dataclasses.asdict(got), dataclasses.asdict(want), rel)


def verdicts(cfg: PipelineConfig, ev: Evaluation) -> list[tuple[str, bool]]:
    from mlassets.core.evaluate.gate import evaluate_gate

    return [(r.name, r.passed) for r in evaluate_gate(cfg.gate, ev).rules]


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return holdout()


@pytest.mark.parametrize("main", ["logloss", "accuracy"])
def test_with_a_champion_the_streamed_record_equals_the_in_memory_one(frame, main) -> None:
    cfg = mc_config(("island", "sex"), main_metric=main, absolute_min_metric=0.5 if main == "accuracy" else None)
    candidate, champion = Columns("candidate", CANDIDATE), Columns("champion", CHAMPION)
    want = in_memory(frame, cfg, candidate, champion)
    got = streamed(frame, cfg, candidate, champion)
    assert_same_multiclass(got, want)
    assert [c.value for c in got.classes] == ["Adelie", "Chinstrap", "Emperor", "Gentoo", "Macaroni"]
    emperor, macaroni = got.classes[2], got.classes[4]
    assert emperor.n > 0 and (emperor.candidate_knows, emperor.champion_knows) == (False, True)
    assert macaroni.n == 0 and (macaroni.candidate_knows, macaroni.champion_knows) == (True, False)
    assert got.candidate["unseen_class_rows"] == emperor.n > 0
    assert got.champion["unseen_class_rows"] == got.classes[1].n  # Chinstrap
    sizes = {(r.slice, r.value): r.n for r in got.slices}
    assert sizes[("island", "Torgersen")] <= GROUPS < sizes[("island", "Biscoe")]  # both kinds of interval
    assert all(math.isfinite(r.ci_low) and r.ci_low < r.ci_high for r in got.slices if r.slice != "species")
    assert "macro_f1" in got.slices[0].candidate and "macro_f1" not in got.slices[-1].candidate
    assert verdicts(cfg, got) == verdicts(cfg, want)


@pytest.mark.parametrize("sizes", [(7000,), (1, 2, 3, 5000, 1994), (250,)])
def test_a_first_model_gets_the_same_record_and_baseline_whatever_the_chunks(frame, sizes) -> None:
    cfg = mc_config(("island", "sex"), absolute_max_metric=None)
    candidate = Columns("candidate", CANDIDATE)
    want = in_memory(frame, cfg, candidate, None)
    got = streamed(frame, cfg, candidate, None, sizes)
    assert got.champion is None and got.baseline is not None and len(got.derived) == 1
    assert_same_multiclass(got, want)
    assert [c.champion_knows for c in got.classes] == [None] * 5
    assert "baseline_main_metric" in [name for name, _ in verdicts(cfg, got)]
    assert verdicts(cfg, got) == verdicts(cfg, want)


def test_a_slice_that_regresses_fails_the_gate_either_way() -> None:
    """The candidate is the champion but much blunter on Dream's rows."""
    knows_all = [*CLASSES, "Emperor"]
    frame, cfg = holdout(seed=5, champion=knows_all), mc_config(("island", "sex"))
    dream = (frame["island"] == "Dream").to_numpy()
    blunt = probabilities(frame["species"].to_numpy(), knows_all, 0.5, 9).to_numpy()
    frame[[f"candidate_{c}" for c in knows_all]] = np.where(dream[:, None], blunt,
                                                            frame[[f"champion_{c}" for c in knows_all]].to_numpy())
    candidate, champion = Columns("candidate", knows_all), Columns("champion", knows_all)
    want = in_memory(frame, cfg, candidate, champion)
    got = streamed(frame, cfg, candidate, champion, (1200, 77, 3001))
    assert_same_multiclass(got, want)
    assert verdicts(cfg, got) == verdicts(cfg, want), verdicts(cfg, got)
    assert ("slice island=Dream", False) in verdicts(cfg, got) and ("slice island=Biscoe", True) in verdicts(cfg, got)
    dream = next(r for r in got.slices if (r.slice, r.value) == ("island", "Dream"))
    assert dream.ci_low > 0


def test_a_model_predicts_only_its_own_classes_even_off_the_simplex() -> None:
    """Rows whose probabilities are all 0, negative or NaN: the class a model is said to predict is one it knows (the
    label it serves), on either path, and the sanity counts agree."""
    frame = holdout(600, seed=2)
    cols = [f"candidate_{c}" for c in CANDIDATE]
    frame.loc[:9, cols] = 0.0
    frame.loc[10:19, cols] = -0.25
    frame.loc[20:21, cols] = np.nan
    cfg = mc_config()
    candidate, champion = Columns("candidate", CANDIDATE), Columns("champion", CHAMPION)
    want = in_memory(frame, cfg, candidate, champion)
    got = streamed(frame, cfg, candidate, champion, (7, 300, 11))
    assert_same_multiclass(got, want)
    assert want.predictions.sum_not_one == 20 and want.predictions.non_finite == 2
    served = score_holdout(frame, cfg, candidate, champion)["candidate"].value_counts()
    for row in want.classes:  # Emperor (unknown, sorted before Gentoo) is never predicted for the -0.25 rows
        assert row.candidate["predicted"] == served.get(row.value, 0)


def test_missing_target_rows_are_refused_as_in_memory(frame) -> None:
    broken = frame.copy()
    broken.loc[[3, 4000, 6999], "species"] = None
    cfg = mc_config()
    candidate, champion = Columns("candidate", CANDIDATE), Columns("champion", CHAMPION)
    with pytest.raises(ValueError, match="3 holdout rows have no value of the target 'species'") as memory:
        in_memory(broken, cfg, candidate, champion)
    with pytest.raises(ValueError) as chunked:
        streamed(broken, cfg, candidate, champion)
    assert str(chunked.value) == str(memory.value)


def test_real_bundles_and_the_predictions_file(tmp_path) -> None:
    frame = holdout(900, seed=7)[["island", "sex", "species"]].assign(bill_length_mm=np.linspace(35, 55, 900))
    cfg = mc_config()
    candidate, champion = bundle(frame, CLASSES, 1), bundle(frame, ["Adelie", "Emperor", "Gentoo"], 2)
    want = in_memory(frame, cfg, candidate, champion)
    got = streamed(frame, cfg, candidate, champion, (400, 9, 491), tmp_path / "predictions.parquet")
    assert_same_multiclass(got, want, rel=1e-6)  # a network's float32 output may differ with its batch
    stored, scored = pd.read_parquet(tmp_path / "predictions.parquet"), score_holdout(frame, cfg, candidate, champion)
    assert list(stored.columns) == list(scored.columns)
    assert stored["candidate"].tolist() == scored["candidate"].tolist()
    numbers = [c for c in scored.columns if "_probability_" in c]
    np.testing.assert_allclose(stored[numbers].to_numpy(), scored[numbers].to_numpy(), rtol=1e-6)
    assert_same_multiclass(evaluation_of(stored, cfg), evaluation_of(scored, cfg), rel=1e-6)  # the file gives it back


def _peak_bytes(rows: int, chunk: int = 4000) -> int:
    """tracemalloc's peak while streaming ``rows`` rows of ``holdout``'s shape with a champion (the bootstrap's
    weight matrix, made once at the end, is left out)."""
    cfg = mc_config(("island", "sex"))
    candidate, champion = Columns("candidate", CANDIDATE), Columns("champion", CHAMPION)
    parts = (holdout(chunk, seed=i) for i in range(rows // chunk))
    tracemalloc.start()
    try:
        stream.stream_holdout((pa.Table.from_pandas(p, preserve_index=False) for p in parts), cfg, candidate,
                              champion, TRAIN_Y)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_rows() -> None:
    small, large = _peak_bytes(16_000), _peak_bytes(64_000)
    assert large < 1.25 * small, (small, large)  # four times the rows; an in-memory holdout would be ~4x
