"""Checkpoints: their format, when they are written, and sharded (FSDP) storage."""
