"""``python -m mlassets.cli.reference [--check]``: write (or check) the generated pages under docs/reference/."""

from __future__ import annotations

import argparse
import sys

from mlassets.cli.reference import GRAPH, OUT, README, readme_with, render_all, stale, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlassets.cli.reference", description=__doc__)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the stale pages")
    args = parser.parse_args(argv)
    pages = render_all()
    readme = readme_with(pages[GRAPH], README.read_text())
    if args.check:
        old = [OUT / name for name in stale(pages)] + ([README] if readme != README.read_text() else [])
        for path in old:
            print(f"{path} is stale: run python -m mlassets.cli.reference (make reference)", file=sys.stderr)
        return 1 if old else 0
    for name in write(pages):
        print(f"wrote {OUT / name}")
    if readme != README.read_text():
        README.write_text(readme)
        print(f"wrote {README} (its picture)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
