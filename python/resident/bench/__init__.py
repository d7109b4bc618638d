"""Benchmarks driven from Python (python -m resident.bench.<name>)."""
