"""Which memory a node reads and writes (mirrors the extraction half of
torch/_inductor/dependencies.py: ``MemoryDep``, ``StarDep``, ``ReadWrites``).

The body is run once with symbolic loop variables under ``RecordReadWrites``, an ``ops``
handler that ignores arithmetic and writes down every ``ops.load``/``ops.store`` as a
``MemoryDep(buffer name, flat SymPy index, loop ranges)``. Two nodes touch the same elements
exactly when their index formulas agree over the same ranges: that is what lets the scheduler
decide fusion and count bytes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import sympy

from ..dependencies import closed_form, footprint
from ..sizevars import Expr, simplify_index
from ..virtualized import set_ops_handler


@dataclass(frozen=True)
class MemoryDep:
    """Buffer ``name`` accessed at flat ``index``, for every value of the loop variables in
    ``var_ranges`` (a tuple of (symbol, size) pairs: hashable, in loop order)."""

    name: str
    index: Expr
    var_ranges: tuple[tuple[sympy.Symbol, Expr], ...]
    # (var, lo, hi): the access happens only for lo <= var < hi (a load under ``ops.masked``,
    # e.g. one input of a ``cat`` or the inside of a pad); () = at every loop point
    bounds: tuple[tuple[sympy.Symbol, Expr, Expr], ...] = ()
    whole_view = False  # the points of ``index`` over the ranges (``StarDep``: all elements)

    def ranges(self) -> dict[sympy.Symbol, Expr]:
        return dict(self.var_ranges)

    def num_elements(self) -> Expr:
        """Distinct elements touched (exact for concrete sizes and for affine injective indices;
        see ``dependencies.footprint``, which also unions several accesses to one buffer)."""
        return footprint([self], closed_form(self))

    def is_indirect(self) -> bool:
        """The index contains a value loaded at run time (gather/embedding)."""
        return any(s.name.startswith("indirect") for s in self.index.free_symbols)

    def restricted(self) -> "MemoryDep":
        """The same accesses with ``bounds`` folded into the loops: ``var`` runs over
        ``range(hi - lo)`` and the index reads ``var + lo`` (cat's ``x[i0 - 3]`` for
        ``3 <= i0 < 6`` becomes ``x[i0]`` for ``i0 < 3``)."""
        if not self.bounds:
            return self
        ranges, index = dict(self.var_ranges), self.index
        for v, lo, hi in self.bounds:
            index = index.subs(v, v + lo)
            ranges[v] = sympy.Max(hi - lo, 0)
        return MemoryDep(self.name, simplify_index(index, ranges), tuple(ranges.items()))

    def __str__(self) -> str:
        return f"{self.name}[{self.index}]"


@dataclass(frozen=True)
class StarDep:
    """All ``numel`` elements a library call (extern kernel) reads or writes of buffer
    ``name``: the whole buffer, or the elements of a strided view of it."""

    name: str
    numel: Expr
    whole_view = True  # the elements of a buffer (or of a view of it), at no index in particular

    def num_elements(self) -> Expr:
        return self.numel

    def __str__(self) -> str:
        return f"{self.name}[*]"


@dataclass
class ReadWrites:
    reads: list[MemoryDep | StarDep] = field(default_factory=list)
    writes: list[MemoryDep | StarDep] = field(default_factory=list)
    var_ranges: dict[sympy.Symbol, Expr] = field(default_factory=dict)
    # symbols the body computes with, not as an index (``x * n`` for an int input n is
    # ``index_expr(s0)``): a kernel needs them as arguments like the sizes of its loops
    symbols: frozenset[sympy.Symbol] = frozenset()
    # ops the body evaluates (loads included, a substituted producer's counted once): the size
    # of the loop body, which bounds how far inlining may grow it (``inlining.py``)
    num_ops: int = 0

    def read_names(self) -> set[str]:
        return {d.name for d in self.reads}

    def write_names(self) -> set[str]:
        return {d.name for d in self.writes}

    def __str__(self) -> str:
        return (f"reads: {', '.join(map(str, self.reads))}\n"
                f"writes: {', '.join(map(str, self.writes))}")


class _Dummy:
    """A value that supports indexing (Welford tuples) and nothing else."""

    def __getitem__(self, k: int) -> "_Dummy":
        return self


@dataclass
class _Index:
    """A value the handler knows as a SymPy formula of the loop variables (``index_expr``)."""

    expr: Expr


@dataclass
class _Cond:
    """A conjunction of SymPy relations on loop variables (a mask built from indices)."""

    relations: list


def _bound(rel, var_ranges) -> tuple[sympy.Symbol, Expr | None, Expr | None] | None:
    """``(var, lo, hi)`` meaning ``lo <= var < hi`` for a relation like ``i0 - 3 >= 0``, or
    None when it is not a bound on one loop variable with unit coefficient."""
    if rel in (sympy.true, sympy.false) or not isinstance(rel, sympy.core.relational.Relational):
        return None
    e = sympy.expand(rel.lhs - rel.rhs)
    loops = [v for v in e.free_symbols if v in var_ranges]
    if len(loops) != 1:
        return None
    v = loops[0]
    c, rest = e.coeff(v), sympy.expand(e - e.coeff(v) * v)
    if c not in (1, -1) or v in rest.free_symbols:
        return None
    # e >= 0 / e > 0 / e <= 0 / e < 0 with e = c*v + rest
    kind = {sympy.GreaterThan: ">=", sympy.StrictGreaterThan: ">", sympy.LessThan: "<=",
            sympy.StrictLessThan: "<"}.get(type(rel))
    if kind is None:
        return None
    if c == -1:  # -v + rest OP 0  <=>  v - rest FLIP(OP) 0
        kind, rest = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}[kind], -rest
    return {">=": (v, -rest, None), ">": (v, -rest + 1, None),
            "<": (v, None, -rest), "<=": (v, None, -rest + 1)}[kind]


def _within(rel, lo: dict, hi: dict):
    """``rel`` simplified knowing ``lo[v] <= v < hi[v]``: under ``pad``'s mask ``1 <= i1 < 9``,
    ``cat``'s test ``i0 + (i1 - 1)//8 >= 4`` is ``i0 >= 4``, a bound on one variable."""
    if not isinstance(rel, sympy.core.relational.Relational):
        return rel
    shift = {v: sympy.Dummy(v.name, integer=True, nonnegative=True) for v in lo}
    ranges = {shift[v]: hi[v] - lo[v] for v in lo}
    if not all(sympy.sympify(r).is_number for r in ranges.values()):
        return rel  # symbolic bounds: keep the relation as it is
    e = simplify_index((rel.lhs - rel.rhs).subs({v: shift[v] + lo[v] for v in lo}), ranges)
    e = e.subs({shift[v]: v - lo[v] for v in lo})
    return type(rel)(sympy.expand(e), 0)


