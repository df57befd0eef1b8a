"""Where a compile's time goes, and where a compiled step's time goes: per stage and per kernel.

    with stage_times() as stages:      # seconds per stage of every compile in the block
        step()
    with recorded_graphs() as graphs:  # every CompiledFxGraph the inductor backend makes
        step()
    rows = kernel_profile(step, graphs)  # (kernel or op, calls, us per step), most expensive first

``stage_times`` plays the part of real Dynamo's ``dynamo_timed`` and
``torch._dynamo.utils.compile_times()``: each stage's entry point is timed, and a stage that
runs inside another (the backend inside Dynamo's frame conversion, lowering inside the backend)
counts only once, for the innermost stage: the times add up to the whole compile. The entry
points are looked up where the compiler calls them (a class attribute, a module global, a table
row), so timing them swaps nothing else.

``kernel_profile`` runs the step under ``torch.profiler``. On a GPU the profiler sees every
kernel, generated Triton kernels included; on the CPU it sees ATen ops but not the generated
C++ kernels, which the wrapper calls as plain functions: for the profile each of them is wrapped
in ``torch.profiler.record_function`` under its own name, as real Inductor's wrapper does when
``config.cpp.enable_kernel_profile`` is on.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from ..aot_autograd import aot_autograd as aot_module
from ..aot_autograd.partitioners import PARTITIONERS
from ..dynamo import eval_frame
from ..bench.helpers import kernel_rows, quiet_profiler
from ..inductor import backend as inductor_backend
from ..inductor import codecache, compile_fx
from ..inductor.codegen import cpp_build
from ..inductor.codegen.wrapper import WrapperCodeGen
from ..inductor.graph import GraphLowering
from ..inductor.scheduler import Scheduler
from ..viz.codegen import kernel_names

# (stage, owner, attribute): the function whose calls count as time spent in the stage, in the
# order the pipeline runs them
STAGES: list[tuple[str, Any, str]] = [
    ("dynamo: bytecode -> FX graph, guards", eval_frame, "convert_frame"),
    ("aot autograd: joint graph, decompositions", aot_module, "trace_graph"),
    *[("aot autograd: partition", PARTITIONERS, name) for name in PARTITIONERS],
    ("inductor: FX passes", compile_fx, "run_graph_passes"),
    ("inductor: lowering to loop IR", GraphLowering, "run"),
    ("inductor: scheduling and fusion", Scheduler, "__init__"),
    ("inductor: code generation", WrapperCodeGen, "generate"),
    ("inductor: compiling kernels (g++)", cpp_build, "compile_many"),  # one g++ per kernel
    ("inductor: loading generated Python", codecache.PyCodeCache, "load"),
]


class _StageClock:
    """Exclusive time per stage: entering a stage pauses the one it runs in. Only the thread
    that compiles is timed: a stage's helper threads (parallel g++ builds) are inside its time."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._running: list[list] = []  # [stage, started at] of the stages now inside each other
        self._thread = threading.get_ident()

    def timed(self, stage: str, fn: Callable) -> Callable:
        def timed_fn(*args, **kwargs):
            if threading.get_ident() != self._thread:
                return fn(*args, **kwargs)
            now = time.perf_counter()
            if self._running:  # the enclosing stage stops counting while this one runs
                outer = self._running[-1]
                self._add(outer[0], now - outer[1])
            self._running.append([stage, now])
            try:
                return fn(*args, **kwargs)
            finally:
                now = time.perf_counter()
                self._add(stage, now - self._running.pop()[1])
                if self._running:
                    self._running[-1][1] = now
        return timed_fn

    def _add(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds


@contextlib.contextmanager
def _swapped(owner: Any, name: str, make: Callable[[Callable], Callable]) -> Iterator[None]:
    """``owner.name`` (or ``owner[name]``) replaced by ``make(old)`` for the block; a class's
    classmethod stays a classmethod."""
    if isinstance(owner, dict):
        old = owner[name]
        owner[name] = make(old)
        try:
            yield
        finally:
            owner[name] = old
        return
    raw = inspect.getattr_static(owner, name)
    new = classmethod(make(raw.__func__)) if isinstance(raw, classmethod) else make(raw)
    setattr(owner, name, new)
    try:
        yield
    finally:
        setattr(owner, name, raw)


@contextlib.contextmanager
def stage_times() -> Iterator[dict[str, float]]:
    """Seconds spent in each compiler stage during the block (the dict fills in as it runs)."""
    clock = _StageClock()
    clock.seconds.update((stage, 0.0) for stage, _, _ in STAGES)  # in the pipeline's order
    with contextlib.ExitStack() as stack:
        for stage, owner, name in STAGES:
            stack.enter_context(_swapped(owner, name,
                                         lambda fn, stage=stage: clock.timed(stage, fn)))
        yield clock.seconds
    for stage in [s for s, seconds in clock.seconds.items() if seconds == 0.0]:
        del clock.seconds[stage]  # stages this block never entered (a GPU has no g++ step)


@dataclass
class RecordedGraph:
    kind: str  # "forward", "backward" or "inference"
    aten_graph: torch.fx.GraphModule
    compiled: compile_fx.CompiledFxGraph


@contextlib.contextmanager
def recorded_graphs() -> Iterator[list[RecordedGraph]]:
    """Every graph the ``"inductor"`` backend compiles during the block, with its ATen graph."""
    graphs: list[RecordedGraph] = []

    def record(compile_graph: Callable) -> Callable:
        def recording(gm, example_inputs, **kwargs):
            compiled = compile_graph(gm, example_inputs, **kwargs)
            graphs.append(RecordedGraph(kwargs.get("graph_kind", "inference"), gm, compiled))
            return compiled
        return recording

    with _swapped(inductor_backend, "compile_fx_inner", record):
        yield graphs


def _kernels_of(graphs: list[RecordedGraph]) -> list[tuple[dict, str]]:
    """(namespace, name) of every generated kernel the graphs' wrappers call by name."""
    found = []
    for g in graphs:
        namespace = getattr(g.compiled.call, "__globals__", {})
        found += [(namespace, name) for name in kernel_names(g.compiled.source)
                  if callable(namespace.get(name))]
    return found


@contextlib.contextmanager
def _kernels_recorded(graphs: list[RecordedGraph]) -> Iterator[None]:
    """Each generated kernel wrapped in ``record_function`` under its own name."""
    def labelled(name: str, kernel: Callable) -> Callable:
        def run(*args, **kwargs):
            with torch.profiler.record_function(name):
                return kernel(*args, **kwargs)
        return run

    with contextlib.ExitStack() as stack:
        for namespace, name in _kernels_of(graphs):
            stack.enter_context(_swapped(namespace, name,
                                         lambda fn, name=name: labelled(name, fn)))
        yield


def kernel_profile(step: Callable[[], Any], graphs: list[RecordedGraph], device: str = "cpu",
                   reps: int = 3) -> list[tuple[str, int, float]]:
    """(kernel or ATen op, calls per step, microseconds per step) of ``step()``, most expensive
    first: GPU kernels on a GPU; on the CPU the generated kernels (by name) and the ATen ops the
    wrappers call (library matmuls) or eager code runs."""
    from torch.profiler import ProfilerActivity, profile

    on_gpu = device == "cuda"
    step()  # warm up: compile, allocate, autotune outside the profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    with _kernels_recorded([] if on_gpu else graphs), quiet_profiler(), \
            profile(activities=activities) as prof:
        for _ in range(reps):
            step()
        if on_gpu:
            torch.cuda.synchronize()
    events = prof.key_averages()
    rows = kernel_rows(events, reps, on_gpu)
    if not on_gpu:
        ours = {name for _, name in _kernels_of(graphs)}
        rows += [(e.key, e.count // reps, e.self_cpu_time_total / reps) for e in events
                 if e.key in ours and e.self_cpu_time_total > 0]
    return sorted(rows, key=lambda r: -r[2])
