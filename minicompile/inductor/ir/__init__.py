"""The loop-level IR (mini version of torch/_inductor/ir.py), split by idea:

- ``layout``      ``Layout``: size, stride, offset as SymPy; ``make_indexer`` gives flat indices;
                  fill orders (which dim is innermost in memory: row-major, channels-last)
- ``nodes``       ``Pointwise``/``Reduction``/``Scan`` (how to compute an element), ``Scatter``
                  (where to write one, at indices read from a tensor) and ``Buffer``,
                  ``InputBuffer``, ``ComputedBuffer`` (named storage; prints as a loop nest)
- ``views``       ``View`` (index remapping), ``ReinterpretView`` (strided view of a buffer)
- ``extern``      ``ExternKernel``/``FallbackKernel``/``MultiOutput``: ATen library calls
- ``mutation``    ``InPlaceBuffer``/``InPlaceFallback``: a graph input's new value written into
                  the input's own storage
- ``read_writes`` ``MemoryDep``/``StarDep``/``ReadWrites``: what a node reads and writes
- ``inline``      ``inline_producers``: substitute a producer's body into its consumer
- ``printer``     ``PrintHandler``, ``format_loop_nest``
"""

from .extern import ExternKernel, FallbackKernel, MultiOutput, layout_of
from .inline import InlineLoads, inline_producers, substitutions, unflatten_index
from .layout import Layout, contiguous_strides, dtype_name
from .mutation import InPlaceBuffer, InPlaceFallback, storage_owner
from .nodes import (REDUCTION_INIT, Buffer, ComputedBuffer, InputBuffer, IRNode, Loops, Pointwise,
                    Reduction, Scan, Scatter)
from .printer import PrintHandler, format_body, format_loop_nest
from .read_writes import MemoryDep, ReadWrites, RecordReadWrites, StarDep, extract_read_writes
from .views import ReinterpretView, View, as_strided_layout, broadcast_reader

__all__ = [
    "Layout", "contiguous_strides", "dtype_name", "IRNode", "Loops", "Pointwise", "Reduction",
    "Scan", "Scatter", "REDUCTION_INIT", "Buffer", "InputBuffer", "ComputedBuffer", "View",
    "ReinterpretView",
    "as_strided_layout", "broadcast_reader", "ExternKernel", "FallbackKernel", "MultiOutput",
    "layout_of", "InPlaceBuffer", "InPlaceFallback", "storage_owner",
    "MemoryDep", "StarDep", "ReadWrites", "RecordReadWrites", "extract_read_writes",
    "inline_producers", "substitutions", "unflatten_index", "InlineLoads", "PrintHandler",
    "format_body", "format_loop_nest",
]
