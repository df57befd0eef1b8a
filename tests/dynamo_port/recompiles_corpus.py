"""Cases ported from pytorch/pytorch ``test/dynamo/test_recompiles.py`` (``RecompileTests``):
the functions whose recompilation the tests count, run once here (capture and correctness; the
recompile counts themselves are checked in ``tests/test_recompiles.py``), re-typed and
adapted."""

from __future__ import annotations

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_recompiles.py")


class Foo:
    def __init__(self):
        self.x = 1


foo_instance = Foo()
global_scale = [2.0]


@case(args=lambda: (torch.randn(2), 1))
def automatic_dynamic_int(a, b):
    return a * 2 + b


@case(args=lambda: (torch.randn(3, 4),))
def dynamic_shape_parameter(a):
    return a.view(-1, a.shape[-1]).sum(0)


@case(args=lambda: (torch.randn(4),))
def global_object_attribute(x):
    return x + foo_instance.x


@case(args=lambda: (torch.randn(4),))
def global_list_item(x):
    return x * global_scale[0]


@case(args=lambda: (torch.randn(4, requires_grad=True),))
def requires_grad_input(x):
    return (x * 2).sum()


@case(args=lambda: (torch.randn(4), None))
def optional_argument_none(x, y):
    if y is None:
        return x + 1
    return x + y


@case(args=lambda: (torch.randn(4), [1, 2, 3]))
def list_argument_len(x, items):
    return x * len(items) + sum(items)


@case(args=lambda: (torch.randn(4, 3).t(),))
def non_contiguous_input(x):
    return x.contiguous() + x.stride()[0]


@case(args=lambda: (torch.randn(4, dtype=torch.float64),))
def dtype_branch(x):
    if x.dtype == torch.float64:
        return x * 2
    return x
