"""``mc.explain(fn)(*args)``: what capture did, and why (mirrors torch/_dynamo/eval_frame.explain
and torch._dynamo.backends.debugging.ExplainWithBackend).

It runs ``fn`` once through a private cache with the "eager" backend and records every event:
the graphs compiled, the frames that fell back to eager with their reason and user line, the
guards of each entry, and the whole transformed program as readable Python (depyf style):
``guard_0``, ``__compiled_fn_0``, ``__transformed_code_0_fn``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .convert_frame import CacheEntry
from .eval_frame import FrameCache, optimize
from .exc import Unsupported
from .guards import Guard


@dataclass
class BreakReason:
    reason: str
    user_line: str | None

    def __str__(self) -> str:
        return f"{self.reason}\n    at {self.user_line}" if self.user_line else self.reason


@dataclass
class ExplainOutput:
    graphs: list[torch.fx.GraphModule] = field(default_factory=list)
    break_reasons: list[BreakReason] = field(default_factory=list)
    ops_per_graph: list[list[Any]] = field(default_factory=list)
    guards: list[Guard] = field(default_factory=list)
    entries: list[CacheEntry] = field(default_factory=list)
    # per graph: why mode="reduce-overhead" would run it without a CUDA graph (None: it may be
    # recorded). A later stage's answer: ``minicompile.explain`` (the composition root) fills it
    cudagraph_skips: list[str | None] = field(default_factory=list)

    # graph_count and graph_break_count have torch._dynamo.explain's exact definitions, so the
    # two can be compared side by side: the graphs handed to the backend, and one less than
    # that (the breaks *between* graphs). A frame that runs eagerly adds no graph and so no
    # break, and a function with no graph at all has -1 breaks, there as here. Every break and
    # every frame left to eager is still listed, with its reason, in ``break_reasons``.
    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def graph_break_count(self) -> int:
        return self.graph_count - 1

    @property
    def op_count(self) -> int:
        return sum(len(ops) for ops in self.ops_per_graph)

    @property
    def out_guards(self) -> list[Guard]:  # the name torch._dynamo.explain uses
        return self.guards

    def transformed_program(self) -> str:
        """Guards, graphs and transformed functions of every entry, as one readable program."""
        parts = []
        for i, entry in enumerate(self.entries):
            parts.append(f"# ---- {entry.code.co_name}: entry {i} "
                         + ("(a resume function: the original bytecode from offset "
                            f"{entry.code.co_name.split('_')[-2]} on)"
                            if entry.code.co_name.startswith("__resume_at_") else "") + "\n")
            parts.append(entry.guard.source.replace(f"def {entry.guard.name}(",
                                                    f"def guard_{i}(", 1))
            for g in entry.result.graphs:
                code = g.gm.code.strip().replace("def forward(self", f"def {g.name}(self", 1)
                parts.append(code + "\n")
            parts.append(entry.result.transformed_source)
        return "\n".join(parts)

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        lines += [f"  Break Reason {i + 1}: {r}" for i, r in enumerate(self.break_reasons)]
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph):
            lines.append(f"  Ops {i + 1}: " + ", ".join(_op_name(o) for o in ops))
        if self.cudagraph_skips:
            lines.append("CUDA graphs (mode='reduce-overhead'):")
            lines += [f"  Graph {i + 1}: {reason or 'may be recorded'}"
                      for i, reason in enumerate(self.cudagraph_skips)]
        lines.append("Transformed program:")
        lines += ["  " + l for l in self.transformed_program().splitlines()]
        return "\n".join(lines)


def _op_name(target: Any) -> str:
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))


def run_captured_graph(gm: Any, example_inputs: list) -> Callable:
    """explain's backend: run each captured graph as it is (what the "eager" backend does; the
    backends/ registry sits above this stage, so explain does not reach up to it)."""
    return gm.forward


run_captured_graph.supports_dynamic_shapes = True


def explain(fn: Callable) -> Callable[..., ExplainOutput]:
    def run(*args, **kwargs) -> ExplainOutput:
        out = ExplainOutput()
        cache = FrameCache()

        def record(event: str, payload: Any) -> None:
            if event == "compiled":
                entry: CacheEntry = payload
                out.entries.append(entry)
                out.guards.extend(entry.guard.guards)
                for g in entry.result.graphs:
                    out.graphs.append(g.gm)
                    out.ops_per_graph.append([n.target for n in g.gm.graph.nodes
                                              if n.op.startswith("call_")])
            elif event == "graph_break":  # graph_break.py: a GraphBreak (kind, reason, line)
                out.break_reasons.append(payload)
            elif event == "fallback":
                _code, e = payload
                err: Unsupported = e
                out.break_reasons.append(BreakReason(err.reason, err.user_line))

        cache.listeners.append(record)
        optimize(fn, backend=run_captured_graph, cache=cache)(*args, **kwargs)
        return out

    return run
