"""Compile one ATen graph (mini version of torch/_inductor/compile_fx.py).

    compiled = compile_fx_inner(aten_gm, example_inputs)
    outs = compiled(*inputs)            # same outputs as aten_gm(*inputs)

Steps: run the FX graph passes (``fx_passes``: CSE, algebraic simplification, constant and
conv-batchnorm folding, dead-code elimination), lower the graph to loop IR (``GraphLowering``),
schedule and fuse it (``Scheduler``), then generate code: ``Scheduler.codegen`` hands every kernel
object to its device's backend (``codegen/``) and ``WrapperCodeGen`` writes the program that
allocates buffers and launches the kernels. The result is a ``CompiledFxGraph``: the output code
(``MINICOMPILE_LOGS=output_code``), the callable, and the graph and scheduler for inspection.
A backend that cannot write or compile a kernel raises ``CodegenError``; the graph is then
generated again by the reference backend, with a warning (a missing C++ compiler costs speed,
never a failed compile).

Symbolic sizes: a graph traced with ``dynamic=True`` has ``Sym(s0)`` placeholders and fake
tensors of size ``(s0, 7)``. The lowering keeps ``s0`` as a SymPy symbol in every size and index
and remembers which input dim holds it; the wrapper reads it from the runtime inputs on each
call, so one compiled graph serves every size (the backend declares ``supports_dynamic_shapes``).

What ``MINICOMPILE_LOGS=ir_pre_fusion,ir_post_fusion,fusion`` prints, once per graph and each
titled with the graph's name (``forward graph 0``, ``backward graph 1``; Inductor's
``model__0_forward_0`` debug folders): ``ir_pre_fusion`` the graph passes' report, the loop IR
and any fallbacks; ``fusion`` every fusion decision with its reason; ``ir_post_fusion`` the
kernels, each with the bytes it reads and writes.

After code generation, the post-compile wrappers registered in ``post_compile.py`` run, in order (Inductor's
``CompiledFxGraph.post_compile``): each may replace what a call runs (``current_callable``) by a
wrapper of it, and names itself in ``wrappers``. The CUDA-graphs stage (``cudagraphs/``) is one:
under ``mode="reduce-overhead"`` it records the wrapper's launches once and replays them. A
stage after this one registers here; nothing in this package knows it.

``counters`` (mirrors ``torch._dynamo.utils.counters["inductor"]``) counts the graphs compiled
here, so a test can see that one compile served many sizes.
"""

from __future__ import annotations

import logging
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .._logging import trace_artifact
from ..metrics import metrics
from .codegen import backend_name
from .codegen.common import CodegenError
from .codegen.wrapper import WrapperCodeGen, unflatten_outputs
from .fx_passes import run_graph_passes
from .graph import GraphLowering
from .lowering import Unsupported
from .options import InductorOptions
from .post_compile import post_compile
from .scheduler import Scheduler

log = logging.getLogger(__name__)

# "graphs": graphs compiled; "symbolic_graphs": those with symbolic sizes (never reset by
# mc.reset, like torch's counters: take differences)
counters: Counter[str] = Counter()


@dataclass(eq=False)
class CompiledFxGraph:
    """One compiled ATen graph (Inductor's ``CompiledFxGraph``): call it like the graph."""

    name: str
    source: str  # the output code: kernels, then the wrapper program ``call(args)``
    call: Callable[[list], tuple]
    graph: GraphLowering
    scheduler: Scheduler
    pass_report: Any
    backends: dict[str, str]  # device type -> the backend that generated its kernels
    options: InductorOptions  # the knobs it was compiled with (config.inductor + mode + options=)
    kind: str = "graph"  # "forward", "backward" or "inference"
    # the wrapper program as typed lines (codegen/wrapper_lines.py): allocate, reuse, kernel
    # call, library call, free; ``source`` holds their text
    wrapper_lines: list = field(default_factory=list)
    # what a call runs: ``call``, or the last post-compile wrapper of it (``post_compile``)
    current_callable: Callable[[list], tuple] | None = None
    wrappers: list[str] = field(default_factory=list)  # the post-compile wrappers, in order

    def __post_init__(self) -> None:
        self.current_callable = self.current_callable or self.call
        # each output's strides where static (a forward's saved tensors: what its backward is
        # compiled for, ``aot_autograd._take_saved_strides``)
        self.output_strides = self.graph.output_strides()

    def __call__(self, *args: Any) -> Any:
        return self.boxed_call(list(args))

    def boxed_call(self, args: list) -> Any:
        """Run on ``args``, a list the program empties (``args.clear()``) once it has taken the
        inputs out: a caller that hands over its only references (the backward's saved
        tensors, ``runtime_wrappers``) lets the program free each after its last reader."""
        if not torch.is_grad_enabled():
            return unflatten_outputs(self.graph, self.current_callable(args))
        torch._C._set_grad_enabled(False)  # library calls record no autograd graph (this is
        try:  # torch.no_grad() without building an object per call)
            return unflatten_outputs(self.graph, self.current_callable(args))
        finally:
            torch._C._set_grad_enabled(True)


