"""How a training process ended, told to the step that launched it: one ``Outcome``, written once by the process
(``record_outcome``) and read once by its launcher (``read_outcome``).

A process ends in one of four ways, each kept as its own file in the run's working area, because readers that do not
import training read them by name (the fleet's scheduler reads ``preempted.json``; ``mlassets diagnose`` lists a run
with ``result.json`` as finished):

==========  ==================  =============================================================================
trained     ``result.json``     rank 0's ``TrainingResult``, written atomically
failed      ``failure.json``    the first failing rank's sentence and whether a retry may help (a ``ValueError``,
                                bad input, fails the same way again); a rank failing because another did adds none
preempted   ``preempted.json``  SIGTERM under the fleet: the step whose full-state checkpoint is written
                                (the process exits ``PREEMPTED_EXIT``); the requeued attempt resumes from it
refused     ``refused.json``    over ``training.budget_hours``: stopped on purpose, never retried
==========  ==================  =============================================================================

Where two stand, ``read_outcome`` takes them in this order: refused, failed, trained, preempted (a refused run also
records the failure it raised on its way out; a run that trains removes the failure or refusal that an earlier,
crashed attempt in the same working area left). ``clear_outcome`` removes what an earlier attempt left, before a new
one starts there (``launch.prepare_job``), all but ``preempted.json``: the requeued attempt resumes from the step it
names, and it is read last, so an attempt that ends after it tells its own end (the fleet's scheduler removes it when
it starts the job again).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mlassets.core.train.result import TrainingResult

CRASH_EXIT = 75  # exit status of an injected crash (``training.faults.crash_at_step``)
PREEMPTED_EXIT = 76  # exit status of a preempted process: not a failure, the fleet requeues it
RESULT = "result.json"
FAILURE = "failure.json"
PREEMPTED = "preempted.json"
REFUSED = "refused.json"
Ended = Literal["trained", "failed", "preempted", "refused"]


@dataclass(frozen=True)
class Outcome:
    """How one training process ended: ``sentence`` says it for every end but ``trained``, which has ``result``."""

    ended: Ended
    sentence: str = ""
    retry: bool = False  # failed: whether another attempt may help
    step: int | None = None  # preempted: the step whose checkpoint is written
    result: TrainingResult | None = None  # trained

    @classmethod
    def failed(cls, exc: BaseException) -> Outcome:
        """The exception's first line, with its kind: one sentence, never its traceback."""
        text = next((line.strip() for line in str(exc).splitlines() if line.strip()), "") or repr(exc)
        return cls("failed", f"training failed: {type(exc).__name__}: {text[:1000]}",
                   retry=not isinstance(exc, ValueError))

    @classmethod
    def preempted(cls, step: int) -> Outcome:
        return cls("preempted", f"preempted at step {step}: checkpoint written, requeue to resume", step=step)


def record_outcome(out_dir: str | Path, outcome: Outcome) -> None:
    """Write ``outcome`` into ``out_dir``; a failure only when none is written yet (the first rank's cause stands)."""
    out = Path(out_dir)
    if outcome.ended == "failed":
        try:
            out.mkdir(parents=True, exist_ok=True)
            fd = os.open(out / FAILURE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError:
            return  # written by another rank first, or no working area: the log still has it
        with os.fdopen(fd, "w") as fh:
            json.dump({"failure": outcome.sentence, "retry": outcome.retry}, fh)
        return
    if outcome.ended == "trained":
        if outcome.result is None:
            raise ValueError("a trained outcome needs its result")
        name, text = RESULT, outcome.result.to_json()
    elif outcome.ended == "preempted":
        name, text = PREEMPTED, json.dumps({"preempted_at_step": outcome.step})
    else:
        name, text = REFUSED, json.dumps({"refused": outcome.sentence})
    tmp = out / f"{name}.tmp"
    tmp.write_text(text + "\n")
    os.replace(tmp, out / name)
    if outcome.ended == "trained":  # what an earlier attempt here left (a crash, a refusal) no longer tells the end
        for stale in (FAILURE, REFUSED):
            (out / stale).unlink(missing_ok=True)


def read_outcome(out_dir: str | Path) -> Outcome | None:
    """How the process that worked in ``out_dir`` ended; None while it runs, or when it was killed without a word."""
    out = Path(out_dir)
    if (out / REFUSED).is_file():
        return Outcome("refused", str(json.loads((out / REFUSED).read_text())["refused"]))
    if (out / FAILURE).is_file():
        data = json.loads((out / FAILURE).read_text())
        return Outcome("failed", str(data["failure"]), retry=bool(data.get("retry", True)))
    if (out / RESULT).is_file():
        return Outcome("trained", result=TrainingResult.from_json((out / RESULT).read_text()))
    if (out / PREEMPTED).is_file():
        return Outcome.preempted(int(json.loads((out / PREEMPTED).read_text())["preempted_at_step"]))
    return None


def clear_outcome(out_dir: str | Path) -> None:
    """Remove the outcome an earlier attempt left in ``out_dir`` (a new attempt is about to start there), all but the
    step it was preempted at (the new attempt resumes from it)."""
    for name in (RESULT, FAILURE, REFUSED):
        (Path(out_dir) / name).unlink(missing_ok=True)
