"""Machinery of a run: devices, processes, precision, signals, seeds, atomic files."""
