"""A module whose annotations are strings (PEP 563), as in much remote model code."""

from __future__ import annotations

import torch
from torch import nn


class FutureBlock(nn.Module):
    def __init__(self, dim: int, act: str = "silu"):
        super().__init__()
        self.dim, self.act = dim, act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x