def compile_fx_inner(gm: torch.fx.GraphModule, example_inputs: list,
                     graph_kind: str = "graph",
                     options: InductorOptions | dict | None = None) -> CompiledFxGraph:
    """``graph_kind`` ("forward", "backward", "inference") only names the graph in the logs.
    ``options``: the compile's ``InductorOptions`` (a dict: knobs over ``config.inductor``)."""
    options = InductorOptions.of(options)
    if any(v.device.type == "meta" for v in _tensor_values(gm)):
        # (AOT autograd then runs the graph eagerly, through torch's meta kernels, saying why)
        raise Unsupported("meta tensors hold no data, so there is no kernel to generate: the "
                          "graph runs torch's meta kernels, which compute the shapes")
    name = f"{graph_kind} graph {counters['graphs']}"
    counters["graphs"] += 1
    report = run_graph_passes(
        gm, uses_online_softmax=lambda device: backend_name(device, options) == "triton")
    graph = GraphLowering(gm, example_inputs, name=name, options=options,
                          is_inference=graph_kind not in ("forward", "backward")).run()
    if graph.symbol_sources:
        counters["symbolic_graphs"] += 1
    trace_artifact("ir_pre_fusion", lambda: _pre_fusion_text(report, graph),
                   title=f"{name}: loop IR before fusion")
    scheduler = Scheduler(graph, options=options)  # logs "fusion" and "ir_post_fusion"
    try:
        source, call, lines = generate(graph, scheduler, options)
    except CodegenError as error:  # a kernel the backend cannot write or compile
        if options.cpu_backend == options.cuda_backend == "reference":
            raise
        log.warning("%s: %s\nfalling back to the reference backend", name, error)
        metrics.backend_fallbacks.append(f"{name}: {str(error)[:500]}")
        # (torch ops over blocks of rows: they run on any device)
        options = options.replace(cpu_backend="reference", cuda_backend="reference")
        source, call, lines = generate(graph, scheduler, options)
    trace_artifact("output_code", lambda: source, title=f"{name}: output code")
    devices = {g.device.type for g in scheduler.kernel_groups if g.is_loop_kernel()}
    if options.max_autotune and any(backend_name(torch.device(d), options) != "triton"
                                    for d in devices):
        _warn_once("max_autotune tries more Triton configurations; kernels of the "
                   f"{options.cpu_backend!r} backend have none to try, and compile as usual")
    compiled = CompiledFxGraph(name, source, call, graph, scheduler, report,
                               {d: backend_name(torch.device(d), options) for d in devices},
                               options, kind=graph_kind, wrapper_lines=lines)
    return post_compile(compiled, gm)


def _tensor_values(gm: torch.fx.GraphModule) -> list[torch.Tensor]:
    """The example value of every tensor the graph takes or makes."""
    vals = (node.meta.get("val") for node in gm.graph.nodes)
    return [v for v in vals if isinstance(v, torch.Tensor)]


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """An option this compile cannot honour is said once per process, never passed silently."""
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, stacklevel=3)


def generate(graph: GraphLowering, scheduler: Scheduler,
             options: InductorOptions) -> tuple[str, Callable, list]:
    """The output code, the callable and the wrapper's typed lines: each kernel by its
    device's backend, then the wrapper."""
    wrapper = WrapperCodeGen(graph, scheduler)
    source, call = wrapper.generate(lambda w: scheduler.codegen(w, options))
    return source, call, wrapper.body.lines


def _pre_fusion_text(report: Any, graph: GraphLowering) -> str:
    """One block: what the FX passes changed, the loop IR, and what fell back to ATen."""
    parts = [f"# graph passes: {report}", str(graph)]
    parts += [f"# fallback {op}: {reason}" for op, reason in graph.fallbacks]
    return "\n".join(parts)
