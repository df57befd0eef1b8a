"""Evaluating SymPy index expressions on ints and on int tensors (what ``sympy.lambdify`` would
do, restricted to the index vocabulary: FloorDiv, ModularIndexing, Min/Max...). The reference
executor and backend gather with it, and ``dependencies`` enumerates the addresses an access
touches with it. Real Inductor only prints index expressions into generated code
(torch/_inductor/codegen/common.py's printers); running them directly is this project's oracle.
"""

from __future__ import annotations

import functools
import math
import operator
from typing import Any, Mapping

import sympy
import torch

from .sizevars import FloorDiv, ModularIndexing, integer_fraction


def _max(a, b):
    return torch.maximum(torch.as_tensor(a), torch.as_tensor(b)) if isinstance(
        a, torch.Tensor) or isinstance(b, torch.Tensor) else max(a, b)


def _min(a, b):
    return torch.minimum(torch.as_tensor(a), torch.as_tensor(b)) if isinstance(
        a, torch.Tensor) or isinstance(b, torch.Tensor) else min(a, b)


# SymPy node type -> how to compute it on ints or int tensors
INDEX_FUNCS = [
    (sympy.Add, lambda *a: functools.reduce(operator.add, a)),
    (sympy.Mul, lambda *a: functools.reduce(operator.mul, a)),
    (sympy.Pow, lambda a, b: a ** b),
    (FloorDiv, lambda a, b: a // b),
    (ModularIndexing, lambda a, b, m: (a // b) % m),
    (sympy.Mod, lambda a, b: a % b),
    (sympy.Max, lambda *a: functools.reduce(_max, a)),
    (sympy.Min, lambda *a: functools.reduce(_min, a)),
]


def eval_index(expr: Any, env: Mapping[sympy.Symbol, Any]) -> Any:
    """Evaluate a SymPy index expression with symbols bound to ints or int tensors."""
    if not isinstance(expr, sympy.Basic):
        return expr
    if expr.is_Integer:
        return int(expr)
    if expr.is_Number:
        return float(expr)
    if expr.is_Symbol:
        return env[expr]
    if isinstance(expr, (sympy.floor, sympy.ceiling)):  # floor(s0/3): exact integer division
        if integer_fraction(expr.args[0]) is None:  # int(1.7 * s2): a float's floor, an int
            x, floor = eval_index(expr.args[0], env), isinstance(expr, sympy.floor)
            if isinstance(x, torch.Tensor):
                return (torch.floor(x) if floor else torch.ceil(x)).long()
            return math.floor(x) if floor else math.ceil(x)
        num, den = expr.args[0].as_numer_denom()
        num, den = eval_index(num, env), eval_index(den, env)
        return num // den if isinstance(expr, sympy.floor) else -((-num) // den)
    for kind, fn in INDEX_FUNCS:
        if isinstance(expr, kind):
            return fn(*[eval_index(a, env) for a in expr.args])
    raise NotImplementedError(f"cannot evaluate {type(expr).__name__} in index {expr}")


def evaluate_size(expr: Any, sizes: Mapping[sympy.Symbol, int]) -> int:
    return int(eval_index(sympy.sympify(expr), sizes))


def index_grid(sizes_: list[int], device: torch.device | str = "cpu") -> list[torch.Tensor]:
    """One int64 tensor per dim, shaped to broadcast over the grid (a lazy meshgrid)."""
    n = len(sizes_)
    return [torch.arange(s, device=device).view([-1 if d == k else 1 for d in range(n)])
            for k, s in enumerate(sizes_)]