@functools.lru_cache(maxsize=1 << 12)
def _solve_bounds(relations: tuple, ranges: tuple) -> tuple[tuple[sympy.Symbol, Expr, Expr], ...]:
    """``(var, lo, hi)`` for each loop variable the ``relations`` (a conjunction) bound: the same
    masks recur in every body a ``cat`` or ``pad`` is substituted into, so the answers are kept."""
    var_ranges = dict(ranges)
    lo = {v: sympy.Integer(0) for v in var_ranges}
    hi = dict(var_ranges)
    pending = list(relations)
    while pending:  # a bound found can simplify another relation into a bound: cat in pad
        left = []
        for rel in pending:
            b = _bound(_within(rel, lo, hi), var_ranges)
            if b is None:
                left.append(rel)
                continue
            v, low, high = b
            lo[v] = lo[v] if low is None else sympy.Max(lo[v], low)
            hi[v] = hi[v] if high is None else sympy.Min(hi[v], high)
        if len(left) == len(pending):
            break
        pending = left
    return tuple((v, lo[v], hi[v]) for v in var_ranges
                 if lo[v] != 0 or hi[v] != var_ranges[v])


class RecordReadWrites:
    """``ops`` handler recording loads and stores; index arithmetic and comparisons are kept as
    SymPy (so a mask built from indices bounds the loads under it), any other op returns a
    dummy."""

    def __init__(self, var_ranges: dict[sympy.Symbol, Expr]):
        self.var_ranges = var_ranges
        self.reads: list[MemoryDep] = []
        self.writes: list[MemoryDep] = []
        self._indirect = 0
        self._masks: list[_Cond | None] = []
        self.symbols: set[sympy.Symbol] = set()  # in index_expr, constant, indirect sizes
        self._masks_bounds: tuple | None = None  # _bounds() of the masks now entered
        self.num_ops = 0

    def _bounds(self) -> tuple[tuple[sympy.Symbol, Expr, Expr], ...]:
        """The loop bounds the masks entered put on a load (worked out once per mask entered,
        not per load under it: a substituted ``cat`` holds hundreds)."""
        if self._masks_bounds is None:
            self._masks_bounds = self._solve_bounds()
        return self._masks_bounds

    def _solve_bounds(self) -> tuple[tuple[sympy.Symbol, Expr, Expr], ...]:
        if not self._masks or any(m is None for m in self._masks):
            return ()  # no mask, or one computed from data: count every loop point
        return _solve_bounds(tuple(r for m in self._masks for r in m.relations),
                             tuple(self.var_ranges.items()))

    def _dep(self, name: str, index: Expr, bounds=()) -> MemoryDep:
        index = simplify_index(index, self.var_ranges)
        return MemoryDep(name, index, tuple(self.var_ranges.items()), bounds)

    def load(self, name: str, index: Expr) -> _Dummy:
        self.num_ops += 1
        dep = self._dep(name, index, self._bounds())
        if dep not in self.reads:
            self.reads.append(dep)
        return _Dummy()

    def store(self, name: str, index: Expr, value: Any, mode: str | None = None) -> None:
        self.writes.append(self._dep(name, index))

    def indirect_indexing(self, value: Any, size: Expr, check: Any = None) -> sympy.Symbol:
        self.symbols |= sympy.sympify(size).free_symbols
        self._indirect += 1
        return sympy.Symbol(f"indirect{self._indirect - 1}", integer=True, nonnegative=True)

    def index_expr(self, expr: Expr, dtype) -> _Index:
        self.symbols |= sympy.sympify(expr).free_symbols
        return _Index(sympy.sympify(expr))

    def constant(self, value: Any, dtype) -> _Index | _Dummy:
        if isinstance(value, sympy.Expr):
            self.symbols |= value.free_symbols
        if isinstance(value, sympy.Expr) and value.is_integer:  # 3, or a size such as s0
            return _Index(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return _Index(sympy.Integer(value))
        return _Dummy()

    def to_dtype(self, x: Any, dtype, *args) -> Any:
        return x if isinstance(x, _Index) and not dtype.is_floating_point else _Dummy()

    def _compare(op):
        def compare(self, a, b):
            if isinstance(a, _Index) and isinstance(b, _Index):
                return _Cond([op(a.expr, b.expr)])
            return _Dummy()
        return compare

    ge, gt = _compare(sympy.Ge), _compare(sympy.Gt)
    le, lt = _compare(sympy.Le), _compare(sympy.Lt)

    def logical_and(self, a, b):
        if isinstance(a, _Cond) and isinstance(b, _Cond):
            return _Cond(a.relations + b.relations)
        return _Dummy()

    def masked(self, mask: Any, body, other: Any) -> _Dummy:
        self._masks.append(mask if isinstance(mask, _Cond) else None)
        outer, self._masks_bounds = self._masks_bounds, None
        try:
            body()
        finally:
            self._masks.pop()
            self._masks_bounds = outer
        return _Dummy()

    def __getattr__(self, name: str):
        def op(*args, **kwargs) -> _Dummy:
            self.num_ops += 1
            return _Dummy()
        return op


def extract_read_writes(node) -> ReadWrites:
    """Run ``node.store_output`` symbolically and collect its memory accesses."""
    index, rindex = node.index_vars()
    var_ranges = node.var_ranges()
    handler = RecordReadWrites(var_ranges)
    with set_ops_handler(handler):
        node.store_output(index, rindex)
    return ReadWrites(handler.reads, handler.writes, var_ranges,
                      symbols=frozenset(handler.symbols - set(var_ranges)),
                      num_ops=handler.num_ops)
