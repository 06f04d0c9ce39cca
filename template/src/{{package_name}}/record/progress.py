"""Progress on the console: a tqdm bar per epoch on a terminal, plain log lines everywhere else."""

from __future__ import annotations

import logging
import sys

from tqdm import tqdm

log = logging.getLogger(__name__)


class Progress:
    """Shows training progress from the main process only; other ranks get a silent instance."""

    def __init__(self, log_interval: int, enabled: bool = True) -> None:
        self.enabled = enabled
        self.interactive = enabled and sys.stdout.isatty()
        self.log_interval = log_interval
        self.bar: tqdm | None = None
        self.epoch = 0

    def start_epoch(self, epoch: int, total: int, done: int = 0) -> None:
        self.epoch = epoch
        if self.interactive:
            self.bar = tqdm(total=total, initial=done, desc=f"epoch {epoch}", unit="step", leave=True)

    def update(self, step: int, stats: dict[str, str]) -> None:
        """Called once per optimizer step; `stats` are preformatted (loss, lr, throughput)."""
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(stats, refresh=False)
        elif self.enabled and step % self.log_interval == 0:
            line = " ".join(f"{name} {value}" for name, value in stats.items())
            log.info("epoch %d step %d | %s", self.epoch, step, line)

    def end_epoch(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
