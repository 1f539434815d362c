"""Benchmarks and synthetic snapshots (issue 3): on top of everything else."""
