"""Matching-quality harness: generated people and queries, our matcher beside a baseline."""
