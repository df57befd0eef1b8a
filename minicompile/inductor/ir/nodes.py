"""The loop-level IR's nodes (mirrors torch/_inductor/ir.py: ``Loops``, ``Pointwise``,
``Reduction``, ``Buffer``, ``InputBuffer``, ``ComputedBuffer``).

Two kinds of things:

- **Loops** (``Pointwise``, ``Reduction``, ``Scan``) describe *how to compute* one element:
  ``ranges`` (the loop sizes) and ``inner_fn(index)`` (a closure over ``ops.*`` calls) that
  computes the value at ``index``. A ``Reduction`` adds ``reduction_ranges`` and combines
  ``inner_fn(index, rindex)`` over them with ``reduction_type``; a ``Scan`` keeps every running
  value of that combination (``cumsum``), one output per element.
- **Buffers** are named storage with a ``Layout``. A ``ComputedBuffer`` is a buffer whose
  contents a ``Loops`` computes: it is what the scheduler schedules and codegen turns into a loop
  nest. ``str(buf)`` prints that loop nest.

Reading a buffer is ``ops.load(name, layout_indexer(index))``; reading an unrealized ``Pointwise``
is calling its ``inner_fn`` directly, i.e. *inlining* it: fusion is substitution of a producer's
body into its consumer's index space.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import sympy
import torch

from ..sizevars import Expr, index_var
from ..virtualized import REDUCTION_INIT, SCAN_INIT, ops
from .layout import Layout, dtype_name
from .printer import format_loop_nest
from .read_writes import ReadWrites, extract_read_writes

Index = Sequence[Expr]


class IRNode:
    """Anything that can be read elementwise: a buffer, an unrealized loop body, or a view."""

    def get_size(self) -> list[Expr]:
        raise NotImplementedError

    def get_dtype(self) -> torch.dtype:
        raise NotImplementedError

    def get_device(self) -> torch.device:
        raise NotImplementedError

    def make_loader(self) -> Callable[[Index], Any]:
        """``index -> value``: emits the ``ops`` calls that produce the element at ``index``."""
        raise NotImplementedError

    def get_numel(self) -> Expr:
        return sympy.Mul(*self.get_size())


# ------------------------------------------------------------------------------------------
# Loops: how to compute one element
# ------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Loops(IRNode):
    device: torch.device
    dtype: torch.dtype
    inner_fn: Callable[..., Any]
    ranges: list[Expr]

    def get_size(self) -> list[Expr]:
        return list(self.ranges)

    def get_dtype(self) -> torch.dtype:
        return self.dtype

    def get_device(self) -> torch.device:
        return self.device

    def get_reduction_size(self) -> list[Expr]:
        return []

    def get_pointwise_size(self) -> list[Expr]:
        """The loops outside the reduction (or scan) loop: ``ranges``."""
        return list(self.ranges)

    def kind(self) -> str:
        """How a loop nest prints in a buffer's description: ``Pointwise``, ``Reduction(sum)``."""
        return type(self).__name__

    def reads_destination(self) -> bool:
        """Whether storing reads the element it overwrites (an atomic add does)."""
        return False

    def written_where(self, region: Any) -> str:
        """Which elements of a buffer laid out as ``region`` it writes, in words."""
        return f"elements {region}"

    def writes_anywhere(self) -> bool:
        """Whether a point may write any element (at an index it loads), not its own."""
        return False

    def index_vars(self) -> tuple[list[sympy.Symbol], list[sympy.Symbol]]:
        """Fresh loop variables ``i0..`` for ``ranges`` and ``r0..`` for the reduction ranges."""
        return ([index_var("i", k) for k in range(len(self.ranges))],
                [index_var("r", k) for k in range(len(self.get_reduction_size()))])


@dataclass(eq=False)
class Pointwise(Loops):
    """``out[index] = inner_fn(index)`` for every index in ``ranges``."""

    def make_loader(self) -> Callable[[Index], Any]:
        return self.inner_fn  # reading an unrealized pointwise node inlines its body

    def store_output(self, name: str, indexer: Callable[[Index], Expr], index: Index,
                     rindex: Index = ()) -> Any:
        return ops.store(name, indexer(index), self.inner_fn(index))


