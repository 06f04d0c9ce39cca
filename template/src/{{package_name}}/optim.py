"""The optimizer and its learning-rate schedule."""

from __future__ import annotations

import logging
import math

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

from .config import OptimConfig

log = logging.getLogger(__name__)


def build_optimizer(model: nn.Module, cfg: OptimConfig) -> torch.optim.AdamW:
    """AdamW that decays weight matrices and kernels but not biases and norm scales."""
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(
        [
            {"params": [p for p in params if p.ndim >= 2], "weight_decay": cfg.weight_decay},
            {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
        ],
        lr=cfg.lr,
        betas=(cfg.beta1, cfg.beta2),
    )


def warmup_steps(cfg: OptimConfig, total_steps: int) -> int:
    """Optimizer steps of linear warmup: `optim.warmup_steps` when set (>= 0), else
    `optim.warmup_fraction` of the run's `total_steps`, so a short run and a long one both warm
    up over the same share of their length."""
    if cfg.warmup_steps >= 0:
        return cfg.warmup_steps
    return round(cfg.warmup_fraction * total_steps)


def build_scheduler(optimizer: torch.optim.Optimizer, cfg: OptimConfig, total_steps: int) -> LambdaLR:
    """Linear warmup to the peak learning rate, then cosine decay to `min_lr_ratio` of it at
    `total_steps`. The factor is a pure function of the step and `total_steps`, so a resumed run
    continues on the same curve."""
    warmup = warmup_steps(cfg, total_steps)
    if warmup >= total_steps:
        # Said once, at start-up: every step of such a run is a warmup step
        log.warning(
            "optim.warmup_steps=%d is not below the run's %d optimizer steps: the learning rate "
            "never reaches optim.lr and never decays; lower optim.warmup_steps or set it to -1 "
            "(optim.warmup_fraction of the run)",
            warmup,
            total_steps,
        )

    def lr_factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total_steps - 1 - warmup))
        return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return LambdaLR(optimizer, lr_factor)
