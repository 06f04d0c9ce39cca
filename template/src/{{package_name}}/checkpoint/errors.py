"""The error of every checkpoint reader and writer, below all of them (format, shards, exports)."""


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used, worded as one line naming the file."""
