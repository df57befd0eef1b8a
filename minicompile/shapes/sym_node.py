"""Mini version of torch/fx/experimental/sym_node.py: the object behind a ``torch.SymInt``.

A ``torch.SymInt`` is a C++ handle; all its arithmetic is forwarded to a Python "node" object
that implements the *SymNode protocol* (``add``, ``mul``, ``lt``, ``guard_bool``, ``wrap_int``,
...). Real PyTorch's node is ``torch.fx.experimental.sym_node.SymNode``; ours is :class:`SymNode`
below: a SymPy expression, its *hint* (the value it has for the example inputs) and the
:class:`~minicompile.shapes.symbolic_shapes.ShapeEnv` that owns its symbols::

    s0 = torch.SymInt(SymNode(sympy.Symbol("s0"), hint=8, shape_env=env))
    s0 * 2          # SymInt whose node has expr 2*s0 and hint 16
    s0 * 2 < 16     # SymBool (expr 2*s0 < 16, hint False)
    bool(s0 * 2 < 16)   # -> node.guard_bool(): the ShapeEnv answers with the hint and records
                        #    the guard 2*s0 >= 16 so the compiled code is only reused when it holds

Operators are a table (:data:`BINARY_OPS`, :data:`UNARY_OPS`): each row says how to build the
SymPy expression and how to compute the hint, so the two always agree.
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any, Callable

import sympy

if TYPE_CHECKING:
    from .symbolic_shapes import ShapeEnv


def _floordiv(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    return sympy.floor(a / b)


def _truediv(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    return a / b


# name -> (SymPy builder, hint function, result type: None = same as the left operand)
BINARY_OPS: dict[str, tuple[Callable, Callable, type | None]] = {
    "add": (operator.add, operator.add, None),
    "sub": (operator.sub, operator.sub, None),
    "mul": (operator.mul, operator.mul, None),
    "floordiv": (_floordiv, operator.floordiv, None),
    "int_floordiv": (_floordiv, operator.floordiv, int),
    "mod": (sympy.Mod, operator.mod, None),
    "truediv": (_truediv, operator.truediv, float),
    "int_truediv": (_truediv, operator.truediv, float),
    "float_truediv": (_truediv, operator.truediv, float),
    "pow": (operator.pow, operator.pow, None),
    "pow_by_natural": (operator.pow, operator.pow, int),
    "float_pow": (operator.pow, operator.pow, float),
    "sym_max": (sympy.Max, max, None),
    "sym_min": (sympy.Min, min, None),
    "eq": (sympy.Eq, operator.eq, bool),
    "ne": (sympy.Ne, operator.ne, bool),
    "lt": (sympy.Lt, operator.lt, bool),
    "le": (sympy.Le, operator.le, bool),
    "gt": (sympy.Gt, operator.gt, bool),
    "ge": (sympy.Ge, operator.ge, bool),
    "sym_and": (sympy.And, lambda a, b: a and b, bool),
    "sym_or": (sympy.Or, lambda a, b: a or b, bool),
    "and_": (sympy.And, lambda a, b: a and b, bool),
    "or_": (sympy.Or, lambda a, b: a or b, bool),
}

# name -> (SymPy builder, hint function, result type)
UNARY_OPS: dict[str, tuple[Callable, Callable, type | None]] = {
    "neg": (operator.neg, operator.neg, None),
    "pos": (lambda a: a, lambda a: a, None),
    "abs": (sympy.Abs, abs, None),
    "sym_not": (sympy.Not, operator.not_, bool),
    "sym_float": (lambda a: a, float, float),
    "sym_int": (sympy.floor, int, int),
    "floor": (sympy.floor, math.floor, int),
    "ceil": (sympy.ceiling, math.ceil, int),
    "trunc": (lambda a: sympy.sign(a) * sympy.floor(sympy.Abs(a)), math.trunc, int),
}


class SymNode:
    """One symbolic scalar: ``expr`` (SymPy), ``hint`` (its example value), its ShapeEnv."""

    def __init__(self, expr: Any, hint: Any, shape_env: "ShapeEnv", pytype: type = int):
        self.expr = sympy.sympify(expr)
        self.hint = hint
        self.shape_env = shape_env
        self.pytype = pytype

    @property
    def _hint(self) -> Any:  # the name torch's own helpers read
        return self.hint

    # ---- what kind of scalar am I (the C++ side asks to pick SymInt/SymFloat/SymBool) -------
    def is_int(self) -> bool:
        return self.pytype is int

    def is_float(self) -> bool:
        return self.pytype is float

    def is_bool(self) -> bool:
        return self.pytype is bool

    def is_nested_int(self) -> bool:
        return False

    def is_symbolic(self) -> bool:
        return True

    def is_constant(self) -> bool:
        return False

    def has_hint(self) -> bool:
        return True

    def nested_int(self) -> None:
        return None

    def maybe_as_int(self) -> int | None:
        return int(self.expr) if self.expr.is_Integer else None

    def maybe_as_bool(self) -> bool | None:
        return bool(self.expr) if self.expr in (sympy.true, sympy.false) else None

    def maybe_as_float(self) -> float | None:
        return float(self.expr) if self.expr.is_Number else None

    def constant_int(self) -> int | None:
        return None

    def constant_bool(self) -> bool | None:
        return None

    # ---- wrapping plain Python numbers that meet a symbolic one ------------------------------
    def wrap_int(self, num: int) -> SymNode:
        return SymNode(sympy.Integer(num), num, self.shape_env, int)

    def wrap_float(self, num: float) -> SymNode:
        return SymNode(sympy.Float(num), num, self.shape_env, float)

    def wrap_bool(self, num: bool) -> SymNode:
        return SymNode(sympy.true if num else sympy.false, num, self.shape_env, bool)

    def _value_eq(self, other: SymNode) -> bool:  # torch dedupes equal nodes with these
        return isinstance(other, SymNode) and (self.expr, self.pytype) == (other.expr, other.pytype)

    def _value_hash(self) -> int:
        return hash((self.expr, self.pytype))

    def clone(self) -> SymNode:
        return self

    def with_shape_env(self, shape_env: "ShapeEnv") -> SymNode:
        return SymNode(self.expr, self.hint, shape_env, self.pytype)

    # ---- printing --------------------------------------------------------------------------------
    def str(self) -> str:
        return str(self.expr)

    def __str__(self) -> str:
        return str(self.expr)

    def __repr__(self) -> str:
        return f"SymNode({self.expr}, hint={self.hint})"

    def _graph_repr(self) -> str:
        return str(self.expr)

    # ---- turning a symbolic value into a Python one: this is where guards come from ------------
    def guard_bool(self, file: str = "", line: int = 0) -> bool:
        return bool(self.shape_env.evaluate_expr(self.expr, self.hint))

    def guard_int(self, file: str = "", line: int = 0) -> int:
        return int(self.shape_env.evaluate_expr(self.expr, self.hint))

    def guard_float(self, file: str = "", line: int = 0) -> float:
        return float(self.shape_env.evaluate_expr(self.expr, self.hint))

    def bool_(self) -> bool:
        return self.guard_bool()

    def int_(self) -> int:
        return self.guard_int()

    # ATen's size-oblivious call sites: every symbol is already >= 2, so these are plain guards.
    def guard_size_oblivious(self, file: str = "", line: int = 0) -> bool:
        return self.guard_bool(file, line)

    def expect_true(self, file: str = "", line: int = 0) -> bool:
        return self.guard_bool(file, line)

    def statically_known_true(self, file: str = "", line: int = 0) -> bool:
        return self.shape_env.static_eval(self.expr) is True

    # guard_or_false / guard_or_true: torch answers with the fallback only for data-dependent
    # (unbacked) sizes, which have no hint. Ours are all backed by a hint, so, like torch for
    # backed sizes, the answer comes from the hint and is guarded: several meta functions
    # (slicing in torch 2.11) rely on that and would otherwise ask for an unbacked symbol.
    def guard_or_false(self, file: str = "", line: int = 0) -> bool:
        return self.guard_bool(file, line)

    def guard_or_true(self, file: str = "", line: int = 0) -> bool:
        return self.guard_bool(file, line)

    # ---- variadic / ternary ops ------------------------------------------------------------------
    def sym_sum(self, args: list[SymNode]) -> SymNode:
        return SymNode(sympy.Add(*[a.expr for a in args]), sum(a.hint for a in args),
                       self.shape_env, self.pytype)

    def sym_ite(self, then_val: SymNode, else_val: SymNode) -> SymNode:
        chosen = then_val if self.hint else else_val
        expr = sympy.Piecewise((then_val.expr, self.expr), (else_val.expr, True))
        return SymNode(expr, chosen.hint, self.shape_env, then_val.pytype)

    # ---- layout predicates asked by TensorImpl: built from the size/stride expressions ---------
    def is_contiguous(self, sizes: list[SymNode], strides: list[SymNode]) -> SymNode:
        return self._layout(sizes, strides, list(range(len(sizes)))[::-1])

    def is_channels_last_contiguous_2d(self, sizes: list[SymNode], strides: list[SymNode]) -> SymNode:
        return self._layout(sizes, strides, [1, 3, 2, 0])

    def is_channels_last_contiguous_3d(self, sizes: list[SymNode], strides: list[SymNode]) -> SymNode:
        return self._layout(sizes, strides, [1, 4, 3, 2, 0])

    def is_channels_last_strides_2d(self, sizes: list[SymNode], strides: list[SymNode]) -> SymNode:
        return self._layout(sizes, strides, [1, 3, 2, 0])

    def is_channels_last_strides_3d(self, sizes: list[SymNode], strides: list[SymNode]) -> SymNode:
        return self._layout(sizes, strides, [1, 4, 3, 2, 0])

    def is_non_overlapping_and_dense(self, sizes: list[SymNode], strides: list[SymNode]) -> SymNode:
        hint_sizes, hint_strides = [s.hint for s in sizes], [s.hint for s in strides]
        order = sorted(range(len(sizes)), key=lambda d: (hint_strides[d], hint_sizes[d]))
        return self._layout(sizes, strides, order)

    def _layout(self, sizes: list[SymNode], strides: list[SymNode], inner_to_outer: list[int]) -> SymNode:
        """Dense in this dim order: each stride equals the product of the inner sizes (size-1
        dims may have any stride)."""
        expected, expected_hint = sympy.Integer(1), 1
        conds, ok = [], True
        for d in inner_to_outer:
            size, stride = sizes[d], strides[d]
            conds.append(sympy.Or(sympy.Eq(size.expr, 1), sympy.Eq(stride.expr, expected)))
            ok = ok and (size.hint == 1 or stride.hint == expected_hint)
            expected, expected_hint = expected * size.expr, expected_hint * size.hint
        return SymNode(sympy.And(*conds), ok, self.shape_env, bool)


def _make_binary(name: str) -> Callable[[SymNode, SymNode], SymNode]:
    build, hint_fn, result_type = BINARY_OPS[name]

    def method(self: SymNode, other: SymNode) -> SymNode:
        pytype = result_type or (float if float in (self.pytype, other.pytype) else self.pytype)
        return SymNode(build(self.expr, other.expr), hint_fn(self.hint, other.hint),
                       self.shape_env, pytype)

    method.__name__ = name
    return method


def _make_unary(name: str) -> Callable[[SymNode], SymNode]:
    build, hint_fn, result_type = UNARY_OPS[name]

    def method(self: SymNode) -> SymNode:
        return SymNode(build(self.expr), hint_fn(self.hint), self.shape_env, result_type or self.pytype)

    method.__name__ = name
    return method


for _name in BINARY_OPS:
    setattr(SymNode, _name, _make_binary(_name))
for _name in UNARY_OPS:
    setattr(SymNode, _name, _make_unary(_name))
