"""Watch the symbolic interpreter work, one instruction at a time (a teaching view with no real
counterpart; real Dynamo prints a similar trace with ``TORCH_LOGS=+dynamo``).

    from minicompile.viz.symbolic_steps import trace_steps
    trace_steps(fn, x, y)       # a table: instruction, the symbolic stack after it, new FX nodes

Each row shows what the instruction did to the *symbolic* stack: tensors are TensorVariables
wrapping FX proxies, so ``BINARY_OP +`` pops two of them and pushes a third whose proxy is a new
``add`` node in the graph, while constants fold away at trace time.
"""

from __future__ import annotations

import html
import inspect
from dataclasses import dataclass

from ..dynamo import handlers_data, handlers_flow  # noqa: F401  (registers the handlers)
from ..dynamo.output_graph import OutputGraph
from ..dynamo.symbolic_convert import InstructionTranslator


@dataclass
class Step:
    offset: int
    opname: str
    argrepr: str
    stack: list[str]  # the symbolic stack after the instruction, bottom first
    new_nodes: list[str]  # FX nodes the instruction added to the graph


class StepTable(list):
    """A list of Steps that renders as a table (text, or HTML in Jupyter)."""

    def __str__(self) -> str:
        rows = [f"{'offset':>6}  {'instruction':<28} {'stack after (bottom .. top)':<58} new FX nodes"]
        for s in self:
            ins = f"{s.opname} {s.argrepr}".strip()
            rows.append(f"{s.offset:>6}  {ins[:28]:<28} {' | '.join(s.stack)[:58]:<58} "
                        f"{', '.join(s.new_nodes)}")
        return "\n".join(rows)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = "<tr><th>offset</th><th>instruction</th><th>symbolic stack after</th><th>new FX nodes</th></tr>"
        body = "".join(
            f"<tr><td>{s.offset}</td><td><code>{html.escape(s.opname)} {html.escape(s.argrepr)}</code></td>"
            f"<td><code>{html.escape(' | '.join(s.stack))}</code></td>"
            f"<td><code>{html.escape(', '.join(s.new_nodes))}</code></td></tr>"
            for s in self)
        return f"<table>{head}{body}</table>"


def _short(vt) -> str:
    """VariableTracker -> a few characters: TensorVariable(add), Constant(2), NULL."""
    name = type(vt).__name__.removesuffix("Variable")
    proxy = getattr(vt, "proxy", None)
    if proxy is not None:
        return f"{name}({proxy.node.name})"
    if vt.is_python_constant():
        value = vt.as_python_constant()
        shown = getattr(value, "__name__", None) or repr(value)  # torch.sin -> sin, not its repr
        return f"{name}({shown})"[:40]
    return name or "NULL"


class _SteppingTranslator(InstructionTranslator):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.steps = StepTable()

    def step(self) -> None:
        inst = self.instructions[self.index]
        before = set(self.output.graph.nodes)
        super().step()
        new = [n.name for n in self.output.graph.nodes if n not in before]
        self.steps.append(Step(inst.offset, inst.opname, inst.argrepr,
                               [_short(v) for v in self.stack], new))


def trace_steps(fn, *args, **kwargs) -> StepTable:
    """Symbolically run ``fn``'s bytecode on ``args`` and record every step (no compilation)."""
    bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
    bound.apply_defaults()
    f_locals = dict(bound.arguments)
    output = OutputGraph(fn, list(f_locals), backend=lambda gm, ex: gm.forward)
    tx = _SteppingTranslator(fn.__code__, fn.__globals__, f_locals, fn.__closure__, output)
    tx.run()
    return tx.steps
