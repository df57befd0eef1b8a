"""The whole compiler with the learner's own pieces in it: ``bash course.sh grade
--pipeline`` (or ``pipeline()`` from ``minicompile.grade`` in a notebook).

Every exercise whose check passes puts the learner's function into the stage it was written for
(:data:`PLUGS`: the interpreter's BINARY_OP table and FOR_ITER handler, call inlining, duck
sizing, a resume function's live locals and stack prologue, the min-cut partitioner, three
decompositions, a lowering, the scheduler's tile and one of its fusion rules, Triton's pointwise
kernels, grid, looped reductions and 2-D tiled transposes, C++ operator templates, vector loops, accumulators and
parallel reductions, the CUDA-graph decisions); every other piece stays
minicompile's own. Then one model (:class:`CourseModel`) runs a training step through
``mc.compile(backend="inductor")`` at two batch sizes (the second compiles with a symbolic batch)
with C++ kernels, and its loss and gradients are compared with eager PyTorch's, and so is
:func:`long_rows` (long rows, and a whole-tensor reduction); the same step
runs again with Triton kernels where Triton can run (a GPU, or CPU tensors under
``TRITON_INTERPRET=1``), so the learner's Triton pieces write them (the long rows: a looped
reduction), and with them :func:`transposed` (a 2-D tiled kernel); then a function with a graph
break (:func:`with_a_graph_break`) runs through the resume function the learner's liveness and
stack prologue built; last, the model trains with ``mode="reduce-overhead"``: on a GPU its
graphs are recorded and replayed with the learner's CUDA-graph decisions, on a CPU the learner's
``skip_reason`` must refuse them (the other CUDA-graph pieces need a GPU).

Each plugged piece counts its calls, so the report says which of the learner's pieces the
compiled model really ran, and a piece that was never reached is named as such.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field
from types import ModuleType
from typing import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F

import minicompile as mc
from .. import config, cudagraphs
from ..dynamo import resume_execution
from ..inductor.runtime import triton_heuristics
from .plugs import PLUGS, Usage, swapped

__all__ = ["PLUGS", "CourseModel", "PipelineReport", "long_rows", "plugged_in",
           "run_pipeline", "transposed", "with_a_graph_break"]


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


def long_rows(x: torch.Tensor) -> torch.Tensor:
    """Each row's max plus its mean, less the whole tensor's mean: rows longer than a Triton
    block are reduced in a loop, and the whole tensor as one row, shared by the C++ threads."""
    return x.amax(1) + x.sum(1) / x.shape[1] - x.mean()  # (B,)


def transposed(x: torch.Tensor) -> torch.Tensor:
    """A batch of activations transposed and scaled: the load is contiguous along the batch,
    the store along the features, so the Triton backend writes a 2-D tiled kernel."""
    return x.t().contiguous() * 2 + 1  # (features, B)


@dataclass
class PipelineReport:
    plugged: dict[str, int] = field(default_factory=dict)  # exercise -> calls of the piece
    own: dict[str, str] = field(default_factory=dict)  # exercise -> why minicompile's own ran
    max_diff: float = 0.0
    metrics: dict[str, int] = field(default_factory=dict)
    triton: str = ""  # where the Triton kernels ran, or why they did not
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
                                  f"and long_rows with C++ kernels ({counts}), then with Triton "
                                  f"kernels ({self.triton}), then with_a_graph_break, then "
                                  f"CourseModel with mode='reduce-overhead':", verdict])


def run_pipeline(pieces: dict[str, ModuleType], not_plugged: dict[str, str]) -> PipelineReport:
    """Plug in ``pieces[ex]`` (the learner's module) for each exercise it names, and train
    ``CourseModel`` one step at two batch sizes with minicompile's inductor backend, against
    eager. ``not_plugged`` says why each other exercise of :data:`PLUGS` keeps minicompile's own
    piece."""
    report = PipelineReport(own=dict(not_plugged))
    report.own.update({plug.exercise: NO_GPU for plug in PLUGS
                       if plug.exercise in pieces and not runs_here(plug)})
    with plugged_in(pieces) as usages:
        try:
            report.max_diff = _train_against_eager()
        except AssertionError as e:
            report.error = str(e)
        report.metrics = {k: getattr(mc.metrics, k) for k in
                          ("graphs_compiled", "recompiles", "graph_breaks", "eager_fallbacks")}
        if not report.error:
            try:
                report.max_diff = max(report.max_diff, _long_rows_against_eager("cpu", "cpp"),
                                      _dynamic_against_eager())
            except AssertionError as e:
                report.error = str(e)
        device, report.triton = triton_device()
        if not report.error and device is not None:
            mc.reset()
            try:
                report.max_diff = max(report.max_diff, _train_against_eager(device, "triton"),
                                      _long_rows_against_eager(device, "triton"),
                                      _transposed_against_eager(device))
            except AssertionError as e:
                report.error = f"with Triton kernels: {e}"
        if not report.error:
            try:
                report.max_diff = max(report.max_diff, _resume_against_eager())
            except AssertionError as e:
                report.error = str(e)
            except Exception as e:  # a resume function built wrong fails when it runs
                report.error = (f"with_a_graph_break raised {type(e).__name__}: {e} (the "
                                "resume function your graph-break pieces built)")
        if not report.error:
            try:
                report.max_diff = max(report.max_diff, _cudagraphs_against_eager())
            except AssertionError as e:
                report.error = str(e)
            except Exception as e:  # e.g. a CPU graph let through to be recorded
                report.error = (f"mode='reduce-overhead' raised {type(e).__name__}: {e} (the "
                                "CUDA-graph stage, with your pieces in it)")
    report.plugged = {ex: use.calls for ex, use in usages.items()}
    return report


def runs_here(plug) -> bool:
    """Whether a piece can run on this machine (a CUDA-graph piece needs a GPU)."""
    return torch.cuda.is_available() or not plug.needs_gpu


@contextlib.contextmanager
def plugged_in(pieces: dict[str, ModuleType]) -> Iterator[dict[str, Usage]]:
    """The compiler with ``pieces[ex]`` (the learner's module) in the stage of each exercise it
    names, C++ kernels for CPU tensors, and empty caches, for the block; yields each plugged
    piece's :class:`Usage`. Everything is minicompile's own again afterwards."""
    usages = {plug.exercise: Usage() for plug in PLUGS
              if plug.exercise in pieces and runs_here(plug)}
    with contextlib.ExitStack() as stack:
        for plug in PLUGS:
            if plug.exercise in usages:
                stack.enter_context(plug.install(pieces[plug.exercise], usages[plug.exercise]))
        stack.enter_context(swapped(config.inductor, "cpu_backend", "cpp"))
        mc.reset()
        stack.callback(mc.reset)
        yield usages


def triton_device() -> tuple[str | None, str]:
    """Where Triton kernels can run here (None: nowhere), and that in words."""
    if torch.cuda.is_available():
        return "cuda", "on the GPU"
    if triton_heuristics.INTERPRET:
        return "cpu", "on CPU tensors, in Triton's interpreter"
    return None, "not run: no GPU, and TRITON_INTERPRET=1 was not set before Python started"


def _train_against_eager(device: str = "cpu", cpu_kernels: str = "cpp") -> float:
    """One training step of the compiled model per batch size, against the eager model's; the
    largest difference of any loss or gradient. ``cpu_kernels``: the backend of CPU tensors."""
    torch.manual_seed(0)
    with torch.device(device), swapped(config.inductor, "cpu_backend", cpu_kernels):
        return _train_model()


def _train_model() -> float:
    reference = CourseModel()
    compiled = mc.compile(copy.deepcopy(reference), backend="inductor")
    mc.metrics.reset()
    worst = 0.0
    for batch in BATCHES:
        x, target = torch.randn(batch, 24), torch.randint(0, 10, (batch,))
        worst = max(worst, _step_against_eager(f"at batch {batch}", compiled, reference, x,
                                               target))
    assert mc.metrics.eager_fallbacks == 0 and mc.metrics.graph_breaks == 0, (
        f"the model was not compiled whole ({mc.metrics.eager_fallbacks} eager fallbacks, "
        f"{mc.metrics.graph_breaks} graph breaks): a plugged piece raised or refused")
    return worst


def _long_rows_against_eager(device: str, cpu_kernels: str) -> float:
    """``long_rows`` compiled (on ``device``; ``cpu_kernels``: the backend of CPU tensors)
    against eager."""
    mc.reset()
    with torch.device(device), swapped(config.inductor, "cpu_backend", cpu_kernels):
        x = torch.randn(6, 2500)
        mc.metrics.reset()
        got = mc.compile(long_rows, backend="inductor")(x)
        assert mc.metrics.eager_fallbacks == 0, "long_rows fell back to eager: a piece raised"
        return _compare("long_rows", got, long_rows(x))


def _dynamic_against_eager() -> float:
    """``long_rows`` of two tensors of one shape compiled with ``dynamic=True``: the sizes that
    are equal share a symbol (duck sizing, where a compile asks for symbolic sizes from the start;
    the batch sizes automatic dynamic makes symbolic get symbols of their own)."""
    mc.reset()
    x, y = torch.randn(6, 40), torch.randn(6, 40)
    mc.metrics.reset()
    got = mc.compile(lambda x, y: long_rows(x) * long_rows(y), backend="inductor",
                     dynamic=True)(x, y)
    assert mc.metrics.eager_fallbacks == 0, "a dynamic-shape compile fell back to eager"
    return _compare("long_rows(x) * long_rows(y) with dynamic=True", got,
                    long_rows(x) * long_rows(y))


def _transposed_against_eager(device: str) -> float:
    """``transposed`` compiled with Triton kernels (on ``device``) against eager, at an odd
    size: the last row and column of tiles partly masked. New buffers are filled with NaN
    (``uninitialized_is_nan``): a grid that misses tiles leaves NaN behind, never memory that
    happens to hold the right values from an earlier run."""
    mc.reset()
    with torch.device(device), swapped(config.inductor, "cpu_backend", "triton"), \
            uninitialized_is_nan():
        x = torch.randn(131, 24)
        mc.metrics.reset()
        got = mc.compile(transposed, backend="inductor")(x)
        assert mc.metrics.eager_fallbacks == 0, "transposed fell back to eager: a piece raised"
        return _compare("transposed", got, transposed(x))


@contextlib.contextmanager
def uninitialized_is_nan() -> Iterator[None]:
    """``torch.empty`` and ``empty_strided`` fill floating-point buffers with NaN meanwhile
    (PyTorch's deterministic mode, ``torch.utils.deterministic.fill_uninitialized_memory``)."""
    enabled = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)


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


NO_GPU = "needs a GPU: CUDA graphs record GPU kernels, and this machine has none"


def _cudagraphs_against_eager() -> float:
    """``CourseModel`` trained with ``mode="reduce-overhead"`` against eager. On a GPU, three
    steps per batch size (warm up, record, replay): the CUDA-graph stage records and replays
    with the learner's pieces deciding. On a CPU nothing may be recorded: one step, whose
    graphs the stage must refuse (skip_reason) and run as compiled code."""
    on_gpu = torch.cuda.is_available()
    steps = [(b, i) for b in BATCHES for i in range(3)] if on_gpu else [(BATCHES[0], 0)]
    refused = cudagraphs.counters["skipped"]
    torch.manual_seed(0)
    with torch.device("cuda" if on_gpu else "cpu"):
        reference = CourseModel()
        compiled = mc.compile(copy.deepcopy(reference), mode="reduce-overhead")
        worst = 0.0
        for batch, step in steps:
            x, target = torch.randn(batch, 24), torch.randint(0, 10, (batch,))
            worst = max(worst, _step_against_eager(
                f"with mode='reduce-overhead', batch {batch}, step {step}", compiled, reference,
                x, target))
    assert on_gpu or cudagraphs.counters["skipped"] > refused, (
        "mode='reduce-overhead' on CPU tensors: skip_reason refused no graph")
    return worst


def _step_against_eager(what: str, compiled: nn.Module, reference: nn.Module,
                        x: torch.Tensor, target: torch.Tensor) -> float:
    """One training step of both models on the same batch: the largest difference of the
    loss and the gradients."""
    losses = []
    for model in (compiled, reference):
        model.zero_grad()
        loss = F.nll_loss(model(x), target)
        loss.backward()
        losses.append(loss)
    worst = _compare(f"loss {what}", losses[0], losses[1])
    for (name, got), want in zip(compiled.named_parameters(), reference.parameters()):
        worst = max(worst, _compare(f"gradient of {name} {what}", got.grad, want.grad))
    return worst


def _compare(what: str, got: torch.Tensor, want: torch.Tensor) -> float:
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4, msg=lambda m: f"{what}\n{m}")
    return float((got - want).abs().max().detach())
