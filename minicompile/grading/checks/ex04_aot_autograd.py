"""Checks for exercises/ex04_aot_autograd.py (notebook 04: AOT autograd)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._subclasses import FakeTensorMode

from minicompile.aot_autograd import (default_saved_values, min_cut_saved_values,
                                      partition_with_saved, trace_graph)
from minicompile.aot_autograd.partitioners import tensor_bytes
from minicompile.grading import exercise


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln, self.fc1, self.fc2 = nn.LayerNorm(12), nn.Linear(12, 20), nn.Linear(20, 12)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


def _cases():
    """(name, fn of primals, example primals) for a few graphs with different shapes."""
    torch.manual_seed(0)
    block = _Block()
    params = list(block.parameters())
    names = [n for n, _ in block.named_parameters()]

    def block_fn(*args):
        return torch.func.functional_call(block, dict(zip(names, args[:-1])), (args[-1],))

    return [
        ("cos(cos(x)).sum()", lambda x: torch.cos(torch.cos(x)).sum(), [torch.randn(9)]),
        ("sin(a @ b).tanh()", lambda a, b: torch.tanh(torch.sin(a @ b)),
         [torch.randn(5, 7), torch.randn(7, 3)]),
        ("LayerNorm + MLP block", block_fn, [p.detach() for p in params] + [torch.randn(3, 5, 12)]),
        ("softmax(x * w)", lambda x, w: torch.softmax(x * w, -1).exp(),
         [torch.randn(6, 11), torch.randn(11)]),
        # the backward reads a narrow view of x: saving the view would keep all of x alive, so
        # the cut that changes with how a view is costed (x whole, never the slice)
        ("sin(x[:, :2]) * y", lambda x, y: (torch.sin(x[:, :2]) * y).sum(),
         [torch.randn(6, 64), torch.randn(6, 2)]),
    ]


def _joint(fn, inputs):
    return trace_graph(fn, inputs, [True] * len(inputs), FakeTensorMode())


def _check_runs(name, joint, sig, saved, fn, inputs):
    """The partition built from ``saved`` computes eager's outputs and gradients."""
    part = partition_with_saved(joint, saved, sig.num_fwd_outputs)
    real = [x.detach().clone().requires_grad_() for x in inputs]
    ref = fn(*real)
    grad_out = torch.randn_like(ref)
    ref_grads = torch.autograd.grad(ref, real, grad_out)
    fw_out = part.fw_module(*[x.detach() for x in inputs])
    out, saved_vals = fw_out[0], fw_out[sig.num_fwd_outputs:]
    grads = part.bw_module(*saved_vals, grad_out)
    torch.testing.assert_close(out, ref, msg=lambda m: f"{name}: forward output differs\n{m}")
    for g, rg in zip(grads, ref_grads):
        torch.testing.assert_close(g, rg, msg=lambda m: f"{name}: gradient differs\n{m}")
    return part


@exercise("4.1", points=10, hints=(
    "The forward is everything the forward outputs need, plus the primals.",
    "A forward node is saved when a node outside the forward reads it; the output node "
    "does not count.",
    "A node whose value is a tuple cannot be saved whole: save the getitems that read it.",
))
def check_default_saved_values(sol):
    """Write the default partition's saved set"""
    for name, fn, inputs in _cases():
        joint, sig = _joint(fn, inputs)
        got = sol.default_saved_values(joint.graph, sig.num_fwd_outputs)
        want = default_saved_values(joint.graph, sig.num_fwd_outputs)
        assert [n.name for n in got] == [n.name for n in want], (
            f"{name}: saved {[n.name for n in got]}, expected {[n.name for n in want]}")
        _check_runs(name, joint, sig, got, fn, inputs)


