"""An ONNX export as a module that onnxruntime runs: `evaluate` and `predict` take one wherever
they take a checkpoint, and `export` checks each ONNX file it writes with it."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from .errors import CheckpointError, first_line


class OnnxModel(nn.Module):
    """The ONNX file at `path`, run by onnxruntime on the CPU (the export extra), as a module of
    no parameters: its first input in, its first output out."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        try:
            import onnxruntime
        except ImportError:
            need = "running an ONNX export needs onnxruntime"
            raise CheckpointError(f"{need}: pip install -e .[export]") from None
        try:
            self.session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime's own error types, one per failure
            raise CheckpointError(f"{path}: corrupt ONNX export ({first_line(err)})") from None
        self.input = self.session.get_inputs()[0].name

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, ...) on any device
        out = self.session.run(None, {self.input: x.detach().cpu().numpy()})[0]  # (B, ...) outputs
        return torch.from_numpy(out).to(x.device)
