"""The trained model of a checkpoint, ready to predict with: what `evaluate`, `predict`, `sample`
and `load_exported` all start from."""

from __future__ import annotations

from typing import Any

from torch import nn

from .. import TASK
from ..config import ModelConfig, config_from_dict
from ..ema import inference_weights
from ..model import build_model
from .format import check_compatible, check_task


def inference_model(
    state: dict[str, Any], model_cfg: ModelConfig | None = None, data_info: Any = None
) -> nn.Module:
    """The model of a checkpoint (or an export), on the CPU and in eval mode, holding the weights
    to predict with: the EMA's when the run kept one.

    It is built from the checkpoint's own model config and data description unless `model_cfg`
    or `data_info` say otherwise; a checkpoint of another task or of another shape is refused.
    """
    check_task(state, TASK)  # first: the config of another task's checkpoint does not parse
    model_cfg = model_cfg or config_from_dict(state["config"]).model
    model = build_model(model_cfg, data_info or state["data_info"])
    check_compatible(state, model.state_dict(), TASK)
    model.load_state_dict(inference_weights(state))
    return model.eval()