@exercise("4.2", points=10, hints=(
    "Every node becomes an edge whose capacity is what saving it costs: cutting it means "
    "saving it.",
    "The source feeds what cannot be recomputed (the primals, and forward ops that are "
    "not recomputable); the sink takes what reads a tangent.",
    "A view costs nothing to recompute: its edge must never be cut.",
))
def check_min_cut_saved_values(sol):
    """Compute the min-cut rematerialization saved set"""
    for name, fn, inputs in _cases():
        joint, sig = _joint(fn, inputs)
        got = sol.min_cut_saved_values(joint.graph, sig.num_fwd_outputs)
        want = min_cut_saved_values(joint.graph, sig.num_fwd_outputs)
        got_bytes = sum(tensor_bytes(n) for n in got)
        want_bytes = sum(tensor_bytes(n) for n in want)
        views = [n.name for n in got if isinstance(n.target, torch._ops.OpOverload)
                 and n.target.is_view]
        assert got_bytes == want_bytes and not views, (
            f"{name}: saving {[n.name for n in got]} costs {got_bytes} bytes; the minimum is "
            f"{want_bytes}" + (f" (a saved view keeps its whole base alive: {views})"
                               if views else ""))
        _check_runs(name, joint, sig, got, fn, inputs)
        if name.startswith("cos"):
            assert [n.name for n in got] == ["primals_1"], "cos(cos(x)): save only x"


@exercise("4.3", points=10, hints=(
    "A torch.autograd.Function has a forward and a backward; run is its apply.",
    "The forward graph returns more than the outputs: keep the rest for the backward.",
    "Saved tensors must go where autograd can check that nobody edited them in place "
    "before backward.",
))
def check_make_compiled_function(sol):
    """Write the runtime wrapper as a torch.autograd.Function"""
    for name, fn, inputs in _cases()[1:]:
        joint, sig = _joint(fn, inputs)
        part = partition_with_saved(joint, default_saved_values(joint.graph, 1), 1)
        bw_calls = []

        def bw(*args):
            bw_calls.append(len(args))
            return part.bw_module(*args)

        run = sol.make_compiled_function(part.fw_module, bw, 1, part.num_saved_tensors)
        xs = [x.detach().clone().requires_grad_() for x in inputs]
        ref_xs = [x.detach().clone().requires_grad_() for x in inputs]
        (out,) = run(*xs)
        ref = fn(*ref_xs)
        torch.testing.assert_close(out, ref, msg=lambda m: f"{name}: forward output\n{m}")
        assert out.grad_fn is not None, f"{name}: the output must be differentiable"
        g = torch.randn_like(ref)
        out.backward(g)
        ref.backward(g)
        assert bw_calls, f"{name}: the backward graph bw never ran (gradients must come from it)"
        for x, rx in zip(xs, ref_xs):
            torch.testing.assert_close(x.grad, rx.grad, msg=lambda m: f"{name}: grads\n{m}")
    _check_saved_tensors_are_version_checked(sol)


def _check_saved_tensors_are_version_checked(sol):
    """Editing a saved input in place between forward and backward must raise, as in eager:
    only ``ctx.save_for_backward`` notices it (a tensor kept as a ctx attribute gives silently
    wrong gradients)."""
    fn, inputs = lambda a, b: torch.tanh(torch.sin(a @ b)), [torch.randn(5, 7), torch.randn(7, 3)]
    joint, sig = _joint(fn, inputs)
    part = partition_with_saved(joint, default_saved_values(joint.graph, 1), 1)
    run = sol.make_compiled_function(part.fw_module, part.bw_module, 1, part.num_saved_tensors)
    assert "inplace" in (_backward_after_inplace_edit(fn, inputs) or ""), \
        "eager no longer notices an in-place edit of a saved tensor"
    assert _backward_after_inplace_edit(lambda a, b: run(a, b)[0], inputs) is not None, (
        "after the forward, a saved input was edited in place: eager's backward raises, yours "
        "computed gradients from the edited value (keep saved tensors with "
        "ctx.save_for_backward)")


def _backward_after_inplace_edit(fn, inputs) -> str | None:
    """Run ``fn``, scale its first input in place, then backward: the error raised, or None."""
    a, b = (x.detach().clone().requires_grad_() for x in inputs)
    out = fn(a, b)
    with torch.no_grad():
        a.mul_(2)  # a is saved for the matmul's backward
    try:
        out.sum().backward()
    except RuntimeError as e:
        return str(e)
    return None
