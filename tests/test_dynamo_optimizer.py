"""A training step with ``torch.optim`` inside the compiled function (what the model suites'
training mode compiles): eager-equal losses and weights over several steps for SGD and AdamW,
foreach and single-tensor paths; and the pieces an optimizer step is traced with, each against
eager and real Dynamo's graph count: a profiler region (``record_function``) is ignored, a
parameter's ``.grad`` is a graph input, torch.optim's Python code is inlined, a module bound
to a local survives a graph break."""

from __future__ import annotations

import copy

import pytest
import torch
import torch._dynamo
from torch import nn
from torch.optim.swa_utils import get_ema_avg_fn

import minicompile as mc


def train_step(model, opt, x, y):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


OPTIMIZERS = {
    "sgd": lambda params, foreach: torch.optim.SGD(params, lr=0.1, momentum=0.9,
                                                   foreach=foreach),
    "adamw": lambda params, foreach: torch.optim.AdamW(params, lr=0.01, foreach=foreach),
}


@pytest.mark.parametrize("foreach", [True, False], ids=["foreach", "single_tensor"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_training_step_matches_eager_over_steps(name, foreach):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    twin = copy.deepcopy(model)
    opt, twin_opt = (OPTIMIZERS[name](m.parameters(), foreach) for m in (model, twin))
    compiled = mc.compile(train_step, backend="inductor")
    for _ in range(3):  # momentum / Adam moments carry state from step to step
        x, y = torch.randn(5, 4), torch.randn(5, 2)
        torch.testing.assert_close(compiled(twin, twin_opt, x, y), train_step(model, opt, x, y))
        for p, q in zip(model.parameters(), twin.parameters()):
            torch.testing.assert_close(q, p)
            assert q.grad is None and p.grad is None  # zero_grad(set_to_none=True) ran
    assert mc.metrics.eager_fallbacks == 0


def same_graph_count_as_dynamo(fn, *args) -> int:
    ours = mc.explain(fn)(*args)
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(fn)(*args)
    assert ours.graph_count == theirs.graph_count, (str(ours), str(theirs))
    return ours.graph_count


def profiled(x):
    with torch.profiler.record_function("scale"):  # a label for the profiler, no computation
        y = x * 2
    with torch.autograd.profiler.record_function("shift"):
        return y + 1


def test_record_function_is_ignored_in_the_graph():
    x = torch.randn(6)
    torch.testing.assert_close(mc.compile(profiled, backend="eager")(x), profiled(x))
    assert same_graph_count_as_dynamo(profiled, x) == 1


def grad_step(p, lr):
    return p - lr * p.grad  # the gradient is read where the parameter is


def test_grad_of_an_input_is_a_graph_input():
    p = torch.randn(5, requires_grad=True)
    (p * p).sum().backward()
    compiled = mc.compile(grad_step, backend="aot_eager")
    with torch.no_grad():
        torch.testing.assert_close(compiled(p, 0.1), grad_step(p, 0.1))
        p.grad = torch.randn(5)  # a new gradient tensor: read again, not baked in
        torch.testing.assert_close(compiled(p, 0.1), grad_step(p, 0.1))
    assert same_graph_count_as_dynamo(grad_step, p, 0.1) == 1


def ema(average, value):
    # torch.optim's Python code (a closure made by a torch.optim function) is traced through,
    # as real Dynamo's trace rules inline it, not called as one opaque op
    return get_ema_avg_fn(0.9)(average, value, 1) * 3


def test_torch_optim_python_code_is_inlined():
    a, b = torch.randn(4), torch.randn(4)
    torch.testing.assert_close(mc.compile(ema, backend="eager")(a, b), ema(a, b))
    assert same_graph_count_as_dynamo(ema, a, b) == 1


def module_local_across_break(x):
    import torch.nn.functional as F  # a local bound to a module, live after the break

    y = x * 2
    print("break")
    return F.relu(y)


def test_module_bound_to_a_local_survives_a_graph_break(capsys):
    x = torch.randn(4)
    got = mc.compile(module_local_across_break, backend="eager")(x)
    torch.testing.assert_close(got, module_local_across_break(x))
    assert mc.metrics.eager_fallbacks == 0
    assert same_graph_count_as_dynamo(module_local_across_break, x) == 2
