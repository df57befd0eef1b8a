"""The bytecode listing next to the FX graph it produced.

Every node the mini Dynamo creates records the instruction that created it
(``node.meta["root_instruction"]``: offset, opname, line of the compiled frame; nodes made inside
an inlined call point at the CALL that inlined them, ``node.meta["instruction"]`` has the inner
instruction). ``BytecodeGraphTable`` lines the two up::

    from minicompile.viz.bytecode import bytecode_and_graph
    bytecode_and_graph(fn, x)          # HTML table in Jupyter, text in a terminal
"""

from __future__ import annotations

import dis
import html
import types
from dataclasses import dataclass
from typing import Any, Callable

import torch

import minicompile as mc


@dataclass
class Row:
    offset: int
    lineno: int | None
    opname: str
    argrepr: str
    nodes: list[str]  # "add = operator.add(sin, 1)" for each node made by this instruction


def _node_text(n: torch.fx.Node) -> str:
    target = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", str(n.target))
    args = ", ".join(a.name if isinstance(a, torch.fx.Node) else repr(a) for a in n.args)
    inner = n.meta.get("instruction")
    via = f"  [{inner[3]}: {inner[1]}]" if inner and n.meta.get("root_instruction") and \
        inner[0:2] != n.meta["root_instruction"][0:2] else ""
    return f"{n.name} = {n.op} {target}({args}){via}"


class BytecodeGraphTable:
    def __init__(self, code: types.CodeType, gm: torch.fx.GraphModule):
        by_offset: dict[int, list[str]] = {}
        for n in gm.graph.nodes:
            meta = n.meta.get("root_instruction")
            if meta is not None:
                by_offset.setdefault(meta[0], []).append(_node_text(n))
        self.code = code
        self.inputs = [f"{n.name}  <- {n.meta.get('source', n.target)}"
                       for n in gm.graph.nodes if n.op == "placeholder"]
        self.rows, lineno = [], None
        for ins in dis.get_instructions(code):
            if ins.opname == "CACHE":
                continue
            if ins.positions is not None and ins.positions.lineno is not None:
                lineno = ins.positions.lineno
            self.rows.append(Row(ins.offset, lineno, ins.opname, ins.argrepr,
                                 by_offset.get(ins.offset, [])))

    def __str__(self) -> str:
        lines = [f"graph inputs: {', '.join(self.inputs) or '-'}"]
        for r in self.rows:
            left = f"{r.lineno or '':>4} {r.offset:>4} {r.opname:<22} {r.argrepr[:24]:<24}"
            lines.append(left + (" | " + r.nodes[0] if r.nodes else ""))
            lines += [" " * len(left) + " | " + n for n in r.nodes[1:]]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        head = ("<tr><th>line</th><th>offset</th><th>instruction</th><th>argument</th>"
                "<th>FX nodes created</th></tr>")
        body = []
        for r in self.rows:
            style = ' style="background:#eef6ff"' if r.nodes else ""
            body.append(f"<tr{style}><td>{r.lineno or ''}</td><td>{r.offset}</td>"
                        f"<td><code>{esc(r.opname)}</code></td><td><code>{esc(r.argrepr)}</code>"
                        f"</td><td><code>{'<br>'.join(esc(n) for n in r.nodes)}</code></td></tr>")
        inputs = esc(", ".join(self.inputs) or "-")
        return (f"<p>graph inputs: <code>{inputs}</code></p><table style='font-size:12px'>"
                f"{head}{''.join(body)}</table>")


def bytecode_and_graph(fn: Callable, *args: Any, **kwargs: Any) -> BytecodeGraphTable:
    """Capture ``fn(*args)`` with mc.explain and line its bytecode up with its first graph."""
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    out = mc.explain(target)(*args, **kwargs)
    if not out.graphs:
        raise ValueError(f"nothing was captured: {out.break_reasons}")
    code = getattr(target, "__func__", target).__code__
    return BytecodeGraphTable(code, out.graphs[0])
