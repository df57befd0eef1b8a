"""Activation checkpointing (``torch.utils.checkpoint``) under minicompile: the checkpointed
function's forward runs once in the forward and again in the backward, and both runs must agree
(same saved tensors, same dropout masks). Eager PyTorch is the oracle: losses, gradients and
parameters after a training step are compared with eager under the same seed."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.utils.checkpoint as cp
from torch import nn

import minicompile as mc


class Block(nn.Module):
    def __init__(self, d: int, p: float):
        super().__init__()
        self.l1, self.l2, self.drop = nn.Linear(d, d), nn.Linear(d, d), nn.Dropout(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l2(self.drop(torch.relu(self.l1(x))))


class CheckpointedMLP(nn.Module):
    def __init__(self, d: int = 16, p: float = 0.0, reentrant: bool = False, n: int = 2):
        super().__init__()
        self.blocks = nn.ModuleList(Block(d, p) for _ in range(n))
        self.reentrant = reentrant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + cp.checkpoint(block, x, use_reentrant=self.reentrant)
        return x


def train_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor) -> torch.Tensor:
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def _steps(model: nn.Module, x: torch.Tensor, backend: str | None, steps: int = 2):
    """Losses and parameters after ``steps`` SGD steps, each step under its own seed."""
    model = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        return train_step(model, opt, x)

    if backend is not None:
        mc.reset()
        step = mc.compile(step, backend=backend)
    losses = []
    for i in range(steps):
        torch.manual_seed(100 + i)
        losses.append(step(x.detach().clone().requires_grad_()).detach())
    return losses, [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("p", [0.0, 0.5])
def test_checkpointed_blocks_in_a_frame_that_runs_eagerly(reentrant: bool, p: float):
    """A module checkpointed inside a frame that runs eagerly (here: the loop over the blocks)
    is not compiled as its own frame: ``checkpoint`` asks never to be traced, and its
    recomputation in the backward runs eagerly. A compiled first run saved other tensors than
    the recomputation (non-reentrant: CheckpointError in the backward)."""
    torch.manual_seed(0)
    model, x = CheckpointedMLP(p=p, reentrant=reentrant), torch.randn(4, 16)
    expected = _steps(model, x, None)
    torch.testing.assert_close(_steps(model, x, "aot_eager"), expected)


def test_a_class_function_is_the_function_it_holds():
    """``type(self).forward is wrapper``: transformers' checkpointing layers replace ``forward``
    on the class and ask this before taking the checkpointed branch; as a stand-in for the
    attribute the class's function was never the same object, and the layer silently took
    the other branch (here: a result off by a factor of 2)."""

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            return self.lin(x).relu()

    plain = Layer.forward

    def doubling(self, x):
        scale = 2.0 if type(self).forward is doubling else 1.0
        return plain(self, x) * scale

    Layer.forward = doubling
    layer, x = Layer(), torch.randn(4, 8)

    def fn(x):
        return layer(x).sum(), Layer.forward is doubling

    mc.reset()
    torch.testing.assert_close(mc.compile(fn, backend="eager")(x), fn(x))
