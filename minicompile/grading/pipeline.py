"""The whole compiler with the learner's own pieces in it: ``python -m minicompile.grade
--pipeline`` (or ``pipeline()`` from ``minicompile.grade`` in a notebook).

Every exercise whose check passes puts the learner's function into the stage it was written for
(:data:`PLUGS`: the interpreter's BINARY_OP table and FOR_ITER handler, call inlining, duck
sizing, a resume function's live locals and stack prologue, the min-cut partitioner, three decompositions, a lowering, the scheduler's tile and one
of its fusion rules, C++ operator templates and accumulators); every other piece stays
minicompile's own. Then one model (:class:`CourseModel`) runs a training step through
``mc.compile(backend="inductor")`` at two batch sizes (the second compiles with a symbolic batch)
with C++ kernels, and its loss and gradients are compared with eager PyTorch's; last, a function
with a graph break (:func:`with_a_graph_break`) runs through the resume function the learner's
liveness and stack prologue built.

Each plugged piece counts its calls, so the report says which of the learner's pieces the
compiled model really ran, and a piece that was never reached is named as such.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, ContextManager, Iterator

import sympy
import torch
import torch.nn as nn
import torch.nn.functional as F

import minicompile as mc
from .. import config
from ..aot_autograd.partitioners import PARTITIONERS, partition_with_saved
from ..decompositions import decomposition_table
from ..dynamo import graph_break, handlers_data, handlers_flow  # noqa: F401 (the registry)
from ..dynamo import resume_execution
from ..dynamo.bytecode_transformation import instructions_from_code
from .checks.ex03_graph_breaks import checked_prologue
from ..dynamo.symbolic_convert import OPCODE_HANDLERS, InstructionTranslatorBase
from ..inductor import fusion
from ..inductor.codegen import cpp_ops
from ..inductor.codegen.cpp_ops import ReductionKind
from ..inductor.lowering import lowerings
from ..shapes.symbolic_shapes import ShapeEnv

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


def _reductions(sol: ModuleType, use: Usage) -> ContextManager:
    rows = {k: ReductionKind(init, update, omp=omp)
            for k, (init, update, omp) in sol.reduction_rows().items() if k in cpp_ops.REDUCTIONS}
    table = _CountingRows({**cpp_ops.REDUCTIONS, **rows}, set(rows), use)
    return swapped(cpp_ops, "REDUCTIONS", table)


@dataclass
class Plug:
    exercise: str
    piece: str  # the learner's function
    stage: str  # where the compiler uses it
    install: Callable[[ModuleType, Usage], ContextManager]


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
    Plug("9.1", "nan_aware_ops", "C++ codegen: operator templates", _c_ops),
    Plug("9.3", "reduction_rows", "C++ codegen: reduction accumulators", _reductions),
]


# --- the model ---------------------------------------------------------------------------------

def _residual(layer: nn.Module, h: torch.Tensor) -> torch.Tensor:
    """A user function the interpreter inlines into the model's graph."""
    return h + F.gelu(layer(h))


class CourseModel(nn.Module):
    """A small classifier that reaches every plugged piece: layer norm, a loop over residual
    layers calling a helper (FOR_ITER, inlining, GELU), a hardsigmoid gate, in-place operators,
    ReLU and log_softmax; its reductions and elementwise ops become C++ kernels."""

    def __init__(self, features: int = 24, classes: int = 10, depth: int = 2):
        super().__init__()
        self.norm = nn.LayerNorm(features)
        self.layers = nn.ModuleList(nn.Linear(features, features) for _ in range(depth))
        self.gate = nn.Linear(features, features)
        self.head = nn.Linear(features, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, features)
        h = self.norm(x)
        for layer in self.layers:
            h = _residual(layer, h)
        h = h * F.hardsigmoid(self.gate(h))
        h += x  # in place on a fresh tensor: the caller sees no change, autograd is fine
        return F.log_softmax(self.head(h.relu()), -1)  # (B, classes)


BATCHES = (8, 13)  # the second batch size recompiles with a symbolic batch (automatic dynamic)


def with_a_graph_break(x: torch.Tensor) -> torch.Tensor:
    """Two graphs and a resume function: the break is a call, so the resume function's stack
    holds the call's result, and ``h``, ``scale`` and ``x`` are live across it."""
    h = x.sin()
    scale = 2.0
    torch._dynamo.graph_break()  # the graph so far runs; the rest resumes in a new frame
    return h * scale + x.cos()


