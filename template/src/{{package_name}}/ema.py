"""An exponential moving average (EMA) of the weights, kept beside the trained ones.

After every optimizer step that updates the weights, each floating-point tensor of the model
(parameters and buffers such as BatchNorm statistics) moves its average a little towards it:

    average = decay_t * average + (1 - decay_t) * weight,  decay_t = min(decay, (1 + t) / (10 + t))

where t counts the updates so far: early averages follow the weights closely instead of
remembering the random initialisation for thousands of steps. `decay=0` turns it all off.

The averages live in the model's own layout (sharded like its parameters under FSDP), so
averaging costs one fused lerp over the local tensors and no communication. A checkpoint holds
them under the plain model's names as `ema["model"]`, stored as the model is: whole in a
checkpoint file, or each rank's shards in a sharded checkpoint's folder (never gathered), read
back whole or resharded like the model's. `inference_weights` picks them over the trained
weights when present (`evaluate` scores a checkpoint with them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn


def inference_weights(state: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The weights to predict with from a checkpoint: the EMA when it was kept, else the model's."""
    return state.get("ema", {}).get("model") or state["model"]


class Ema:
    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, decay: float) -> None:
        self.decay = decay
        self.updates = 0  # optimizer steps averaged so far (training state)
        # DDP wraps the model; the names to save are those of the module inside
        self.module: nn.Module = getattr(model, "module", model)
        self.model = model
        # By identity, so a tensor shared by two names (tied weights) is averaged once
        self.live: dict[int, torch.Tensor] = {}
        if decay:
            for t in self.module.state_dict(keep_vars=True).values():
                if t.is_floating_point():
                    self.live.setdefault(id(t), t)
            # Runs after every optimizer.step(); a step that was skipped (a non-finite
            # gradient) does not call it, so the average only sees weights that were used
            optimizer.register_step_post_hook(lambda *_: self.update())
        with torch.no_grad():
            self.average = {key: t.detach().clone() for key, t in self.live.items()}
        # A fused lerp takes tensors of one kind, and under FSDP the parameters are shards
        # (DTensors) while buffers (BatchNorm's statistics) stay plain: one call per kind
        self.kinds: dict[bool, list[int]] = {}
        for key, t in self.live.items():
            self.kinds.setdefault(_is_shard(t), []).append(key)

    @property
    def enabled(self) -> bool:
        return bool(self.decay)

    @torch.no_grad()
    def update(self) -> None:
        self.updates += 1
        decay = min(self.decay, (1 + self.updates) / (10 + self.updates))
        for keys in self.kinds.values():
            torch._foreach_lerp_(
                [self.average[k] for k in keys], [self.live[k].detach() for k in keys], 1.0 - decay
            )

    @contextlib.contextmanager
    def swapped(self) -> Iterator[None]:
        """Within the block the model holds the averaged weights; the trained ones come back after."""
        _reshard(self.model)  # FSDP may still hold gathered weights that a copy would not reach
        with torch.no_grad():
            trained = {k: t.detach().clone() for k, t in self.live.items()}
            for k, t in self.live.items():
                t.copy_(self.average[k])
        try:
            yield
        finally:
            _reshard(self.model)
            with torch.no_grad():
                for k, t in self.live.items():
                    t.copy_(trained[k])

    def evaluate(self, evaluate: Callable[..., dict[str, float]], *args: Any) -> dict[str, float]:
        """`evaluate(*args)` of the trained weights and, when on, of the averaged ones.

        With EMA on, `val_*` are the averaged weights' (they pick best.pt and stop early) and
        `raw_val_*` the trained ones'.
        """
        trained = evaluate(*args)
        if not self.enabled:
            return trained
        with self.swapped():
            averaged = evaluate(*args)
        return {**averaged, **{f"raw_{name}": value for name, value in trained.items()}}

    def state_dict(self) -> dict[str, Any]:
        """The averages under the plain model's names: copies on the CPU, or under FSDP this
        rank's shards themselves (the sharded storage writes each rank's own; nothing is gathered)."""
        if not self.enabled:
            return {"decay": 0.0, "updates": 0}
        weights = {}
        for name, t in self.module.state_dict(keep_vars=True).items():
            t = self.average.get(id(t), t).detach()
            weights[name] = t if _is_shard(t) else t.to("cpu", copy=True)
        return {"decay": self.decay, "updates": self.updates, "model": weights}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Load averages that `state_dict` saved: whole tensors, or under FSDP this rank's shards
        (as the sharded storage reads them, for any number of saving ranks)."""
        self.updates = state["updates"]
        if not self.enabled:
            return
        if "model" not in state:  # the checkpoint was trained without EMA: start from its weights
            return
        with torch.no_grad():
            for name, t in self.module.state_dict(keep_vars=True).items():
                if id(t) in self.average:
                    self.average[id(t)].copy_(state["model"][name])


def _is_shard(t: torch.Tensor) -> bool:
    """Whether `t` is one rank's shard of an FSDP2 parameter (a DTensor)."""
    return hasattr(t, "device_mesh")


def _reshard(model: nn.Module) -> None:
    for module in model.modules():
        reshard = getattr(module, "reshard", None)  # FSDP2 modules only
        if callable(reshard):
            reshard()
