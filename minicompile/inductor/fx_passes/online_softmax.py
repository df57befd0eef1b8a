"""Softmax's two reductions as one (mirrors Inductor's ``prepare_softmax_online``, in
torch/_inductor/decomposition.py and lowering.py).

The decomposed softmax (and log-softmax, and cross-entropy through it) reduces its row twice::

    m = amax(x, dim, keepdim=True)
    s = sum(exp(x - m), dim, keepdim=True)      # reads the row again, after m is known

A row that fits one Triton program's registers is read once anyway (a persistent kernel keeps
it). A longer row is a loop over blocks of it, and the second reduction is a second loop: the
row comes from memory twice. :func:`fuse_online_softmax` replaces the two reductions by one node,
``prepare_softmax_online(x, dim) -> (m, s)``, lowered to one reduction that keeps a running max
and rescales the running sum whenever the max grows (``online_softmax_reduce``: one loop).

Only where kernels are Triton's (``uses_online``): a C++ row is in the cache for its second
pass, and the rescaling costs an exp per block there for nothing.
"""

from __future__ import annotations

import operator
from typing import Callable

import torch
import torch.fx

aten = torch.ops.aten


def prepare_softmax_online(x: torch.Tensor, dim: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(max, sum of exp(x - max)) over ``dim``, dims kept: the node :func:`fuse_online_softmax`
    writes (this body is what it means, and what runs if the graph is run as it is)."""
    m = torch.amax(x, dim, keepdim=True)
    return m, torch.sum(torch.exp(x - m), dim, keepdim=True)


def _dims(node: torch.fx.Node, dims) -> tuple[int, ...] | None:
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor) or not isinstance(dims, (list, tuple)) or not dims:
        return None
    return tuple(sorted(d % val.dim() for d in dims)) if val.dim() else None


def _max_of(sub: torch.fx.Node) -> tuple[torch.fx.Node, torch.fx.Node] | None:
    """(x, amax node) when ``sub`` is ``x - amax(x, dims, keepdim=True)``."""
    if sub.op != "call_function" or sub.target != aten.sub.Tensor or len(sub.args) != 2 \
            or sub.kwargs:
        return None
    x, amax = sub.args
    if not isinstance(amax, torch.fx.Node) or amax.target != aten.amax.default:
        return None
    if amax.args[0] is not x or not (len(amax.args) > 2 and amax.args[2] is True):
        return None
    return x, amax


def fuse_online_softmax(gm: torch.fx.GraphModule,
                        uses_online: Callable[[torch.device], bool]) -> int:
    """Replace each ``amax`` / ``sum(exp(x - amax))`` pair over the same float ``x`` and dims
    by one ``prepare_softmax_online`` node, on devices where ``uses_online(device)``. Returns
    how many pairs were replaced."""
    fused = 0
    for total in list(gm.graph.nodes):
        if total.op != "call_function" or total.target != aten.sum.dim_IntList \
                or total.kwargs.get("dtype") is not None:
            continue
        if not (len(total.args) > 2 and total.args[2] is True):
            continue
        exp = total.args[0]
        if not isinstance(exp, torch.fx.Node) or exp.target != aten.exp.default:
            continue
        found = _max_of(exp.args[0]) if isinstance(exp.args[0], torch.fx.Node) else None
        if found is None:
            continue
        x, amax = found
        val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        if not isinstance(val, torch.Tensor) or not val.dtype.is_floating_point \
                or not uses_online(val.device):
            continue
        dims = _dims(x, amax.args[1])
        if dims is None or dims != _dims(x, total.args[1]):
            continue
        with gm.graph.inserting_before(amax):
            both = gm.graph.call_function(prepare_softmax_online, (x, list(dims)))
            new_max = gm.graph.call_function(operator.getitem, (both, 0))
            new_sum = gm.graph.call_function(operator.getitem, (both, 1))
        both.meta["val"] = (amax.meta.get("val"), total.meta.get("val"))
        new_max.meta["val"], new_sum.meta["val"] = both.meta["val"]
        amax.replace_all_uses_with(new_max)
        total.replace_all_uses_with(new_sum)
        gm.graph.erase_node(total)
        if not exp.users:
            gm.graph.erase_node(exp)  # (log-softmax reads no exp(x - max) but the sum's)
        gm.graph.erase_node(amax)
        fused += 1
    if fused:
        gm.graph.lint()
        gm.recompile()
    return fused