@dataclass
class PipelineReport:
    plugged: dict[str, int] = field(default_factory=dict)  # exercise -> calls of the piece
    own: dict[str, str] = field(default_factory=dict)  # exercise -> why minicompile's own ran
    max_diff: float = 0.0
    metrics: dict[str, int] = field(default_factory=dict)
    error: str = ""  # empty when the model compiled and matched eager

    def format(self) -> str:
        rows = [("exercise", "your piece", "used in", "ran")]
        for plug in PLUGS:
            if plug.exercise in self.plugged:
                calls = self.plugged[plug.exercise]
                ran = f"yours: {calls} calls" if calls else "yours: never reached by the model"
            else:
                ran = f"minicompile's: {self.own.get(plug.exercise, 'not plugged in')}"
            rows.append((plug.exercise, plug.piece, plug.stage, ran))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        counts = ", ".join(f"{k} {v}" for k, v in self.metrics.items())
        verdict = (f"FAILED: {self.error}" if self.error else
                   f"matches eager (largest difference {self.max_diff:.2e}) with "
                   f"{len(self.plugged)} of your {len(PLUGS)} pieces plugged in")
        return "\n".join(lines + ["", f"CourseModel, a training step at batch sizes {BATCHES} "
                                  f"({counts}), then with_a_graph_break:", verdict])


def run_pipeline(pieces: dict[str, ModuleType], not_plugged: dict[str, str]) -> PipelineReport:
    """Plug in ``pieces[ex]`` (the learner's module) for each exercise it names, and train
    ``CourseModel`` one step at two batch sizes with minicompile's inductor backend, against
    eager. ``not_plugged`` says why each other exercise of :data:`PLUGS` keeps minicompile's own
    piece."""
    usages = {plug.exercise: Usage() for plug in PLUGS if plug.exercise in pieces}
    report = PipelineReport(own=dict(not_plugged))
    with contextlib.ExitStack() as stack:
        for plug in PLUGS:
            if plug.exercise in usages:
                stack.enter_context(plug.install(pieces[plug.exercise], usages[plug.exercise]))
        stack.enter_context(swapped(config.inductor, "cpu_backend", "cpp"))
        mc.reset()
        stack.callback(mc.reset)
        try:
            report.max_diff = _train_against_eager()
        except AssertionError as e:
            report.error = str(e)
        report.metrics = {k: getattr(mc.metrics, k) for k in
                          ("graphs_compiled", "recompiles", "graph_breaks", "eager_fallbacks")}
        if not report.error:
            try:
                report.max_diff = max(report.max_diff, _resume_against_eager())
            except AssertionError as e:
                report.error = str(e)
            except Exception as e:  # a resume function built wrong fails when it runs
                report.error = (f"with_a_graph_break raised {type(e).__name__}: {e} (the "
                                "resume function your graph-break pieces built)")
    report.plugged = {ex: use.calls for ex, use in usages.items()}
    return report


def _train_against_eager() -> float:
    """One training step of the compiled model per batch size, against the eager model's; the
    largest difference of any loss or gradient."""
    torch.manual_seed(0)
    with torch.device("cpu"):  # the plugged pieces include C++ code generation: CPU tensors
        return _train_on_cpu()


def _train_on_cpu() -> float:
    reference = CourseModel()
    compiled = mc.compile(copy.deepcopy(reference), backend="inductor")
    mc.metrics.reset()
    worst = 0.0
    for batch in BATCHES:
        x, target = torch.randn(batch, 24), torch.randint(0, 10, (batch,))
        losses = []
        for model in (compiled, reference):
            model.zero_grad()
            loss = F.nll_loss(model(x), target)
            loss.backward()
            losses.append(loss)
        worst = max(worst, _compare(f"loss at batch {batch}", losses[0], losses[1]))
        params = zip(compiled.named_parameters(), reference.parameters())
        for (name, got), want in params:
            worst = max(worst, _compare(f"gradient of {name} at batch {batch}", got.grad, want.grad))
    assert mc.metrics.eager_fallbacks == 0 and mc.metrics.graph_breaks == 0, (
        f"the model was not compiled whole ({mc.metrics.eager_fallbacks} eager fallbacks, "
        f"{mc.metrics.graph_breaks} graph breaks): a plugged piece raised or refused")
    return worst


def _resume_against_eager() -> float:
    """``with_a_graph_break`` compiled (two graphs and a resume function, which the plugged
    graph-break pieces build) against eager."""
    resume_execution.ContinueExecutionCache.clear()  # built now, with the pieces plugged in
    try:
        with torch.device("cpu"):
            x = torch.randn(5, 3)
            mc.metrics.reset()
            got = mc.compile(with_a_graph_break, backend="inductor")(x)
            breaks = mc.metrics.graph_breaks
            worst = _compare("with_a_graph_break", got, with_a_graph_break(x))
        assert breaks == 1, f"with_a_graph_break: {breaks} graph breaks, expected 1"
        return worst
    finally:
        resume_execution.ContinueExecutionCache.clear()  # none of it outlives the swap


def _compare(what: str, got: torch.Tensor, want: torch.Tensor) -> float:
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4, msg=lambda m: f"{what}\n{m}")
    return float((got - want).abs().max().detach())
