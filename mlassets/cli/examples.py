"""``mlassets example NAME DIR``: an example to copy, written to a folder the caller names (nothing shared changes)."""

from __future__ import annotations

import argparse
import time

from mlassets.core.config import load_config


def cmd_example(args: argparse.Namespace) -> int:
    if args.name == "flights-scale":
        from mlassets.examples.flights_scale import write_example as write_scale

        start = time.perf_counter()
        config = write_scale(args.directory, args.rows, args.partitions)
        print(f"wrote {args.rows} rows in {args.partitions} monthly Parquet files under {config.parent / 'data'} and "
              f"their config {config} ({time.perf_counter() - start:.0f} s)")
        print(f"next: mlassets ingest --config {config} --partition {load_config(config).dataset.partitions.keys[0]}")
        return 0
    if args.name == "torch-plugin":
        from mlassets.examples.torch_plugin import write_example as write_plugin

        config = write_plugin(args.directory)
        print(f"wrote a torch module builder {config.parent / 'model.py'} and its config {config}")
        print(f"next: mlassets ingest --config {config} --partition 2013-01; then mlassets run --config {config}")
        return 0
    from mlassets.examples.sales import write_example

    config = write_example(args.directory, args.months)
    print(f"wrote {args.months} monthly CSV files under {config.parent / 'data'} and their config {config}")
    print(f"next: mlassets ingest --config {config} --partition {load_config(config).dataset.partitions.keys[0]}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    example = sub.add_parser("example", help="write an example to copy: sales (your own CSV data), torch-plugin "
                                            "(your own torch module) or flights-scale (flights-shaped data, any size)")
    example.add_argument("name", choices=["sales", "torch-plugin", "flights-scale"])
    example.add_argument("directory", help="where to write it")
    example.add_argument("--months", type=int, default=4, help="sales: how many monthly files")
    example.add_argument("--rows", type=int, default=1_000_000, help="flights-scale: rows in all (default 1000000)")
    example.add_argument("--partitions", type=int, default=12,
                         help="flights-scale: monthly partitions from 2013-01 (default 12)")
    example.set_defaults(func=cmd_example)