@dataclass(eq=False)
class Scatter(Pointwise):
    """``out[output_indexer(index)] = inner_fn(index)`` for every index in ``ranges`` (mirrors
    ``Scatter`` in torch/_inductor/ir.py): the loops run over the *source* (``index_put``'s
    values, ``scatter``'s index tensor) and each point writes the element of the destination its
    index tensor names (``ops.indirect_indexing``), so a point may write anywhere, and several
    points one element. ``scatter_mode="atomic_add"`` adds into the destination instead of
    overwriting it (``accumulate=True``, ``index_add``, ``scatter_add``): duplicates add up, in
    whatever order the points run. The destination is another buffer's storage, filled first
    (``ir/mutation.py``'s ``InPlaceBuffer``); nothing reads a Scatter elementwise."""

    output_indexer: Callable[[Index], Index] = None  # type: ignore[assignment]
    scatter_mode: str | None = None

    def make_loader(self) -> Callable[[Index], Any]:
        raise TypeError("a Scatter writes into a buffer; read that buffer instead")

    def reads_destination(self) -> bool:
        return self.scatter_mode is not None  # an atomic add reads the element it writes

    def writes_anywhere(self) -> bool:
        return True

    def written_where(self, region: Any) -> str:
        mode = f", {self.scatter_mode}" if self.scatter_mode else ""
        return f"at indices it reads (Scatter{mode})"

    def store_output(self, name: str, indexer: Callable[[Index], Expr], index: Index,
                     rindex: Index = ()) -> Any:
        return ops.store(name, indexer(self.output_indexer(index)), self.inner_fn(index),
                         self.scatter_mode)


# What each reduction starts from (printing, executor and codegen share this table).


@dataclass(eq=False)
class Reduction(Loops):
    """``out[index] = reduce(inner_fn(index, rindex) for rindex in reduction_ranges)``.

    ``reduction_type`` is one of ``REDUCTION_INIT``; ``argmax``/``argmin`` return the flat
    position in ``reduction_ranges``. ``welford_reduce`` computes (mean, m2, weight) in one pass
    (Welford's online algorithm); ``output_index`` picks which of those this buffer holds.
    """

    reduction_ranges: list[Expr] = field(default_factory=list)
    reduction_type: str = "sum"
    src_dtype: torch.dtype = torch.float32
    output_index: int | None = None

    def get_reduction_size(self) -> list[Expr]:
        return list(self.reduction_ranges)

    def kind(self) -> str:
        return f"Reduction({self.reduction_type})"

    def init(self) -> Any:
        """The accumulator's start, as the printed loop nest shows it."""
        return REDUCTION_INIT[self.reduction_type]

    def make_loader(self) -> Callable[[Index], Any]:
        raise TypeError("a Reduction must be realized into a ComputedBuffer before it is read")

    def store_output(self, name: str, indexer: Callable[[Index], Expr], index: Index,
                     rindex: Index = ()) -> Any:
        value = ops.reduction(self.dtype, self.src_dtype, self.reduction_type,
                              self.inner_fn(index, rindex))
        if self.output_index is not None:  # one output of a multi-output (Welford) reduction
            value = value[self.output_index]
        return ops.store(name, indexer(index), value)


@dataclass(eq=False)
class Scan(Loops):
    """``out[reindex(index, (k,))] = combine(inner_fn(index, (j,)) for j in 0..k)`` for every
    ``k`` in ``scan_ranges`` (mirrors ``Scan`` in torch/_inductor/ir.py): an inclusive prefix
    scan along one dim. ``ranges`` are the other dims (the rows, as a reduction's kept dims) and
    ``scan_ranges`` the scanned dim (a reduction's loop: a kernel walks it in order, carrying the
    running value); ``reindex`` puts the scanned position back at its place in the output's
    index, ``size`` is the output's. ``scan_type`` names the combine (``SCAN_INIT``): ``sum``
    (cumsum), ``prod`` (cumprod), ``logaddexp`` (logcumsumexp)."""

    size: list[Expr] = field(default_factory=list)
    scan_ranges: list[Expr] = field(default_factory=list)
    scan_type: str = "sum"
    reindex: Callable[[Index, Index], list[Expr]] = None  # type: ignore[assignment]

    def get_size(self) -> list[Expr]:
        return list(self.size)

    def get_reduction_size(self) -> list[Expr]:
        return list(self.scan_ranges)

    def kind(self) -> str:
        return f"Scan({self.scan_type})"

    def init(self) -> Any:
        return SCAN_INIT[self.scan_type]

    def make_loader(self) -> Callable[[Index], Any]:
        raise TypeError("a Scan must be realized into a ComputedBuffer before it is read")

    def store_output(self, name: str, indexer: Callable[[Index], Expr], index: Index,
                     rindex: Index = ()) -> Any:
        value = ops.scan(self.dtype, self.scan_type, self.inner_fn(index, rindex))
        return ops.store(name, indexer(self.reindex(index, rindex)), value)


