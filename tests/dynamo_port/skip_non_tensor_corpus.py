"""Cases ported from pytorch/pytorch ``test/dynamo/test_skip_non_tensor.py``
(``SkipNonTensorTests``): frames whose inputs are not (all) tensors, a Python number added to a
tensor directly or out of a list or dict, a frame with no tensor at all, a list that contains
itself, a list subclass whose ``__iter__`` and ``__len__`` raise, and explicit graph breaks in a
frame and in a callee, re-typed and adapted. The tests that compare ``is_compiling()`` with
eager (by design it differs) are left out."""

from __future__ import annotations

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_skip_non_tensor.py")


@case(args=lambda: (torch.randn(4), 5))
def add_tensor1(a, b):
    return a + b


@case(args=lambda: (torch.randn(4), 5))
def add_tensor2(a, b):
    return torch.add(a, b)


@case(args=lambda: ([torch.randn(4), 5],))
def add_tensor_list(lst):
    return lst[0] + lst[1]


@case(args=lambda: ({"a": torch.randn(4), "b": 5},))
def add_tensor_dict(dt):
    return dt["a"] + dt["b"]


@case(args=lambda: (4, 5))
def add_skip(a, b):
    return a + b


@case(args=lambda: (torch.ones(3), 0))
def condition_dependent_graph_break_after_call(x, n):
    y = x + 10
    if n == 0:
        torch._dynamo.graph_break()
    return y + 1


def _inner_with_break(x):
    torch._dynamo.graph_break()
    return x + 1


@case(args=lambda: (torch.ones(2),))
def nested_explicit_graph_break_counted_once(x):
    return _inner_with_break(x + 1) + 1


@case(args=lambda: (torch.ones(3), 1))
def condition_dependent_graph_break_in_finally(x, n):
    if n == 0:
        try:
            torch._dynamo.graph_break()
        finally:
            pass
    return x + 1


def _recursive_list():
    x = [torch.randn(2)]
    x.append(x)
    return (x,)


@case(args=_recursive_list)
def recursive_list(x):
    return x[0] + 1, len(x[1])


class RaisingList(list):
    def __iter__(self):
        raise Exception  # noqa: TRY002

    def __len__(self):
        raise Exception  # noqa: TRY002


def _custom_list():
    x = RaisingList()
    x.append(torch.randn(4))
    x.append(torch.randn(4))
    return (x,)


@case(args=_custom_list)
def custom_list(x):
    return x[0] + x[1]
