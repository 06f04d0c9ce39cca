"""Sweeps: many runs of one config, varied by a sweep file (`python -m <package>.sweep`)."""