# ------------------------------------------------------------------------------------------
# Buffers: named storage
# ------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Buffer(IRNode):
    name: str
    layout: Layout

    def get_name(self) -> str:
        return self.name

    def get_size(self) -> list[Expr]:
        return list(self.layout.size)

    def get_stride(self) -> list[Expr]:
        return list(self.layout.stride)

    def get_dtype(self) -> torch.dtype:
        return self.layout.dtype

    def get_device(self) -> torch.device:
        return self.layout.device

    def make_loader(self) -> Callable[[Index], Any]:
        indexer = self.layout.make_indexer()
        return lambda index: ops.load(self.name, indexer(index))

    def get_read_writes(self):
        """Reads and writes as (buffer name, SymPy index) pairs; see ``read_writes``."""
        return ReadWrites()

    def get_mutation_names(self) -> list[str]:
        """Buffers whose storage this one writes into instead of owning its own (an input
        updated in place: ``ir/mutation.py``); none for an ordinary buffer."""
        return []

    def __str__(self) -> str:
        return f"{self.name}: {type(self).__name__} {self.layout}"


class InputBuffer(Buffer):
    """A graph input: its storage comes from the caller."""


@dataclass(eq=False)
class ComputedBuffer(Buffer):
    """A buffer filled by a loop nest: ``data`` (a ``Pointwise``, ``Reduction`` or ``Scan``)."""

    data: Loops = None  # type: ignore[assignment]

    def is_reduction(self) -> bool:
        """Does it loop over rows (a reduction, or a scan: a kernel tile of ``(n, r)``)?"""
        return isinstance(self.data, (Reduction, Scan))

    def is_scan(self) -> bool:
        """A scan: looped like a reduction, but with a value per element, not per row."""
        return isinstance(self.data, Scan)

    def get_ranges(self) -> tuple[list[Expr], list[Expr]]:
        """(pointwise loop sizes, reduction loop sizes)."""
        return self.data.get_pointwise_size(), self.data.get_reduction_size()

    def index_vars(self) -> tuple[list[sympy.Symbol], list[sympy.Symbol]]:
        return self.data.index_vars()

    def var_ranges(self) -> dict[sympy.Symbol, Expr]:
        (iv, rv), (sizes, rsizes) = self.index_vars(), self.get_ranges()
        return dict(zip(iv + rv, sizes + rsizes))

    def store_output(self, index: Index, rindex: Index = ()) -> Any:
        """Run the body once at symbolic ``index``/``rindex`` under the installed ``ops``."""
        return self.data.store_output(self.name, self.layout.make_indexer(), index, rindex)

    def get_read_writes(self) -> ReadWrites:
        """Extracted once per body (the scheduler, inlining and codegen all ask, and a body
        with producers substituted into it is not small): cached against the name, body and
        layout it was extracted from, a copy handed out."""
        cached = self.__dict__.get("_read_writes")
        if cached is None or cached[:3] != (self.name, self.data, self.layout):
            # (data and layout compare by identity: a Loops is eq=False, a Layout is not, but a
            # layout equal to the old one gives the same reads)
            cached = (self.name, self.data, self.layout, extract_read_writes(self))
            self.__dict__["_read_writes"] = cached
        rw = cached[3]
        return ReadWrites(list(rw.reads), list(rw.writes), dict(rw.var_ranges),
                          symbols=rw.symbols, num_ops=rw.num_ops)

    def __str__(self) -> str:
        return format_loop_nest(self)

    def describe(self) -> str:
        return f"{self.name}: {dtype_name(self.get_dtype())}{self.get_size()} = {self.data.kind()}"
