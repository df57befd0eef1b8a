"""Activation checkpointing (``torch.utils.checkpoint``) under minicompile
(minicompile/dynamo/variables/checkpoint.py, aot_autograd/partitioners.py's
``recompute_checkpointed``). Eager runs the checkpointed function twice, in the forward and again
in the backward (the RNG state replayed): the compiled step must give eager's losses, gradients
and parameters under the same seed, in one graph where real Dynamo has one, and save less for
the backward than the same model without checkpointing."""

from __future__ import annotations

import copy
import functools
from typing import Any, Callable

import pytest
import torch
import torch._dynamo
import torch.utils.checkpoint as cp
from torch import nn

import minicompile as mc
from minicompile.dynamo.variables.checkpoint import CHECKPOINTED_FUNCTION


class Block(nn.Module):
    def __init__(self, d: int, p: float):
        super().__init__()
        self.l1, self.l2, self.drop = nn.Linear(d, d), nn.Linear(d, d), nn.Dropout(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l2(self.drop(torch.relu(self.l1(x))))


class CheckpointedMLP(nn.Module):
    def __init__(self, d: int = 16, p: float = 0.0, reentrant: bool = False, n: int = 2,
                 checkpoint: bool = True, eager_loop: bool = False):
        super().__init__()
        self.blocks = nn.ModuleList(Block(d, p) for _ in range(n))
        self.reentrant, self.checkpoint, self.eager_loop = reentrant, checkpoint, eager_loop

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            if self.eager_loop:
                torch._dynamo.graph_break()  # a break in the loop: the frame runs eagerly
            x = x + (cp.checkpoint(block, x, use_reentrant=self.reentrant) if self.checkpoint
                     else block(x))
        return x


def train_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor) -> torch.Tensor:
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def _steps(model: nn.Module, x: Any, backend: str | None, steps: int = 2,
           train_step: Callable = train_step):
    """Losses and parameters after ``steps`` SGD steps on input ``x`` (a fresh leaf each step
    when a tensor), each step under its own seed."""
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
        fresh = x.detach().clone().requires_grad_() if isinstance(x, torch.Tensor) else x
        losses.append(step(fresh).detach())
    return losses, [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("p", [0.0, 0.5])
def test_checkpointed_blocks_in_a_frame_that_runs_eagerly(reentrant: bool, p: float):
    """A module checkpointed inside a frame that runs eagerly (here: the loop over the blocks)
    is not compiled as its own frame: ``checkpoint`` asks never to be traced, and its
    recomputation in the backward runs eagerly. A compiled first run saved other tensors than
    the recomputation (non-reentrant: CheckpointError in the backward)."""
    torch.manual_seed(0)
    model, x = CheckpointedMLP(p=p, reentrant=reentrant, eager_loop=True), torch.randn(4, 16)
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


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("reentrant", [False, True])
def test_a_training_step_with_checkpointed_blocks_is_one_graph(backend: str, reentrant: bool):
    """The blocks are traced into the forward's one graph (as real Dynamo's; the step itself
    breaks at ``loss.backward()`` in both), with dropout inside the checkpointed region: a
    recomputation drawing a new mask would give other gradients than eager's."""
    torch.manual_seed(0)
    model, x = CheckpointedMLP(p=0.5, reentrant=reentrant), torch.randn(6, 16)
    torch.testing.assert_close(_steps(model, x, backend), _steps(model, x, None))
    mc.reset()
    explain = mc.explain(lambda x: model(x).pow(2).mean())(x.requires_grad_())
    assert (explain.graph_count, explain.break_reasons) == (1, []), explain.break_reasons


lin1, lin2 = nn.Linear(8, 8), nn.Linear(8, 8)
seq = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 8), nn.Tanh(),
                    nn.Linear(8, 8))


def with_kwargs(x, scale, *, bias=None, act="relu"):
    y = lin1(x) * scale
    if bias is not None:
        y = y + bias
    return torch.relu(y) if act == "relu" else torch.tanh(y)


