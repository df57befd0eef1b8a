"""The learner's pieces and where each plugs into the compiler (no counterpart in torch: a
course tool). :data:`PLUGS` lists them: each :class:`Plug` names the exercise, the learner's
function and the stage, and its installer swaps the function into that stage for the duration
of a ``with`` block, counting its calls (:class:`Usage`), and restores the compiler's own piece
afterwards (:func:`swapped`). ``pipeline.py`` runs the compiler with them."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, ContextManager, Iterator

import sympy
import torch

from ..aot_autograd.partitioners import PARTITIONERS, partition_with_saved
from ..cudagraphs import cudagraph_trees
from ..decompositions import decomposition_table
from ..dynamo import graph_break, handlers_data, handlers_flow  # noqa: F401 (the registry)
from ..dynamo import resume_execution
from ..dynamo.bytecode_transformation import instructions_from_code
from ..dynamo.symbolic_convert import OPCODE_HANDLERS, InstructionTranslatorBase
from ..inductor import fusion
from ..inductor.codegen import cpp_loops, cpp_ops, triton_frames
from ..inductor.codegen.cpp_ops import ReductionKind
from ..inductor.lowering import lowerings
from ..inductor.runtime import triton_heuristics
from ..shapes.symbolic_shapes import ShapeEnv
from .checks.ex03_graph_breaks import checked_prologue

aten = torch.ops.aten
_ABSENT = object()  # a table row that did not exist before the swap


class Usage:
    """How often one plugged piece ran."""

    def __init__(self):
        self.calls = 0

    def counted(self, fn: Callable) -> Callable:
        """``fn``, counting its calls (a plain function, so it still binds as a method)."""

        def counting(*args, **kwargs):
            self.calls += 1
            return fn(*args, **kwargs)

        return counting


class _CountingRows(dict):
    """A table whose lookups of the learner's rows are counted (the compiler looks rows up by
    ``table[key]`` at the moment it uses them)."""

    def __init__(self, rows: dict, learner_keys: set, usage: Usage):
        super().__init__(rows)
        self.learner_keys, self.usage = learner_keys, usage

    def __getitem__(self, key):
        if key in self.learner_keys:
            self.usage.calls += 1
        return super().__getitem__(key)


@contextlib.contextmanager
def swapped(table: Any, key: Any, value: Any) -> Iterator[None]:
    """``table[key] = value`` (a dict or list; for a class or module, its attribute ``key``) for
    the duration; ``_ABSENT`` removes the row. Always restores the old entry."""
    rows = table if isinstance(table, (dict, list)) else _Attributes(table)
    old = rows[key] if isinstance(rows, list) else rows.get(key, _ABSENT)
    _put(rows, key, value)
    try:
        yield
    finally:
        _put(rows, key, old)


def _put(rows: Any, key: Any, value: Any) -> None:
    if value is _ABSENT:
        rows.pop(key, None)
    else:
        rows[key] = value


class _Attributes:
    """A class's or module's own attributes as a table (``get``, ``[]=``, ``pop``)."""

    def __init__(self, obj: Any):
        self.obj = obj

    def get(self, key: str, default: Any) -> Any:
        return vars(self.obj).get(key, default)

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self.obj, key, value)

    def pop(self, key: str, default: Any) -> None:
        if key in vars(self.obj):
            delattr(self.obj, key)


# --- one installer per exercise: (learner module, usage) -> context manager ------------------

def _binary_ops(sol: ModuleType, use: Usage) -> ContextManager:
    table = sol.binary_op_table()
    return swapped(handlers_data, "BINARY_OPS", _CountingRows(table, set(table), use))


def _for_iter(sol: ModuleType, use: Usage) -> ContextManager:
    return swapped(OPCODE_HANDLERS, "FOR_ITER", use.counted(sol.for_iter))


def _inline_call(sol: ModuleType, use: Usage) -> ContextManager:
    inline = use.counted(lambda tx, fn, args, kwargs: sol.inline_call(tx, fn, args, kwargs))
    return swapped(InstructionTranslatorBase, "inline_user_function_return", inline)


def _live_locals(sol: ModuleType, use: Usage) -> ContextManager:
    """The learner's liveness decides what a resume function receives at a graph break. A
    local it leaves out that the code after the break reads is refused before the resume
    function runs: from Python 3.12 reading an unbound fast local crashes the interpreter."""
    def live_locals(code, offset):
        insts = instructions_from_code(code)
        for inst in insts:
            inst.exn_tab_entry = None  # (the exercise leaves exception handlers out)
        start = next(i for i, inst in enumerate(insts) if inst.offset == offset)
        use.calls += 1
        cells = set(code.co_cellvars + code.co_freevars)  # those travel in the closure
        got = set(sol.live_locals(insts, start)) - cells
        missing = set(resume_execution.live_locals(code, offset)) - got
        assert not missing, (f"with_a_graph_break: live_locals leaves out {sorted(missing)}, "
                             "which the code after the break reads (not run: an unbound local "
                             "read by the resume function would crash the interpreter)")
        return sorted(got)

    return swapped(graph_break, "live_locals", live_locals)


def _restore_stack(sol: ModuleType, use: Usage) -> ContextManager:
    """The learner's prologue rebuilds a resume function's value stack (an iterator on the
    stack, which the exercise leaves out, keeps minicompile's own)."""
    own = resume_execution.restore_stack
    learner = checked_prologue(sol.restore_stack)  # never runs a prologue that would crash

    def restore_stack(stack):
        if resume_execution.ITERATOR in stack:
            return own(stack)
        use.calls += 1
        return learner(stack)

    return swapped(resume_execution, "restore_stack", restore_stack)


def _create_symbol(sol: ModuleType, use: Usage) -> ContextManager:
    own = ShapeEnv.create_symbol

    def create_symbol(env, hint, source_name, duck=True):
        if not duck:  # the exercise is duck sizing; a size asked not to be shared stays ours
            return own(env, hint, source_name, duck)
        use.calls += 1
        return sympy.sympify(sol.create_symbol(env, int(hint), source_name))

    return swapped(ShapeEnv, "create_symbol", create_symbol)


def _min_cut(sol: ModuleType, use: Usage) -> ContextManager:
    def partition(joint, num_fwd_outputs):
        saved = sol.min_cut_saved_values(joint.graph, num_fwd_outputs)
        return partition_with_saved(joint, saved, num_fwd_outputs)

    return swapped(PARTITIONERS, "min_cut", use.counted(partition))


def _decomposition(op: Any, name: str) -> Callable:
    def install(sol: ModuleType, use: Usage) -> ContextManager:
        return swapped(decomposition_table, op, use.counted(getattr(sol, name)))
    return install


@contextlib.contextmanager
def _hardsigmoid_lowering(sol: ModuleType, use: Usage) -> Iterator[None]:
    """The learner's Pointwise becomes aten.hardsigmoid's lowering, so the op must reach the
    lowering whole: its decomposition is taken out of the table meanwhile."""
    lowering = use.counted(lambda x: sol.lower_hardsigmoid(x))
    with swapped(decomposition_table, aten.hardsigmoid.default, _ABSENT), \
            swapped(lowerings, aten.hardsigmoid.default, lowering):
        yield


def _kernel_tile(sol: ModuleType, use: Usage) -> ContextManager:
    own = fusion.tile

    def tile(members):
        loops = [(m.numel, m.rnumel) for m in members]
        if not all(sympy.sympify(v).is_Integer for loop in loops for v in loop):
            return own(members)  # the exercise's loops are numbers; symbolic ones stay ours
        use.calls += 1
        got = sol.kernel_tile([(int(n), int(r)) for n, r in loops])
        if got is None:
            return f"loops {loops} share no tile (kernel_tile)"
        return sympy.Integer(got[0]), sympy.Integer(got[1])

    return swapped(fusion, "tile", tile)


def _fusion_rule(sol: ModuleType, use: Usage) -> ContextManager:
    rule = use.counted(lambda s, a, b: sol.reads_line_up(a, b))
    return swapped(fusion.RULES, fusion.RULES.index(fusion._reads_line_up), rule)


def _c_ops(sol: ModuleType, use: Usage) -> ContextManager:
    rows = {k: v for k, v in sol.nan_aware_ops().items() if k in cpp_ops.C_OPS}
    return swapped(cpp_ops, "C_OPS", _CountingRows({**cpp_ops.C_OPS, **rows}, set(rows), use))


def _vector_loop(sol: ModuleType, use: Usage) -> ContextManager:
    return swapped(cpp_loops, "vector_loop", use.counted(sol.vector_loop))


def _parallel_reduction(sol: ModuleType, use: Usage) -> ContextManager:
    learner = use.counted(sol.parallel_reduction)

    def parallel_reduction(accumulators, body, parallel, simd=True):
        return learner(accumulators, body, parallel)
    return swapped(cpp_loops, "parallel_reduction", parallel_reduction)


def _reductions(sol: ModuleType, use: Usage) -> ContextManager:
    rows = {k: ReductionKind(init, update, omp=omp)
            for k, (init, update, omp) in sol.reduction_rows().items() if k in cpp_ops.REDUCTIONS}
    table = _CountingRows({**cpp_ops.REDUCTIONS, **rows}, set(rows), use)
    return swapped(cpp_ops, "REDUCTIONS", table)


def _cudagraphs(name: str) -> Callable[[ModuleType, Usage], ContextManager]:
    """The learner's ``name`` in the CUDA-graph stage (``CUDAGraphRunner`` looks it up in
    ``cudagraph_trees`` at every call)."""
    def install(sol: ModuleType, use: Usage) -> ContextManager:
        return swapped(cudagraph_trees, name, use.counted(getattr(sol, name)))
    return install


@contextlib.contextmanager
def _pointwise_kernel(sol: ModuleType, use: Usage) -> Iterator[None]:
    """The learner writes every pointwise Triton kernel whose loads and stores ``xmask`` alone
    masks, and the grid of every launch."""
    with swapped(triton_frames, "pointwise_kernel", use.counted(sol.pointwise_kernel)), \
            swapped(triton_heuristics, "grid", sol.grid):
        yield


@contextlib.contextmanager
def _tiled_kernel(sol: ModuleType, use: Usage) -> Iterator[None]:
    """The learner writes every 2-D tiled pointwise kernel (a transpose or permute) whose loads
    and stores ``xmask`` alone masks, and the grid of every tiled launch."""
    with swapped(triton_frames, "tiled_kernel", use.counted(sol.tiled_kernel)), \
            swapped(triton_heuristics, "tiled_grid", sol.tiled_grid):
        yield


def _looped_reduction_kernel(sol: ModuleType, use: Usage) -> ContextManager:
    """The learner writes every looped reduction of sums, products, maxima and minima whose
    row code follows its one loop."""
    kernel = use.counted(sol.looped_reduction_kernel)
    return swapped(triton_frames, "looped_reduction_kernel", kernel)


@dataclass
class Plug:
    exercise: str
    piece: str  # the learner's function
    stage: str  # where the compiler uses it
    install: Callable[[ModuleType, Usage], ContextManager]
    needs_gpu: bool = False  # reached only where CUDA graphs are recorded
    triton: bool = False  # reached only where Triton kernels run (a GPU, or the interpreter)


PLUGS: list[Plug] = [
    Plug("1.1", "binary_op_table", "dynamo: BINARY_OP's operator table", _binary_ops),
    Plug("1.2", "for_iter", "dynamo: the FOR_ITER handler", _for_iter),
    Plug("1.3", "inline_call", "dynamo: inlining a user function", _inline_call),
    Plug("2.2", "create_symbol", "shapes: ShapeEnv.create_symbol", _create_symbol),
    Plug("3.1", "live_locals", "graph breaks: a resume function's arguments", _live_locals),
    Plug("3.3", "restore_stack", "graph breaks: a resume function's prologue", _restore_stack),
    Plug("4.2", "min_cut_saved_values", "aot_autograd: the min-cut partitioner", _min_cut),
    Plug("5.1", "gelu", "decompositions: aten.gelu", _decomposition(aten.gelu.default, "gelu")),
    Plug("5.2", "log_softmax", "decompositions: aten._log_softmax",
         _decomposition(aten._log_softmax.default, "log_softmax")),
    Plug("5.3", "native_layer_norm", "decompositions: aten.native_layer_norm",
         _decomposition(aten.native_layer_norm.default, "native_layer_norm")),
    Plug("6.2", "lower_hardsigmoid", "inductor: the lowering of aten.hardsigmoid",
         _hardsigmoid_lowering),
    Plug("7.1", "kernel_tile", "inductor: the scheduler's kernel tile", _kernel_tile),
    Plug("7.4", "reads_line_up", "inductor: a fusion rule of the scheduler", _fusion_rule),
    Plug("8.3", "pointwise_kernel", "Triton codegen: pointwise kernels and their grid",
         _pointwise_kernel, triton=True),
    Plug("8.4", "looped_reduction_kernel", "Triton codegen: looped reductions (long rows)",
         _looped_reduction_kernel, triton=True),
    Plug("8.5", "tiled_kernel", "Triton codegen: 2-D tiled transposes and their grid",
         _tiled_kernel, triton=True),
    Plug("9.1", "nan_aware_ops", "C++ codegen: operator templates", _c_ops),
    Plug("9.2", "vector_loop", "C++ codegen: pointwise loops, vectors and a tail",
         _vector_loop),
    Plug("9.3", "reduction_rows", "C++ codegen: reduction accumulators", _reductions),
    Plug("9.4", "parallel_reduction", "C++ codegen: one row reduced by all threads",
         _parallel_reduction),
    Plug("10.1", "skip_reason", "CUDA graphs: may a graph be recorded", _cudagraphs("skip_reason")),
    Plug("10.2", "decide", "CUDA graphs: warm up, record, replay or skip", _cudagraphs("decide"),
         needs_gpu=True),
    Plug("10.3", "reads_in_place", "CUDA graphs: inputs read in place or copied",
         _cudagraphs("reads_in_place"), needs_gpu=True),
]
