"""What a candidate is made from (issue 33, one run per data version): the plug-in's source hash the pipeline takes
before training, without running the plug-in, is the one training records; a changed plug-in is other code."""

from __future__ import annotations

import shutil
from pathlib import Path

from mlassets.core.registry.made import plugin_digest
from mlassets.core.train import plugin

FIXTURE = Path(__file__).parents[2] / "fixtures" / "penguin_net.py"


def test_the_plugin_digest_taken_before_training_is_the_one_training_records(tmp_path: Path) -> None:
    module = "tests.fixtures.penguin_net:build"
    assert plugin_digest(module) == plugin.source_sha256(module)
    copy = tmp_path / "net.py"
    shutil.copy(FIXTURE, copy)
    spec = f"{copy}:build"
    before = plugin_digest(spec)
    assert before == plugin.source_sha256(spec)
    copy.write_text(copy.read_text() + "\n# tuned\n")
    assert plugin_digest(spec) not in ("", before)  # edited: a new candidate, not "trained already"
    assert plugin_digest(f"{tmp_path / 'gone.py'}:build") == ""
