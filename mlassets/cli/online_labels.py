"""``mlassets online labels MODEL FILE``: labels that arrived for the running online test's rows.

The file (CSV or Parquet) holds the ``serving.online.label_key`` columns and the dataset's target. Its labels are
joined to the rows the endpoint recorded for the test (``core.evaluate.online_labels``); the labelled count and
the gate's main metric of each variant are written beside them, where the endpoint's rule reads them at its next
poll. A file that cannot be used is refused, naming the file and the column, and nothing is written.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path


def labels_text(model: str, file: Path, config: str | None, who: str = "") -> str:
    """Join ``file`` to the running test of ``model`` (recording ``who`` handed it in) and say what the rule now
    sees; ``LabelsError`` or ``PromotionError`` when nothing was written."""
    from mlassets.core.evaluate.online_labels import LabelsError, LabelSpec, add_labels, online_dir
    from mlassets.core.evaluate.online_metric import metric_rule
    from mlassets.core.metric_defs import get_metric
    from mlassets.core.registry import online_log
    from mlassets.core.registry.promotion import PromotionError
    from mlassets.serve.build import find_config

    test = online_log.running(model)
    if test is None:
        raise PromotionError(f"model {model!r} has no online test running; labels join the running test's rows")
    cfg = find_config(model, config)
    if cfg is None:
        raise LabelsError(f"no dataset config names model {model!r} (model.registered_name); give it with --config")
    rule = cfg.serving.online
    if not rule.label_key:
        raise LabelsError(f"serving.online.label_key is not set in the config of {model!r}: the endpoint records "
                          "no rows for labels to join (labels are off)")
    if rule.max_metric_regression is None:
        rule = dataclasses.replace(rule, max_metric_regression=cfg.gate.tolerance)
    spec = LabelSpec(rule.label_key, frozenset(cfg.features.numeric), cfg.dataset.target, cfg.dataset.task,
                     cfg.gate.main_metric)
    found = add_labels(online_dir(model, test.seq), file, spec, test.mode, who)
    metric = get_metric(spec.metric)
    skipped = f", {found['without_target']} rows without a target skipped" if found["without_target"] else ""
    lines = [f"{model}: {found['new']} labels from {file.name}, {found['matched']} on rows the endpoint recorded for "
             f"v{test.candidate} ({test.mode} against v{test.champion}, seq {test.seq}){skipped}; "
             f"{found['labels']} labels kept for the test",
             "", f"{'variant':<12}{'labelled':>9}{metric.label:>12}"]
    for name, figures in found["variants"].items():
        value = "-" if figures["value"] is None else metric.fmt(figures["value"])
        lines.append(f"{test.mode if name == 'candidate' else name:<12}{figures['labelled']:>9}{value:>12}")
    verdict, sentence, _ = metric_rule(found, rule)
    said = {"short": "the metric is not part of the rule yet"
                     + ("; the rule waits for it (require_labels)" if rule.require_labels else ""),
            "pass": "within the limit", "fail": "over the limit: the endpoint's rule rolls the candidate back"}
    lines += ["", f"rule: {sentence}: {said[verdict]}"]
    return "\n".join(lines)


def cmd_labels(args: argparse.Namespace) -> int:
    from mlassets.core.evaluate.online_labels import LabelsError
    from mlassets.core.registry.promotion import PromotionError

    try:
        print(labels_text(args.model, Path(args.file), args.config, args.who))
        return 0
    except (LabelsError, PromotionError) as exc:
        print(f"mlassets online labels: refused: {exc}", file=sys.stderr)
        return 2


def add_parser(actions: argparse._SubParsersAction) -> None:
    labels = actions.add_parser("labels", help="join labels that arrived (CSV or Parquet) to the running test's rows")
    labels.add_argument("model")
    labels.add_argument("file", help="the serving.online.label_key columns and the dataset's target")
    labels.add_argument("--config", help="the dataset config (a shipped name or a YAML file); default: the one "
                                         "whose model.registered_name is MODEL")
