"""AOT autograd: trace forward and backward to ATen ahead of time (mirrors torch/_functorch/).

    from minicompile.aot_autograd import aot_module_simplified, trace_graph, default_partition
    tracer.py          DispatchTracer: a TorchDispatchMode that records ATen ops into an FX graph
    functionalize.py   remove in-place ops and input mutations
    joint.py           the joint graph (primals, tangents) -> (outputs, grads)
    partitioners.py    default and min-cut partitions into forward and backward graphs
    runtime_wrappers.py  the torch.autograd.Function that runs them
    aot_autograd.py    aot_module_simplified / aot_function

The aot_eager backend (AOT autograd + decompositions) is composed in backends/aot_eager.py;
comparisons with real AOTAutograd are course tooling (course/compare.py).
"""

from .aot_autograd import aot_function, aot_module_simplified, trace_module
from .functionalize import functionalize
from .joint import GraphSignature, trace_graph
from .partitioners import (Partition, default_partition, default_saved_values,
                           min_cut_rematerialization_partition, min_cut_saved_values,
                           partition_with_saved)
from .tracer import DispatchTracer, Unsupported

__all__ = ["aot_function", "aot_module_simplified", "trace_module", "functionalize", "GraphSignature",
           "trace_graph", "Partition", "default_partition", "default_saved_values",
           "min_cut_rematerialization_partition", "min_cut_saved_values",
           "partition_with_saved", "DispatchTracer", "Unsupported"]
