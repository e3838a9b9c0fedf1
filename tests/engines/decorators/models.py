"""Small modules for the decorator tests.

No `from __future__ import annotations` here: the annotations must be real
objects, as in most model code (future_models.py has the string kind).
"""

import typing
from collections.abc import Callable

import torch
from torch import Tensor, nn
from transformers import LlamaConfig


class Block(nn.Module):
    def __init__(self, dim: int, act: str = "silu"):
        super().__init__()
        self.proj = nn.Linear(dim, dim)  # "8" for dim fails here, inside torch
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


class Block3(nn.Module):
    def __init__(self, act: Callable[[Tensor], Tensor], gate: Callable[[Tensor], Tensor]):
        super().__init__()
        self.act, self.gate = act, gate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(x) * self.gate(x)


class TypingCallableBlock(Block3):
    """typing.Callable[...] makes isinstance raise inside typing.py, not in the check's frame."""

    def __init__(self, act: typing.Callable[[Tensor], Tensor], gate: typing.Callable[[Tensor], Tensor]):
        super().__init__(act, gate)


class ListBlock(nn.Module):
    def __init__(self, sizes: list[int], names: list[str]):
        super().__init__()
        self.sizes, self.names = sizes, names

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class AnyBlock(ListBlock):
    def __init__(self, sizes: typing.Any, names: typing.Any):
        super().__init__(sizes, names)


class ConfigBlock(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.config = config

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class Failing(nn.Module):
    """Its own __init__ fails: the outcome is "error", whatever the policy."""

    def __init__(self, dim: int):
        super().__init__()
        raise RuntimeError(f"cannot build with dim={dim}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class WithKeywords(nn.Module):
    """Names vllm_config and prefix, so the wrapper forwards them."""

    def __init__(self, dim: int, *, vllm_config=None, prefix: str = "unset"):
        super().__init__()
        self.received = {"vllm_config": vllm_config, "prefix": prefix}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class Inferred(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None,
                z: torch.FloatTensor | None = None, n: int = 0) -> torch.Tensor:
        return x


class NoTensors(nn.Module):
    def forward(self, ids: list[int], scale: float = 1.0) -> list[int]:
        return ids


class NoForward:
    """Not an nn.Module: nn.Module always has a `forward` (the unimplemented stub)."""


class Vision(nn.Module):
    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return pixel_values


class Parent(nn.Module):
    def __init__(self, dim: int = 4):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class Child(Parent):
    pass
