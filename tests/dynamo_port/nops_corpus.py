"""Cases ported from pytorch/pytorch ``test/dynamo/test_nops.py`` (``NopTests``): a frame of
Python numbers only, a closure that updates a ``nonlocal`` in a loop, a generator function, and
a lambda of 512 additions whose bytecode needs ``EXTENDED_ARG``, re-typed and adapted. PyTorch
runs them with NOPs inserted into the bytecode; here they run as they are."""

from __future__ import annotations

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_nops.py")

c = 10


@case(args=lambda: (1, 2))
def nops_fn1(a, b):
    return a + b - c


@case(args=lambda: (torch.randn(3), torch.randn(3)))  # tensors where the test passes 1, 2
def nops_fn2(a, b):
    x = 0
    y = 1

    def modify():
        nonlocal x
        x += a + b + c

    for _ in range(2):
        modify()

    return x + y


def _fn3():
    yield 1
    yield 2


@case(args=lambda: (torch.randn(3),))
def nops_fn3(x):
    t = _fn3()
    first, second = next(t), next(t)
    try:
        next(t)
    except StopIteration:
        return x + first + second
    return x


# (a, b) -> a + b + a + b ... (512 terms), then one more term on either side of a branch on
# the data: the jumps of the conditional expression need EXTENDED_ARG
_too_many_adds = "+".join(["a", "b"] * 256)
extended_args = eval(f"lambda a, b: ({_too_many_adds}+a if a.sum() > 0 else {_too_many_adds} - b)")
extended_args.__name__ = "nops_extended_args"
case(args=lambda: (torch.ones(1), torch.ones(1)))(extended_args)
extended_args_negative = eval(
    f"lambda a, b: ({_too_many_adds}+a if a.sum() > 0 else {_too_many_adds} - b)")
extended_args_negative.__name__ = "nops_extended_args_negative"
case(args=lambda: (-torch.ones(1), torch.ones(1)))(extended_args_negative)
