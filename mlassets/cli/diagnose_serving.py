"""``mlassets diagnose --serving``: the endpoint's p50/p99 per span, slow against fast requests, and the verdict."""

from __future__ import annotations

import argparse
from pathlib import Path

from mlassets.core import paths
from mlassets.core.diagnose import spans
from mlassets.core.diagnose.serving_example import SENTENCE, seed_p99_spans
from mlassets.core.diagnose.serving_verdict import LABELS, verdict
from mlassets.serve.build import TRACE_FILE


def report(frame, title: str) -> str:  # noqa: ANN001 - the spans DataFrame
    """The lines ``diagnose --serving`` prints for ``frame`` (``spans.read_spans`` rows)."""
    reqs = spans.requests(frame, spans.ENDPOINT)
    found = verdict(reqs)
    if found is None:
        return f"{title}: {len(reqs)} endpoint request(s) traced; at least 2 are needed to compare"
    lines = [f"{title}: {len(reqs)} endpoint requests", "", f"{'span':<18}{'p50 ms':>9}{'p99 ms':>9}"
             f"{'slow ms':>10}{'fast ms':>10}"]
    fast = found.slow - found.extra
    for stage in found.table.index:
        if stage == "total":
            continue
        p50, p99 = found.table.loc[stage, "p50_ms"], found.table.loc[stage, "p99_ms"]
        lines.append(f"{LABELS[stage]:<18}{p50:>9.1f}{p99:>9.1f}{found.slow[stage]:>10.1f}{fast[stage]:>10.1f}")
    lines.append(f"{'request':<18}{found.p50_ms:>9.1f}{found.p99_ms:>9.1f}")
    if len(answered := spans.variants(frame, spans.ENDPOINT)) > 1:  # an online test: each variant's own figures
        lines.append("")
        for name in answered:
            mine = spans.requests(frame, spans.ENDPOINT, name)["total"]
            lines.append(f"answered by {name:<10}{mine.quantile(0.5):>7.1f}{mine.quantile(0.99):>9.1f}"
                         f"   ({len(mine)} requests)")
    if few := spans.too_few_for_p99(len(reqs)):
        lines += ["", few]
    lines += ["", f"Verdict: {found.headline}", found.sentence()]
    return "\n".join(lines)


def cmd_diagnose_serving(args: argparse.Namespace) -> int:
    if args.serving_example:
        print(f"the source: {SENTENCE}\n")
        print(report(seed_p99_spans(), "worked example: p99"))
        return 0
    path = Path(args.trace_file) if args.trace_file else paths.home() / TRACE_FILE
    frame = spans.read_spans(path)
    if spans.requests(frame, spans.ENDPOINT).empty:
        print(f"nothing recorded yet: no endpoint requests in {path}; start `mlassets serve MODEL` and send some")
        return 1
    print(report(frame, str(path)))
    return 0
