"""Speed benchmarks of mlassets: ``python -m bench [names...] [--list]``.

Speed targets live here, never in timed tests. Each benchmark measures both sides of its ratio in the
same process run (no constants) and reports a row; see ``bench.registry`` to add one.
"""
