"""Buffers that write into another buffer's storage: a graph input updated in place (mirrors
``MutationLayoutSHOULDREMOVE`` and ``MutationOutput`` in torch/_inductor/ir.py).

A functionalized graph returns the new value of every input it mutates, and the runtime wrapper
copies it back into the input. When the new value is the input with some elements replaced
(``x[:, 0] = y``, ``x.index_put_(...)``) and nothing needs the old value any more, the compiled
code can write just those elements into the input (``fx_passes/reinplace.py`` decides). The new
value is then a buffer with a name of its own whose storage *is* the tensor it updates:

    buf1: float32[10, 10] = InPlaceBuffer into primals_1, elements float32[10] stride=[10]
      for i0 in range(10):
        tmp0 = load(primals_2, i0)
        tmp1 = sin(tmp0)
        store(buf1, 10*i0, tmp1)          # the index of x[:, 0] in x's storage

Readers of the new value load ``buf1`` (at the whole tensor's indices), so the scheduler orders
them after the write by name, as for any buffer. ``get_mutation_names()`` names the buffer whose
storage is written (the input, or the previous in-place version of it in a chain of writes): the
scheduler orders the write after that buffer's producer, never lets it stay inside a kernel, and
the wrapper binds ``buf1 = primals_1`` instead of allocating.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..sizevars import Expr
from .extern import ExternKernel, distinct_elements
from .layout import Layout, dtype_name
from .nodes import ComputedBuffer, Index
from .read_writes import MemoryDep, ReadWrites, StarDep


@dataclass(eq=False)
class InPlaceBuffer(ComputedBuffer):
    """The new value of ``mutated``: its storage, with the elements of ``region`` (a strided
    window of that storage) stored by ``data``. ``layout`` is the whole tensor's, as readers see
    it; the loops run over ``region`` only."""

    mutated: str = ""
    region: Layout = None  # type: ignore[assignment]

    def get_mutation_names(self) -> list[str]:
        return [self.mutated]

    def store_output(self, index: Index, rindex: Index = ()):
        return self.data.store_output(self.name, self.region.make_indexer(), index, rindex)

    def get_read_writes(self) -> ReadWrites:
        """An atomic add (``ir.Scatter``) reads each element it writes, in ``mutated``."""
        rw = super().get_read_writes()
        if self.data.reads_destination():
            rw.reads += [MemoryDep(self.mutated, w.index, w.var_ranges) for w in rw.writes]
        return rw

    def describe(self) -> str:
        return (f"{self.name}: {dtype_name(self.get_dtype())}{self.get_size()} = InPlaceBuffer "
                f"into {self.mutated}, {self.data.written_where(self.region)}")


@dataclass(eq=False)
class InPlaceFallback(ExternKernel):
    """An in-place ATen op on ``args[0]`` (``index_put_``, ``scatter_``): the new value of
    ``mutated``, in its storage. It writes ``written`` elements, and reads them first when it
    combines with the old values (``accumulate=True``, ``scatter_add_``); every other tensor
    argument is read in full (``src_reads``: how much of each, by position, where less)."""

    mutated: str = ""
    written: Expr = 0
    reads_written: bool = False
    src_reads: dict = None  # type: ignore[assignment]  # arg position -> elements read

    def get_mutation_names(self) -> list[str]:
        return [self.mutated]

    def get_read_writes(self) -> ReadWrites:
        reads = [StarDep(self.mutated, self.written)] if self.reads_written else []
        for pos, a in enumerate(self.args[1:], start=1):
            for leaf in a if isinstance(a, (list, tuple)) else [a]:
                if hasattr(leaf, "get_name"):
                    reads.append(StarDep(leaf.get_name(), (self.src_reads or {}).get(pos)
                                         or distinct_elements(leaf)))
        return ReadWrites(reads, [StarDep(self.name, self.written)], {})

    def __str__(self) -> str:
        return f"{super().__str__()}\n  # writes {self.written} elements of {self.mutated} in place"


def storage_owner(buffers: dict, name: str) -> str:
    """The buffer whose storage ``name`` lives in: itself, or for a value written in place, the
    input it was written into (following a chain of writes)."""
    while buffers[name].get_mutation_names():
        name = buffers[name].get_mutation_names()[0]
    return name
