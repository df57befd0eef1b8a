"""Tensor subclasses and TorchFunctionModes (PyTorch's test/dynamo/test_subclasses.py): a
tensor whose class runs its own code on every op (``__torch_function__``, methods of its
class) is not traced as a plain tensor, nor is a call made under an active
``TorchFunctionMode``: that code runs natively, with a reason, and gives eager's result.
nn.Parameter and subclasses that switch ``__torch_function__`` off stay plain tensors."""

from __future__ import annotations

import pytest
import torch

import minicompile as mc
from minicompile.dynamo.variables.tensor import plain_tensor_class


class Scaled(torch.Tensor):
    """``add`` multiplies its result by 10: a plain graph would miss it."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        if func is torch.Tensor.add:
            out = out * 10
        return out


class MyT(torch.Tensor):  # torch.Tensor's __torch_function__: results stay MyT
    pass


class Disabled(torch.Tensor):  # as nn.Parameter: ops are plain ops with plain results
    __torch_function__ = torch._C._disabled_torch_function_impl


class DisabledWithMethod(torch.Tensor):
    __torch_function__ = torch._C._disabled_torch_function_impl

    def add(self, other):
        return super().add(other) * 10


class AddTimesTen(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.Tensor.add:
            out = out * 10
        return out


def assert_same(got, expected):
    assert type(got) is type(expected), (type(got), type(expected))
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(got.as_subclass(torch.Tensor),
                                   expected.as_subclass(torch.Tensor))
    else:
        assert got == expected


def run_both(fn, *args):
    mc.reset()
    mc.metrics.reset()
    expected = fn(*args)
    got = mc.compile(fn)(*args)
    assert_same(got, expected)
    return mc.metrics.fallback_reasons


def add_one(x):
    return x.add(1)


def subclass_of_product(x):
    return type(x * 2).__name__


def add_as_subclass(x):
    return x.as_subclass(Scaled).add(1)


def add_constructed(x):
    return Scaled(x).add(1)


def add_made_subclass(x):
    return torch.Tensor._make_subclass(Scaled, x).add(1)


def type_of_as_subclass(x):
    return type(x.as_subclass(MyT) + 1).__name__


def add_first_of_list(xs):
    return xs[0].add(1) + xs[1]


def add_item_of_dict(d):
    return d["a"].add(1)


@pytest.mark.parametrize("fn, arg", [
    (add_one, lambda: torch.randn(4).as_subclass(Scaled)),
    (subclass_of_product, lambda: torch.randn(4).as_subclass(MyT)),
    (add_one, lambda: torch.randn(4).as_subclass(DisabledWithMethod)),
    (add_as_subclass, lambda: torch.randn(4)),
    (add_constructed, lambda: torch.randn(4)),
    (add_made_subclass, lambda: torch.randn(4)),
    (type_of_as_subclass, lambda: torch.randn(4)),
    (add_first_of_list, lambda: [torch.randn(4).as_subclass(Scaled), torch.randn(4)]),
    (add_item_of_dict, lambda: {"a": torch.randn(4).as_subclass(Scaled)}),
], ids=["input", "result_type", "method_override", "as_subclass", "constructor",
        "make_subclass", "as_subclass_type", "in_list", "in_dict"])
def test_subclass_runs_natively_with_eager_result(fn, arg):
    reasons = run_both(fn, arg())
    assert any("tensor subclass" in r for r in reasons), reasons


class WithScaledBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("b", torch.ones(4).as_subclass(Scaled))

    def forward(self, x):
        return x.add(self.b)


def test_subclass_module_buffer():
    reasons = run_both(WithScaledBuffer(), torch.randn(4))
    assert any("tensor subclass (Scaled)" in r for r in reasons), reasons


def test_parameter_and_disabled_subclass_stay_plain():
    """One graph, with ``type(x)`` answered by the input's own class."""
    def fn(p, d):
        return type(p).__name__, type(d).__name__, type(d * 2).__name__, p.add(d)

    assert plain_tensor_class(torch.nn.Parameter) and plain_tensor_class(Disabled)
    assert not plain_tensor_class(DisabledWithMethod) and not plain_tensor_class(MyT)
    args = (torch.nn.Parameter(torch.randn(4)), torch.randn(4).as_subclass(Disabled))
    mc.reset()
    expected = fn(*args)
    got = mc.compile(fn, backend="eager", fullgraph=True)(*args)
    assert got[:3] == expected[:3]
    torch.testing.assert_close(got[3], expected[3])


@pytest.mark.parametrize("order", [("plain", "sub", "plain"), ("sub", "plain", "sub")])
def test_entry_is_not_reused_across_plain_and_subclass(order):
    """TENSOR_MATCH checks the exact class: a plain tensor's entry is not reused for a
    subclass instance, nor the reverse."""
    compiled = mc.compile(add_one)
    mc.reset()
    for kind in order:
        x = torch.randn(4)
        if kind == "sub":
            x = x.as_subclass(Scaled)
        assert_same(compiled(x), add_one(x))


def test_function_mode_active_at_call():
    """An entry compiled without the mode is not reused under it; the call runs natively."""
    mc.reset()
    mc.metrics.reset()
    compiled = mc.compile(add_one)
    x = torch.randn(4)
    assert_same(compiled(x), add_one(x))
    with AddTimesTen():
        expected = add_one(x)
        got = compiled(x)
    assert_same(got, expected)
    assert any("TorchFunctionMode (AddTimesTen)" in r for r in mc.metrics.fallback_reasons)
    assert_same(compiled(x), add_one(x))  # and the entry still serves calls without it


def enter_mode_then_add(x):
    mode = AddTimesTen()
    mode.__enter__()  # a graph break: the rest of the frame runs under the mode
    z = x.add(1)
    mode.__exit__(None, None, None)
    return z.add(1)


def enter_mode_with(x):
    y = x * 2
    with AddTimesTen():
        z = y.add(1)
    return z.add(1)


@pytest.mark.parametrize("fn", [enter_mode_then_add, enter_mode_with])
def test_function_mode_entered_in_frame(fn):
    run_both(fn, torch.randn(4))
