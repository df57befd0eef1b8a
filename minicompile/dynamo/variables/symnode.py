"""SymNodeVariable: a symbolic int/float/bool inside the graph (mirrors the class of the same
name in torch/_dynamo/variables/tensor.py).

With dynamic shapes, ``x.shape[0]`` is no longer the constant 8 but the SymInt ``s0`` (hint 8).
It is traced like a tensor: an FX proxy (``x.size(0)``, or a ``Sym(s0)`` graph input for an int
argument) plus an example value, the ``torch.SymInt`` whose node is our SymPy expression.
Arithmetic makes ``operator.mul`` nodes whose example is ``2*s0``; asking for its truth value
(``if x.shape[0] * 2 < 16:``) goes to the ShapeEnv, which answers with the hint and records a
guard. The size node is created lazily, so a size only read by a guard adds nothing to the graph.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import torch

from ..symbolic_shapes import hint_of
from .base import VariableTracker
from .constant import ConstantVariable


class SymNodeVariable(VariableTracker):
    def __init__(self, proxy: torch.fx.Proxy | Callable[[], torch.fx.Proxy], example_value: Any,
                 source=None):
        super().__init__(source)
        self._proxy = proxy  # a Proxy, or a thunk that makes the node on first use
        self.example_value = example_value

    def python_type(self) -> type:
        return {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}[type(self.example_value)]

    def is_python_constant(self) -> bool:
        return False

    def as_proxy(self) -> torch.fx.Proxy:
        if callable(self._proxy) and not isinstance(self._proxy, torch.fx.Proxy):
            self._proxy = self._proxy()
            self._proxy.node.meta["example_value"] = self.example_value
        return self._proxy

    @property
    def proxy(self) -> torch.fx.Proxy:
        return self.as_proxy()

    def as_fake(self) -> Any:
        return self.example_value

    def identity(self) -> Any:
        return self

    def truth(self, tx) -> bool:
        """Python branches on a symbolic value: the ShapeEnv evaluates it and guards."""
        return bool(self.example_value)

    def evaluate_expr(self) -> Any:
        """Specialise: the concrete value, guarded (``int(s0)`` installs ``s0 == 8``)."""
        return self.python_type()(self.example_value)

    def call_method(self, tx, name: str, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        from .builtin import BuiltinVariable

        dunder = {"__add__": operator.add, "__sub__": operator.sub, "__mul__": operator.mul,
                  "__floordiv__": operator.floordiv, "__truediv__": operator.truediv,
                  "__mod__": operator.mod, "__eq__": operator.eq, "__ne__": operator.ne,
                  "__lt__": operator.lt, "__le__": operator.le, "__gt__": operator.gt,
                  "__ge__": operator.ge, "__neg__": operator.neg}
        if name in dunder:
            return BuiltinVariable(dunder[name]).call_function(tx, [self, *args], kwargs)
        if name in ("__int__", "__index__", "__bool__", "__float__"):
            return ConstantVariable(self.evaluate_expr())
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen) -> str:
        # Returning a size from the frame: the graph would have to output a SymInt. Specialise
        # instead (a guard pins the value) and return it as a constant.
        return repr(self.evaluate_expr())

    def _repr_body(self) -> str:
        return f"{self.example_value} (hint {hint_of(self.example_value)})"
