"""UnspecializedFloatVariable: a Python float argument of a frame that is a graph input, not a
constant (mirrors UnspecializedPythonVariable in torch/_dynamo/variables/tensor.py and real
Dynamo's ``specialize_float=False``).

A float that changes on every call -- a learning rate, or the value a graph break's
``loss.item()`` hands to the resumed frame -- would recompile the frame on every call if it were
baked into the graph behind a value guard. Instead it reaches the graph as a 0-d float64 tensor
input (the compiled graph's caller converts it, see ``OutputGraph.add_float_input``), and a
tensor op that takes it (``x * lr``) reads that input, cast to the dtype eager would compute
in: ``torch.result_type(x, lr)``, the dtype a Python scalar is cast to.

Everything else (``if lr > 0:``, ``range(int(lr))``, a torch function's float argument) needs
the value itself: the float is then *specialized* -- guarded by value and used as a constant,
exactly what happened before -- so it is never wrong, only recompiled.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from ..guards import Guard, GuardKind
from .base import VariableTracker
from .constant import ConstantVariable

# Tensor operators whose Python-float operand can be the graph input, cast to the result dtype
# (for these, eager casts the scalar to that dtype too: same values, bit for bit)
FLOAT_INPUT_OPERATORS = {operator.add, operator.sub, operator.mul, operator.truediv,
                         operator.iadd, operator.isub, operator.imul, operator.itruediv,
                         operator.lt, operator.le, operator.gt, operator.ge}
# Result dtypes where casting the scalar first is what eager does (half and bfloat16 kernels
# compute with the scalar in float32: those specialize)
EXACT_DTYPES = (torch.float32, torch.float64)


class UnspecializedFloatVariable(VariableTracker):
    def __init__(self, output, proxy: torch.fx.Proxy, value: float, source):
        super().__init__(source)
        self.output, self.proxy, self.value = output, proxy, value  # output: the OutputGraph
        self.guarded = False

    def python_type(self) -> type:
        return float

    def is_python_constant(self) -> bool:
        return True  # it can always become one (below); asking does not specialize it

    def as_python_constant(self) -> Any:
        """The value itself, used as a constant from now on: guarded by value."""
        if not self.guarded:
            tx = self.output.current_tx
            self.output.add_guard(Guard(self.source, GuardKind.EQUALS_MATCH, self.value,
                                        tx.user_line() if tx is not None else None))
            self.guarded = True
        return self.value

    def identity(self) -> Any:
        return self

    def operand_for(self, tx, op: Any, tensor: VariableTracker) -> VariableTracker:
        """This float as the other operand of ``op(tensor, float)``: the graph input cast to
        the result dtype, or the specialized constant where that would not match eager."""
        from .tensor import call_op

        dtype = torch.result_type(tensor.as_fake(), self.value)
        if op not in FLOAT_INPUT_OPERATORS or dtype not in EXACT_DTYPES:
            return ConstantVariable(self.as_python_constant())
        graph_input = _Proxied(self.proxy, self.proxy.node.meta["example_value"])
        return call_op(tx, "call_method", "to", [graph_input, ConstantVariable(dtype)], {})

    def _repr_body(self) -> str:
        return f"{self.value!r} (a graph input)"


def float_operands(tx, op: Any, args: list[VariableTracker]) -> list[VariableTracker]:
    """The arguments of tensor operator ``op``, each unspecialized float replaced by the
    operand :meth:`UnspecializedFloatVariable.operand_for` gives."""
    from .tensor import TensorVariable

    tensor = next((a for a in args if isinstance(a, TensorVariable)), None)
    return [a.operand_for(tx, op, tensor) if isinstance(a, UnspecializedFloatVariable)
            and tensor is not None else a for a in args]


class _Proxied(VariableTracker):
    """The float's graph input as a call_op argument (a 0-d float64 tensor)."""

    def __init__(self, proxy: torch.fx.Proxy, fake: torch.Tensor):
        super().__init__()
        self.proxy, self.fake = proxy, fake

    def as_proxy(self) -> torch.fx.Proxy:
        return self.proxy

    def as_fake(self) -> torch.Tensor:
        return self.fake
