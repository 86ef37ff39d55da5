"""Helpers shared by the tests and the benchmarks: record factories, a webhook receiver,
a served ridercrm process, per-run PostgreSQL databases.

``tests/`` and ``bench/`` both import from here and never from each other.
"""
