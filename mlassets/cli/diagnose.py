"""``mlassets diagnose RUN``: the bottleneck and straggler verdicts of a training run, in the terminal."""

from __future__ import annotations

import argparse

from mlassets.core import paths
from mlassets.core.diagnose.examples import EXAMPLES


def cmd_trace_serving(args: argparse.Namespace) -> int:
    """Trace the champion of ``args.trace_serving`` over ``args.rows`` in requests of ``args.batch_rows`` rows."""
    import tempfile
    from pathlib import Path

    from mlassets.core.diagnose.serving_trace import trace_requests
    from mlassets.serve import load_champion

    if not args.rows:
        raise ValueError("--trace-serving needs --rows FILE (a Parquet file of raw feature rows)")
    model = load_champion(args.trace_serving)
    trace_file = paths.home() / "traces" / "serving.jsonl"
    with tempfile.TemporaryDirectory(prefix="serving-trace-") as out:
        count = trace_requests(model.predict, Path(args.rows), Path(out), trace_file, args.batch_rows)
    print(f"traced {count} requests of {args.batch_rows} rows with {model.name} v{model.version} into {trace_file}; "
          "see the dashboard's Serving latency page")
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    from mlassets.core.diagnose.report import diagnose_dir, diagnose_frame, format_diagnosis
    from mlassets.core.diagnose.runs import list_runs, resolve_run

    if args.trace_serving:
        return cmd_trace_serving(args)
    if args.serving or args.serving_example:
        from mlassets.cli.diagnose_serving import cmd_diagnose_serving
        return cmd_diagnose_serving(args)
    if args.example:
        diagnosis = diagnose_frame(EXAMPLES[args.example]())
        title = f"worked example: {args.example}"
    elif args.run:
        run = resolve_run(args.run, paths.home())
        diagnosis = diagnose_dir(run.telemetry_dir)
        title = f"run {run.label} ({run.telemetry_dir})"
    else:
        runs = list_runs(paths.home())
        if not runs:
            print("nothing recorded yet: no training run with telemetry under", paths.home() / "work")
            return 1
        for run in runs:
            print(f"{run.run_key}  {run.dataset}  data {run.data_version}  {run.path}")
        return 0
    if diagnosis is None:
        raise ValueError(f"{args.run}: the telemetry has no rows yet")
    print(format_diagnosis(diagnosis, title))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("diagnose", help="why a training run is slow: bottleneck and straggler verdicts")
    parser.add_argument("run", nargs="?", help="run id (8+ chars), data version (its key or commit), or a "
                                               "run/telemetry folder; none: list the recorded runs")
    parser.add_argument("--example", choices=sorted(EXAMPLES), help="diagnose a worked example")
    parser.add_argument("--trace-serving", metavar="MODEL", help="trace batch inference of MODEL's champion by "
                                                                 "stage (spans for the Serving latency page)")
    parser.add_argument("--rows", help="with --trace-serving: a Parquet file of raw feature rows")
    parser.add_argument("--batch-rows", type=int, default=256, help="with --trace-serving: rows per request")
    parser.add_argument("--serving", action="store_true", help="why the endpoint's p99 is slow, from the traces of "
                                                               "`mlassets serve` (--trace-file: another file)")
    parser.add_argument("--serving-example", action="store_true", help="the worked example of a slow p99")
    parser.add_argument("--trace-file", help="with --serving: a spans file (default: the home's)")
    parser.set_defaults(func=cmd_diagnose)