def dropped(x):
    return nn.functional.dropout(lin2(x).sin(), 0.3)


def nested(x):
    return cp.checkpoint(dropped, lin1(x), use_reentrant=False).cos()


def two_outputs(x, y):
    return lin1(x) * y, (x - y).exp()


# each a function (x, b) -> loss whose checkpointed part real Dynamo traces into one graph
CASES = {
    "kwargs and non-tensor arguments": lambda x, b: cp.checkpoint(
        with_kwargs, x, 2.0, bias=b, act="tanh", use_reentrant=False).sum(),
    "nested, non-reentrant": lambda x, b: cp.checkpoint(nested, x, use_reentrant=False).sum(),
    "nested, reentrant": lambda x, b: cp.checkpoint(nested, x, use_reentrant=True).sum(),
    "checkpoint_sequential": lambda x, b: cp.checkpoint_sequential(
        seq, 3, x, use_reentrant=False).sum(),
    "checkpoint_sequential, reentrant": lambda x, b: cp.checkpoint_sequential(
        seq, 2, x, use_reentrant=True).sum(),
    "two outputs": lambda x, b: sum(t.sum() for t in cp.checkpoint(
        two_outputs, x, b, use_reentrant=False)),
    "functools.partial": lambda x, b: functools.partial(cp.checkpoint, use_reentrant=False)(
        dropped, x).sum(),
    # a reentrant checkpoint whose tensor arguments need no grad gives the parameters none
    "reentrant, no input needs grad": lambda x, b: cp.checkpoint(
        dropped, x.detach(), use_reentrant=True).sum() + x.sum(),
}
PARAMETERS = [*lin1.parameters(), *lin2.parameters(), *seq.parameters()]


def _forward_backward(fn, backend: str | None):
    if backend is not None:
        mc.reset()
        fn = mc.compile(fn, backend=backend)
    torch.manual_seed(0)
    x, b = torch.randn(4, 8, requires_grad=True), torch.randn(8, requires_grad=True)
    for p in PARAMETERS:
        p.grad = None
    torch.manual_seed(7)
    out = fn(x, b)
    out.backward()
    return out, x.grad, b.grad, [p.grad for p in PARAMETERS]


@pytest.mark.parametrize("case", list(CASES))
def test_checkpoint_forms_trace_into_one_graph(case: str):
    fn = CASES[case]
    expected = _forward_backward(fn, None)
    torch.testing.assert_close(_forward_backward(fn, "aot_eager"), expected)
    mc.reset()
    explain = mc.explain(fn)(torch.randn(4, 8, requires_grad=True), torch.randn(8))
    assert (explain.graph_count, explain.break_reasons) == (1, []), explain.break_reasons


calls: list[int] = []


def counted(x):
    calls.append(1)
    return lin1(x).relu()


def printing(x):
    print("in the checkpointed function")
    return lin1(x).relu()


# checkpoint calls whose eager runs differ from one traced run: each runs natively
FALLBACKS = {
    "preserve_rng_state=False": (lambda x, b: cp.checkpoint(
        dropped, x, use_reentrant=False, preserve_rng_state=False).sum() * 0 + lin1(x).sum(),
        "preserve_rng_state=False"),
    "a side effect": (lambda x, b: cp.checkpoint(counted, x, use_reentrant=False).sum(),
                      "side effects"),
    "a break inside": (lambda x, b: cp.checkpoint(printing, x, use_reentrant=False).sum(),
                       "print"),
}


