"""Benchmarks of the generated trainer and of ptscaffold itself: `python benchmarks/run.py`."""
