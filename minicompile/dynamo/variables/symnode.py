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

from ...shapes.symbolic_shapes import hint_of, is_symbolic
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
        return codegen.graph_output(self)

    def _repr_body(self) -> str:
        return f"{self.example_value} (hint {hint_of(self.example_value)})"


def symbolic_size(tx, item_proxy: Callable[[int], torch.fx.Proxy], value: tuple) -> VariableTracker:
    """A torch.Size / stride tuple with some symbolic entries: ints stay constants, each SymInt
    becomes a SymNodeVariable whose node (``item_proxy(i)``) is made only if it is used."""
    from .lists import SizeVariable, TupleVariable

    items = [SymNodeVariable(lambda i=i: item_proxy(i), v) if is_symbolic(v) else ConstantVariable(v)
             for i, v in enumerate(value)]
    return SizeVariable(items) if isinstance(value, torch.Size) else TupleVariable(items)


def wrap_tensor_metadata(tx, tensor_vt, name: str, args: list, value: Any) -> VariableTracker | None:
    """``x.shape``, ``x.size()``, ``x.size(0)``, ``x.stride()``, ``x.numel()`` when the answer is
    symbolic (None when it is a plain constant: the caller folds it as before)."""
    def node(method: str, *margs: Any) -> torch.fx.Proxy:
        return tx.output.create_proxy("call_method", method, (tensor_vt.as_proxy(), *margs), {})

    if isinstance(value, (tuple, list)) and any(is_symbolic(v) for v in value):
        method = "stride" if name == "stride" else "size"
        return symbolic_size(tx, lambda i: node(method, i), value)
    if is_symbolic(value):
        return SymNodeVariable(lambda: node(name, *args), value)
    return None


# Builtins that stay symbolic (a graph node computing a SymInt/SymBool); every other builtin
# specialises its symbolic arguments to their hints, each with a guard.
SYMBOLIC_BUILTINS: dict[Callable, Callable] = {
    **{op: op for op in (operator.add, operator.sub, operator.mul, operator.floordiv,
                         operator.truediv, operator.mod, operator.pow, operator.neg, operator.pos,
                         operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
                         operator.ne, operator.abs)},
    # an int is immutable: ``n += 1`` computes ``n + 1``. (A graph node ``operator.iadd`` is
    # printed by FX as ``l_n_ += 1``, which rebinds the input's variable in the generated
    # forward: a later output of ``n`` itself, a side effect's ``LOG.append(n)``, read n + 1.)
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.ifloordiv: operator.floordiv, operator.imod: operator.mod,
    abs: operator.abs,
    max: torch.sym_max,  # max(s0, 4) would branch on s0 > 4: torch.sym_max stays symbolic
    min: torch.sym_min,
}


def symbolic_builtin(tx, builtin, args: list[VariableTracker],
                     kwargs: dict[str, VariableTracker]) -> VariableTracker:
    from .tensor import call_op

    target = SYMBOLIC_BUILTINS.get(builtin.fn)
    if target is not None and not kwargs and (builtin.fn not in (max, min) or len(args) == 2):
        return call_op(tx, "call_function", target, args, {})
    concrete = [ConstantVariable(a.evaluate_expr()) if isinstance(a, SymNodeVariable) else a
                for a in args]
    kw = {k: ConstantVariable(v.evaluate_expr()) if isinstance(v, SymNodeVariable) else v
          for k, v in kwargs.items()}
    return builtin.call_function(tx, concrete, kw)
