"""Which memory a node reads and writes (mirrors the extraction half of
torch/_inductor/dependencies.py: ``MemoryDep``, ``StarDep``, ``ReadWrites``).

The body is run once with symbolic loop variables under ``RecordReadWrites``, an ``ops``
handler that ignores arithmetic and writes down every ``ops.load``/``ops.store`` as a
``MemoryDep(buffer name, flat SymPy index, loop ranges)``. Two nodes touch the same elements
exactly when their index formulas agree over the same ranges: that is what lets the scheduler
decide fusion and count bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy

from ..sizevars import Expr, simplify_index
from ..virtualized import set_ops_handler


@dataclass(frozen=True)
class MemoryDep:
    """Buffer ``name`` accessed at flat ``index``, for every value of the loop variables in
    ``var_ranges`` (a tuple of (symbol, size) pairs: hashable, in loop order)."""

    name: str
    index: Expr
    var_ranges: tuple[tuple[sympy.Symbol, Expr], ...]

    def ranges(self) -> dict[sympy.Symbol, Expr]:
        return dict(self.var_ranges)

    def num_elements(self) -> Expr:
        """Distinct elements touched: the product of the ranges of the loop variables the index
        uses (exact for the affine, non-overlapping indices views produce; broadcast dims do not
        appear in the index, so they do not count)."""
        used = self.index.free_symbols
        return sympy.Mul(*[size for v, size in self.var_ranges if v in used])

    def is_indirect(self) -> bool:
        """The index contains a value loaded at run time (gather/embedding)."""
        return any(s.name.startswith("indirect") for s in self.index.free_symbols)

    def __str__(self) -> str:
        return f"{self.name}[{self.index}]"


@dataclass(frozen=True)
class StarDep:
    """The whole of buffer ``name`` (``numel`` elements), e.g. the input of an extern kernel."""

    name: str
    numel: Expr

    def num_elements(self) -> Expr:
        return self.numel

    def __str__(self) -> str:
        return f"{self.name}[*]"


@dataclass
class ReadWrites:
    reads: list[MemoryDep | StarDep] = field(default_factory=list)
    writes: list[MemoryDep | StarDep] = field(default_factory=list)
    var_ranges: dict[sympy.Symbol, Expr] = field(default_factory=dict)

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


class RecordReadWrites:
    """``ops`` handler recording loads and stores; every other op returns a dummy."""

    def __init__(self, var_ranges: dict[sympy.Symbol, Expr]):
        self.var_ranges = var_ranges
        self.reads: list[MemoryDep] = []
        self.writes: list[MemoryDep] = []
        self._indirect = 0

    def _dep(self, name: str, index: Expr) -> MemoryDep:
        index = simplify_index(index, self.var_ranges)
        return MemoryDep(name, index, tuple(self.var_ranges.items()))

    def load(self, name: str, index: Expr) -> _Dummy:
        dep = self._dep(name, index)
        if dep not in self.reads:
            self.reads.append(dep)
        return _Dummy()

    def store(self, name: str, index: Expr, value: Any) -> None:
        self.writes.append(self._dep(name, index))

    def indirect_indexing(self, value: Any, size: Expr) -> sympy.Symbol:
        self._indirect += 1
        return sympy.Symbol(f"indirect{self._indirect - 1}", integer=True, nonnegative=True)

    def masked(self, mask: Any, body, other: Any) -> _Dummy:
        body()
        return _Dummy()

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: _Dummy()


def extract_read_writes(node) -> ReadWrites:
    """Run ``node.store_output`` symbolically and collect its memory accesses."""
    index, rindex = node.index_vars()
    var_ranges = node.var_ranges()
    handler = RecordReadWrites(var_ranges)
    with set_ops_handler(handler):
        node.store_output(index, rindex)
    return ReadWrites(handler.reads, handler.writes, var_ranges)
