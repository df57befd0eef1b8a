"""The decomposition table and its registration decorator (mini version of
torch/_decomp/__init__.py).

A decomposition is a Python function with the signature of one ATen overload, written with
simpler ATen ops. While tracing (aot_autograd/tracer.py), an op found in the table is replaced by
a call of its function; the ops that function calls are traced in turn, so rows compose
(``log_softmax`` uses ``logsumexp``'s pieces, ``cross_entropy`` uses ``log_softmax``).

    @register_decomposition(aten.silu.default)
    def silu(x):
        return aten.mul.Tensor(x, aten.sigmoid.default(x))     # x * sigmoid(x)
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable

import torch
import torch.fx as fx

aten = torch.ops.aten
OpOverload = torch._ops.OpOverload

decomposition_table: dict[OpOverload, Callable] = {}


def register_decomposition(ops: OpOverload | Iterable[OpOverload],
                           table: dict | None = None) -> Callable[[Callable], Callable]:
    """Register ``fn`` as the decomposition of ``ops`` (in ``table``, default: the global one).
    Users register their own the same way; a later registration replaces an earlier one."""
    table = decomposition_table if table is None else table
    ops = [ops] if isinstance(ops, OpOverload) else list(ops)

    def register(fn: Callable) -> Callable:
        for op in ops:
            if not isinstance(op, OpOverload):
                raise TypeError(f"register an overload (aten.gelu.default), not {op}")
            table[op] = fn
        return fn

    return register


def get_decompositions(ops: Iterable[OpOverload]) -> dict[OpOverload, Callable]:
    """A sub-table with only these ops (like torch._decomp.get_decompositions)."""
    return {op: decomposition_table[op] for op in ops if op in decomposition_table}


def ops_used(gm: fx.GraphModule) -> Counter:
    """How many times each ATen op appears in ``gm``."""
    return Counter(n.target for n in gm.graph.nodes
                   if n.op == "call_function" and isinstance(n.target, OpOverload))


def is_core_aten(op: OpOverload) -> bool:
    """PyTorch's own definition of the core ATen set (the ops tagged ``core``), plus views
    and size queries, which every backend handles as index arithmetic."""
    return torch.Tag.core in op.tags or op.is_view or op is aten.sym_size.int


def core_aten_ops_used(gm: fx.GraphModule) -> dict[str, dict[str, int]]:
    """The ops a backend must implement to run ``gm``: ``{"core": {...}, "non_core": {...}}``
    with counts. After decomposition the non-core part should be (nearly) empty."""
    report: dict[str, dict[str, int]] = {"core": {}, "non_core": {}}
    for op, n in sorted(ops_used(gm).items(), key=lambda kv: str(kv[0])):
        report["core" if is_core_aten(op) else "non_core"][str(op)] = n
    return report