@pytest.mark.parametrize("case", list(FALLBACKS))
def test_checkpoint_calls_eager_runs_differently_run_natively(case: str):
    """Eager's two runs of the function are not one traced run here: the call breaks the graph
    with a readable reason and runs natively (a side effect happens twice, as in eager)."""
    fn, reason = FALLBACKS[case]
    calls.clear()
    expected = _forward_backward(fn, None), len(calls)
    calls.clear()
    torch.testing.assert_close((_forward_backward(fn, "aot_eager"), len(calls)), expected)
    mc.reset()
    explain = mc.explain(fn)(torch.randn(4, 8, requires_grad=True), torch.randn(8))
    assert any(reason in str(r) for r in explain.break_reasons), explain.break_reasons


def _saved_bytes(model: nn.Module, x: torch.Tensor) -> int:
    """Bytes of the tensors the compiled forward saves for the backward, parameters and the
    input left out (they are alive anyway)."""
    alive = {p.data_ptr() for p in model.parameters()} | {x.data_ptr()}
    saved = []

    def pack(t):
        if t.data_ptr() not in alive:
            saved.append(t.numel() * t.element_size())
        return t

    mc.reset()
    step = mc.compile(lambda x: model(x).pow(2).mean(), backend="aot_eager")
    step(x).backward()  # compiled first: tracing saves fake tensors too
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = step(x)
    loss.backward()
    return sum(saved)


def test_the_checkpointed_region_is_recomputed_in_the_backward():
    """The partitioner saves the region's inputs (and a dropout's mask), not its activations:
    the backward recomputes them. Without the tags the checkpointed model saved as much as the
    plain one (here: 2 tensors per block instead of 4)."""
    torch.manual_seed(0)
    plain = CheckpointedMLP(d=32, p=0.5, n=3, checkpoint=False)
    checkpointed = copy.deepcopy(plain)
    checkpointed.checkpoint = True
    x = torch.randn(64, 32, requires_grad=True)
    assert _saved_bytes(checkpointed, x) < 0.6 * _saved_bytes(plain, x)


def test_transformers_gradient_checkpointing_training_step():
    """A Llama from a tiny config with ``gradient_checkpointing_enable()``: the layers call
    ``checkpoint`` through transformers' ``forward_with_checkpointing``; one training step
    (forward, loss, backward, SGD), twice, gives eager's losses and parameters."""
    pytest.importorskip("transformers")
    from minicompile.bench.models.huggingface import build
    from minicompile.bench.models.huggingface import train_step as hf_train_step
    from minicompile.bench.models.zoo import SIZES

    model, inputs = build("llama", SIZES["tiny"])
    model.train()
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})

    torch.testing.assert_close(_steps(model, inputs, "aot_eager", train_step=hf_train_step),
                               _steps(model, inputs, None, train_step=hf_train_step))


if CHECKPOINTED_FUNCTION is not None:
    @cp.checkpoint(use_reentrant=False)
    def checkpointed_call(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return block(x)


class DecoratedMLP(CheckpointedMLP):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            if self.eager_loop:
                torch._dynamo.graph_break()
            x = x + checkpointed_call(block, x)
        return x


@pytest.mark.skipif(CHECKPOINTED_FUNCTION is None, reason="no @checkpoint(...) in this torch")
@pytest.mark.parametrize("eager_loop", [False, True])
def test_the_decorator_form(eager_loop: bool):
    """A function decorated with ``@checkpoint(use_reentrant=False)`` (torch 2.14): traced into
    one graph (real Dynamo breaks there); called from a frame that runs eagerly, the blocks it
    calls are not compiled (it is not wrapped in torch._disable_dynamo, but it runs its function
    again in the backward, where nothing is: CheckpointError)."""
    torch.manual_seed(0)
    model, x = DecoratedMLP(p=0.5, eager_loop=eager_loop), torch.randn(6, 16)
    torch.testing.assert_close(_steps(model, x, "aot_eager"), _steps(model, x, None))
    if not eager_loop:
        mc.reset()
        explain = mc.explain(lambda x: model(x).pow(2).mean())(x.requires_grad_())
        assert (explain.graph_count, explain.break_reasons) == (1, []), explain.break_reasons
