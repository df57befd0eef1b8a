"""What the scheduler asks of memory accesses (mirrors the analysis half of
torch/_inductor/dependencies.py; the IR's ``ir/read_writes.py`` extracts the ``MemoryDep`` s).

Two questions, both answered from ``MemoryDep(name, index, var_ranges)``:

- **How many elements does a kernel touch in buffer B?** (``footprint``) The distinct elements
  of every access to B, never more than B holds: ``x + x.t()`` reads 100 elements of a 10x10
  ``x``, not 200, because one kernel loads each element once and keeps it in registers/cache.
- **Does a consumer read a buffer at the rows the producer writes them?** (``rows_line_up``)
  Inside one kernel a reduction's result for row ``k`` exists only while row ``k`` is being
  processed; a consumer in the same kernel may read it only from row ``k``. We check this by
  evaluating both index formulas on every loop point (vectorised with torch), which needs
  concrete sizes; with symbolic sizes the scheduler does not fuse such pairs.
"""

from __future__ import annotations

from typing import Iterable

import sympy
import torch

from .ir import MemoryDep, StarDep
from .sizevars import FloorDiv, ModularIndexing

Dep = MemoryDep | StarDep


def footprint(deps: Iterable[Dep], numel: sympy.Expr) -> sympy.Expr:
    """Elements of one buffer (holding ``numel``) touched by ``deps``: the sum over distinct
    accesses, capped at the buffer size (the same element loaded twice is loaded once)."""
    distinct = set(deps)
    if any(isinstance(d, StarDep) for d in distinct):
        return numel  # a library call reads (or writes) the whole buffer
    total = sympy.Add(*[d.num_elements() for d in distinct]) if distinct else sympy.Integer(0)
    if total.is_number and numel.is_number:
        return sympy.Integer(min(int(total), int(numel)))
    return sympy.Min(total, numel) if len(distinct) > 1 else total


def is_concrete(*exprs: sympy.Expr) -> bool:
    return all(sympy.sympify(e).is_number for e in exprs)


# --- evaluating an index formula on every loop point ---------------------------------------------

def _evaluate(expr: sympy.Expr, env: dict[sympy.Symbol, torch.Tensor]) -> torch.Tensor | int:
    """``expr`` with each loop variable bound to a tensor of its values (int64 arithmetic)."""
    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return env[expr]
    args = [_evaluate(a, env) for a in expr.args]
    if expr.is_Add:
        return sum(args[1:], args[0])
    if expr.is_Mul:
        out = args[0]
        for a in args[1:]:
            out = out * a
        return out
    if isinstance(expr, FloorDiv):
        return torch.div(torch.as_tensor(args[0]), args[1], rounding_mode="floor")
    if isinstance(expr, ModularIndexing):
        base, div, mod = args
        return torch.remainder(torch.div(torch.as_tensor(base), div, rounding_mode="floor"), mod)
    if expr.is_Pow and expr.exp.is_Integer and expr.exp > 0:
        return args[0] ** int(expr.exp)
    raise NotImplementedError(f"cannot evaluate index term {expr}")


def addresses_and_rows(dep: MemoryDep, n_rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """For every point of ``dep``'s loops (row-major): the element it touches and the kernel row
    it belongs to, when the loops are split into ``n_rows`` equal rows."""
    sizes = [int(s) for _, s in dep.var_ranges]
    total = 1
    for s in sizes:
        total *= s
    point = torch.arange(total)
    env, inner = {}, total
    for (var, _), size in zip(dep.var_ranges, sizes):
        inner //= size
        env[var] = torch.div(point, inner, rounding_mode="floor") % size
    addr = torch.as_tensor(_evaluate(dep.index, env)).expand(total)
    return addr, torch.div(point, total // n_rows, rounding_mode="floor")


def rows_line_up(write: MemoryDep, read: MemoryDep, n_rows: int) -> bool:
    """True when every element ``read`` loads was stored by ``write`` in the same kernel row."""
    sizes = [s for _, s in write.var_ranges] + [s for _, s in read.var_ranges]
    loop_vars = set(dict(write.var_ranges)) | set(dict(read.var_ranges))
    if not is_concrete(*sizes) or not (write.index.free_symbols | read.index.free_symbols) <= loop_vars:
        return False  # symbolic sizes, or an index loaded at run time: cannot prove it
    w_addr, w_row = addresses_and_rows(write, n_rows)
    r_addr, r_row = addresses_and_rows(read, n_rows)
    if r_addr.numel() == 0:
        return True
    row_of = torch.full((int(max(w_addr.max(), r_addr.max())) + 1,), -1, dtype=torch.int64)
    row_of[w_addr] = w_row
    return bool((row_of[r_addr] == r_row).all())
