"""The optimizer and its learning-rate schedule."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

from .config import OptimConfig
from .runtime.device import adamw_implementation

log = logging.getLogger(__name__)


def build_optimizer(
    model: nn.Module, cfg: OptimConfig, lr_scale: Callable[[str], float] | None = None
) -> torch.optim.AdamW:
    """AdamW that decays weight matrices and kernels but not biases and norm scales; with
    `lr_scale` (a parameter's name -> its factor of optim.lr), each parameter at its own learning
    rate (the groups of the largest factor come first: the first group's rate is the one logged)."""
    groups: dict[tuple[float, bool], list[nn.Parameter]] = {}
    for name, param in model.named_parameters():
        if param.requires_grad:
            scale = lr_scale(name) if lr_scale else 1.0
            groups.setdefault((scale, param.ndim < 2), []).append(param)
    order = sorted(groups, key=lambda group: (-group[0], group[1]))
    return adamw(
        [
            {
                "params": groups[scale, no_decay],
                "lr": cfg.lr * scale,
                "weight_decay": 0.0 if no_decay else cfg.weight_decay,
            }
            for scale, no_decay in order
        ],
        cfg,
        next(model.parameters()).device,
    )


def adamw(groups: list[dict[str, Any]], cfg: OptimConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW over `groups` with the kernel chosen for `device` (fused on CUDA and the CPU,
    see `adamw_implementation`), which stays when a checkpoint loads into it."""
    implementation = adamw_implementation(device)
    kernel = {"fused": implementation == "fused", "foreach": implementation == "foreach"}
    optimizer = torch.optim.AdamW(
        groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), weight_decay=cfg.weight_decay, **kernel
    )

    def keep_kernel(loaded: torch.optim.Optimizer) -> None:
        # Saved param groups bring the kernel of the machine that saved them (fused from a GPU or
        # a CPU, where this one may be an Apple GPU): this machine's holds
        for group in loaded.param_groups:
            group.update(kernel)

    optimizer.register_load_state_dict_post_hook(keep_kernel)
    return optimizer


def build_scheduler(optimizer: torch.optim.Optimizer, cfg: OptimConfig, total_steps: int) -> LambdaLR:
    """Linear warmup over `optim.warmup_steps` (when -1, `optim.warmup_fraction` of the run), then
    cosine decay to `min_lr_ratio` of the peak at `total_steps`: a pure function of the step, so a
    resumed run continues on the same curve."""
    warmup = cfg.warmup_steps if cfg.warmup_steps >= 0 else round(cfg.warmup_fraction * total_steps)
    if warmup >= total_steps:
        log.warning(
            "optim.warmup_steps=%d is not below the run's %d optimizer steps: the learning rate never "
            "reaches optim.lr nor decays; lower it or set it to -1 (optim.warmup_fraction of the run)",
            warmup,
            total_steps,
        )

    def lr_factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total_steps - 1 - warmup))
        return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return LambdaLR(optimizer, lr_factor)
