"""Split a joint graph into a forward and a backward graph (mini version of
torch/_functorch/partitioners.py).

Everything the backward reads from the forward must be *saved* (kept alive between the two
passes): the choice of what to save is the whole game. Two policies:

- ``default_partition``: the forward computes exactly what its outputs need; every forward
  value the backward reads is saved.
- ``min_cut_rematerialization_partition``: choose the cheapest set of tensors to save, letting
  the backward *recompute* cheap pointwise ops from them. "Cheapest" is a minimum s-t cut in a
  graph weighted by tensor bytes (networkx), where ops we never recompute (matmuls, reductions,
  random ops) are pinned to the forward.

Under both, the nodes of an activation-checkpointed region (tagged ``recompute``:
dynamo/variables/checkpoint.py) are not saved: the region's inputs (and its random ops'
outputs) are, and the backward recomputes the rest (``recompute_checkpointed``).

Both return a :class:`Partition`: the forward graph ``primals -> (outputs, saved...)``, the
backward graph ``(saved..., tangents) -> grads``, and what was saved, with its size in bytes.
"""

from __future__ import annotations

import logging
import math
import operator
from dataclasses import dataclass

import networkx as nx
import sympy
import torch
import torch.fx as fx

aten = torch.ops.aten
log = logging.getLogger(__name__)


@dataclass
class Partition:
    fw_module: fx.GraphModule  # primals -> (*outputs, *saved tensors, *saved sizes)
    bw_module: fx.GraphModule  # (*saved tensors, *saved sizes, *tangents) -> grads
    saved: list[str]  # names of the saved joint-graph nodes, tensors first
    num_saved_tensors: int
    saved_bytes: int  # bytes of tensors kept alive from forward to backward

    def __iter__(self):  # fw, bw = partition (the shape of the real partitioners' result)
        return iter((self.fw_module, self.bw_module))

    def __repr__(self) -> str:
        return (f"Partition(saved={self.saved}, saved_bytes={self.saved_bytes}, "
                f"fw_ops={_num_ops(self.fw_module)}, bw_ops={_num_ops(self.bw_module)})")


def _num_ops(gm: fx.GraphModule) -> int:
    return sum(n.op == "call_function" for n in gm.graph.nodes)


# --- small graph queries ---------------------------------------------------------------------
def primals_and_tangents(graph: fx.Graph) -> tuple[list[fx.Node], list[fx.Node]]:
    ph = [n for n in graph.nodes if n.op == "placeholder"]
    return ([n for n in ph if not n.name.startswith("tangents")],
            [n for n in ph if n.name.startswith("tangents")])


def split_outputs(graph: fx.Graph, num_fwd_outputs: int) -> tuple[list, list]:
    outs = list(graph.output_node().args[0])
    return outs[:num_fwd_outputs], outs[num_fwd_outputs:]


def ancestors(nodes, stop: set[fx.Node] = frozenset()) -> set[fx.Node]:
    """``nodes`` and everything they read, transitively (not walking past ``stop``)."""
    seen, todo = set(), [n for n in nodes if isinstance(n, fx.Node)]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n not in stop:
            todo.extend(n.all_input_nodes)
    return seen


def descendants(nodes) -> set[fx.Node]:
    seen, todo = set(), list(nodes)
    while todo:
        n = todo.pop()
        if n not in seen and n.op != "output":
            seen.add(n)
            todo.extend(n.users)
    return seen


def is_sym(node: fx.Node) -> bool:
    """A size or scalar (SymInt, SymFloat, int) rather than a tensor: saved on ctx, not as a tensor."""
    return "sym_expr" in node.meta or isinstance(node.meta.get("val"), (
        torch.SymInt, torch.SymFloat, int, float))


def tensor_bytes(node: fx.Node) -> int:
    """Size of a node's value; a symbolic size counts with its example (hint) value."""
    val = node.meta.get("val")
    if is_sym(node):
        return 8
    if isinstance(val, torch.Tensor):
        numel = val.numel()
        if isinstance(numel, torch.SymInt):
            numel = numel.node.hint if numel.node.has_hint() else 4096
        return int(numel) * val.element_size()
    return math.inf  # a tuple (multi-output op): save its getitems instead


# --- extracting a sub-graph ------------------------------------------------------------------
def extract_graph(joint: fx.GraphModule, inputs: list[fx.Node], outputs: list) -> fx.GraphModule:
    """The graph computing ``outputs`` from ``inputs``: every node between them is copied
    (and so recomputed if the other graph also has it)."""
    needed = ancestors(outputs, stop=set(inputs))
    new, env = fx.Graph(), {}
    for n in inputs:
        env[n] = new.placeholder(n.name)
        env[n].meta = dict(n.meta)
    for n in joint.graph.nodes:
        if n in env or n not in needed or n.op == "output":
            continue
        if n.op == "placeholder":
            raise ValueError(f"{n.name} is needed but is not an input of this graph: "
                             "the saved set does not cover what the backward reads")
        env[n] = new.node_copy(n, lambda x: env[x])
    new.output([env[o] if isinstance(o, fx.Node) else o for o in outputs])
    gm = fx.GraphModule(joint, new)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def partition_with_saved(joint: fx.GraphModule, saved: list[fx.Node],
                         num_fwd_outputs: int) -> Partition:
    """Build both graphs once the saved set is chosen."""
    primals, tangents = primals_and_tangents(joint.graph)
    fw_outs, grads = split_outputs(joint.graph, num_fwd_outputs)
    saved = list(dict.fromkeys(recompute_checkpointed(saved)))  # dedupe, keep order
    tensors = [n for n in saved if not is_sym(n)]
    syms = [n for n in saved if is_sym(n)]
    saved = tensors + syms + symbol_bindings(joint, saved, tangents)
    fw = extract_graph(joint, primals, fw_outs + saved)
    # the forward's outputs start as the joint's: which of them are new values of inputs
    # (``joint.py``) holds for it too, so a backend may write those into the inputs
    fw.meta["mutated_inputs"] = dict(joint.meta.get("mutated_inputs", {}))
    bw = extract_graph(joint, saved + tangents, grads)
    return Partition(fw, bw, [n.name for n in saved], len(tensors),
                     sum(tensor_bytes(n) for n in tensors))


# --- activation checkpointing: what a checkpointed region recomputes ---------------------------
def is_recomputed(node: fx.Node) -> bool:
    """A node of a checkpointed region (tagged by dynamo/variables/checkpoint.py, the tag
    carried onto its ATen nodes by the tracer) that the backward recomputes: not a random op,
    whose recomputation would draw other numbers than the forward's (its output is saved,
    where eager's checkpoint keeps the RNG state to replay), and not a size."""
    return node.meta.get("recompute") is not None and node.op == "call_function" \
        and not is_sym(node) and not (isinstance(node.target, torch._ops.OpOverload)
                                      and torch.Tag.nondeterministic_seeded in node.target.tags)


def recompute_checkpointed(saved: list[fx.Node]) -> list[fx.Node]:
    """``saved`` with each node of a checkpointed region replaced by what it is computed from,
    walking back to the region's inputs (and its random ops' outputs): those are saved, and
    ``extract_graph`` copies the region's nodes the backward reads into the backward, where
    they are recomputed (real partitioners' ``must_recompute``). A node reading one output of
    an op with several (a getitem) stays saved when that op is not recomputed: only tensors
    are saved, never the op's tuple."""
    result, todo, seen = [], list(reversed(saved)), set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if not is_recomputed(n) or any(isinstance(i.meta.get("val"), (tuple, list))
                                       and not is_recomputed(i) for i in n.all_input_nodes):
            result.append(n)
        else:
            todo.extend(reversed(n.all_input_nodes))
    return result


# --- the size symbols the backward reads ------------------------------------------------------
def _exprs(node: fx.Node) -> list[sympy.Basic]:
    """The formulas of a value's sizes and strides, or of a size."""
    if "sym_expr" in node.meta:
        return [sympy.sympify(node.meta["sym_expr"])]
    val = node.meta.get("val")
    values = [*val.shape, *val.stride()] if isinstance(val, torch.Tensor) else [val]
    return [v.node.expr for v in values if isinstance(v, (torch.SymInt, torch.SymFloat))]


def _symbols(node: fx.Node) -> set[sympy.Symbol]:
    """The size symbols a value's sizes and strides, or a size's formula, use."""
    return {s for e in _exprs(node) for s in e.free_symbols}


def _readable(node: fx.Node) -> set[sympy.Symbol]:
    """The symbols a backend can read off the value (a size ``s1``, not a formula ``s1 + s2``)."""
    return {e for e in _exprs(node) if isinstance(e, sympy.Symbol)}


def _bound_symbol(node: fx.Node) -> sympy.Symbol | None:
    """The symbol a size node is (``sym_size(x, 1)``: s1), None for a tensor or a formula."""
    val = node.meta.get("val")
    expr = node.meta.get("sym_expr", val.node.expr if isinstance(val, torch.SymInt) else None)
    return expr if isinstance(expr, sympy.Symbol) else None


def symbol_bindings(joint: fx.GraphModule, saved: list[fx.Node],
                    tangents: list[fx.Node]) -> list[fx.Node]:
    """Forward nodes reading each size symbol that the backward's inputs use but no saved size
    is (torch's ``_extract_fwd_bwd_modules``: "we propagate all symbols which are referenced
    by backwards inputs"). A backend reads each symbol from an input: a backward given only
    ``s1`` and ``s1 + s2`` (``cat``'s split points) and a tangent of ``s1 + s2`` rows could
    read no ``s2``. Where no forward node reads a symbol, one ``sym_size`` of a primal is
    added."""
    inputs = [*saved, *tangents]
    needed = set().union(*map(_symbols, inputs)) - set().union(*map(_readable, inputs))
    if not needed:
        return []
    backward = descendants(tangents)
    found = {}
    for n in joint.graph.nodes:
        if n not in backward and _bound_symbol(n) in needed:
            found.setdefault(_bound_symbol(n), n)
    primals, _ = primals_and_tangents(joint.graph)
    for symbol in sorted(needed - found.keys(), key=str):
        found[symbol] = _read_symbol(joint.graph, primals, symbol)
    return [found[s] for s in sorted(needed, key=str) if found[s] is not None]


def _read_symbol(graph: fx.Graph, primals: list[fx.Node], symbol: sympy.Symbol) -> fx.Node | None:
    """A new ``sym_size``/``sym_stride`` node of the first primal whose size or stride is
    ``symbol`` (None where none is: the backend then says which symbol it cannot read)."""
    for p in primals:
        val = p.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        for op, values in ((aten.sym_size.int, val.shape), (aten.sym_stride.int, val.stride())):
            for dim, v in enumerate(values):
                if isinstance(v, torch.SymInt) and v.node.expr == symbol:
                    with graph.inserting_after(primals[-1]):
                        node = graph.call_function(op, (p, dim))
                    node.meta.update(sym_expr=symbol, val=v)
                    return node
    return None


# --- the default policy ----------------------------------------------------------------------
def default_saved_values(joint: fx.Graph, num_fwd_outputs: int) -> list[fx.Node]:
    """Forward = what the forward outputs need (plus size computations); save every forward
    value that a backward node reads."""
    primals, tangents = primals_and_tangents(joint)
    fw_outs, _ = split_outputs(joint, num_fwd_outputs)
    bw_only = descendants(tangents)
    forward = ancestors(fw_outs) | set(primals)
    forward |= {n for n in joint.nodes if is_sym(n) and n not in bw_only}
    saved = []
    for n in joint.nodes:
        if n in forward and any(u not in forward and u.op != "output" for u in n.users):
            # a multi-output op cannot be saved as a whole: save the pieces the backward reads
            if isinstance(n.meta.get("val"), (tuple, list)):
                saved += [u for u in n.users if u.target is operator.getitem]
            else:
                saved.append(n)
    return saved


def default_partition(joint: fx.GraphModule, num_fwd_outputs: int) -> Partition:
    return partition_with_saved(joint, default_saved_values(joint.graph, num_fwd_outputs),
                                num_fwd_outputs)


# --- min-cut rematerialization ---------------------------------------------------------------
# Recomputing these in the backward costs little compute and saves their output's memory.
RECOMPUTABLE_EXTRA = {aten.full.default, aten.zeros.default, aten.ones.default,
                      aten.sym_size.int, operator.getitem, operator.add, operator.mul,
                      operator.floordiv, aten.clone.default, aten._to_copy.default,
                      aten.expand.default, aten.where.self}


def is_recomputable(node: fx.Node) -> bool:
    """Cheap pointwise ops, views and constants: yes. Matmul, reductions, random ops: never."""
    t = node.target
    if node.op != "call_function":
        return node.op == "get_attr"
    if t in RECOMPUTABLE_EXTRA:
        return True
    if not isinstance(t, torch._ops.OpOverload) or torch.Tag.nondeterministic_seeded in t.tags:
        return False
    if not any(not is_sym(a) for a in node.all_input_nodes):  # a constant (scalar_tensor,
        return True  # full, arange...): made in the backward, never saved
    return torch.Tag.pointwise in t.tags or t.is_view


# The real partitioner's main heuristics (torch/_functorch/partitioners.py:
# should_ban_recomputation and get_node_weight), as two knobs:
MAX_FAN_IN = 4  # never recompute an op that reads more than 4x the bytes it produces
MAX_CHAIN = 4  # never recompute more than 4 pointwise ops in a row back to a saved value
DISTANCE_PENALTY = 1.1  # saving a value d ops before the backward costs bytes * 1.1**d
NOT_MATERIALIZED_FACTOR = 2  # ... and twice that if nothing else writes it (``is_materialized``)


def _is_view(node: fx.Node) -> bool:
    return isinstance(node.target, torch._ops.OpOverload) and node.target.is_view


def ban_recomputation_reason(node: fx.Node) -> str | None:
    """Why ``node`` must be computed in the forward (and saved if the backward needs it), or
    None if the backward may recompute it."""
    if not is_recomputable(node):  # matmul, convolution, reductions, random ops
        return "not a cheap pointwise op or view"
    if _is_view(node):  # index arithmetic on its base, reads nothing: no fan-in to speak of
        return None  # (banning one would also make it unsaveable: its cut edge is infinite)
    read = sum(tensor_bytes(a) for a in node.all_input_nodes if not is_sym(a))
    if node.op == "call_function" and read > MAX_FAN_IN * tensor_bytes(node):
        # e.g. a broadcasting op reading large tensors to make a small one: recomputing it
        # would keep those large inputs alive instead (recomputation "fan-in")
        return f"reads more than {MAX_FAN_IN}x the bytes it produces"
    return None


def recompute_chain_lengths(nodes: list[fx.Node]) -> dict[fx.Node, int]:
    """For each recomputable node, the longest run of recomputable ops ending at it (its
    inputs' runs + 1; a banned node or an input starts from 0): what recomputing it would
    replay in the backward if nothing in between were saved."""
    length: dict[fx.Node, int] = {}
    for n in nodes:  # graph order: inputs first
        if n.op != "call_function" or ban_recomputation_reason(n):
            length[n] = 0
        else:  # a view is free: it does not lengthen the run
            longest = max((length.get(a, 0) for a in n.all_input_nodes), default=0)
            length[n] = longest if _is_view(n) else longest + 1
    return length


def distance_from_backward(graph: fx.Graph, nodes: set[fx.Node],
                           backward: set[fx.Node]) -> dict[fx.Node, int]:
    """Fewest data edges from each node of ``nodes`` (maybe none: a graph that only returns
    parameters) to a backward node that (transitively) reads it."""
    dist = {n: 0 for n in backward}
    for n in reversed([n for n in graph.nodes if n in nodes]):
        if n not in dist:
            dist[n] = min((dist[u] + 1 for u in n.users if u in dist), default=10**6)
    return dist


def is_fusible(node: fx.Node) -> bool:
    """An op a compiler fuses with its producers (pointwise ops, views, reductions): it reads
    them inside its own loops, from registers."""
    t = node.target
    return is_recomputable(node) or (isinstance(t, torch._ops.OpOverload)
                                     and torch.Tag.reduction in t.tags)


def is_materialized(node: fx.Node) -> bool:
    """Is ``node`` written to memory whatever is saved? An input is; so is a library call's
    result (a matmul's), and a value some user cannot fuse with (a matmul's operand). A value
    that fuses with all its users lives in registers only: saving it adds a write to the
    forward (the real partitioner's ``is_materialized`` with its ``is_fusible(a, b)``)."""
    return node.op == "placeholder" or not is_fusible(node) or \
        not all(_fuses_with(u) for u in node.users)


def _fuses_with(user: fx.Node) -> bool:
    """Whether ``user`` reads its input inside its own loops. A view reads nothing itself: its
    readers decide (a linear layer's output viewed into heads for an attention call is written
    to memory for that call)."""
    if _is_view(user):
        return all(_fuses_with(u) for u in user.users)
    return is_fusible(user)


def save_cost(node: fx.Node, dist: int) -> float:
    """Capacity of a node's cut edge. Bytes, times 1.1 per op of distance to the backward: a
    value far from its backward use lives longer, and saving values close to the backward
    keeps long recomputation chains out of it; twice that for a value that would otherwise
    never be written (``is_materialized``: a batch norm saves its input, which exists anyway,
    rather than its normalized values, written only to be saved). Views are free to recompute
    from their base (save the base instead): infinite."""
    if _is_view(node):
        return math.inf
    cost = tensor_bytes(node) * DISTANCE_PENALTY ** min(dist, 100)
    return cost if is_materialized(node) else NOT_MATERIALIZED_FACTOR * cost


def min_cut_saved_values(joint: fx.Graph, num_fwd_outputs: int) -> list[fx.Node]:
    """The cheapest set of values to save, by a minimum source-sink cut.

    Each node n becomes an edge n_in -> n_out whose capacity is what saving n costs
    (``save_cost``: its bytes, weighted by distance to the backward); data edges
    n_out -> user_in are uncuttable. The source feeds the primals and every forward op the
    backward must not recompute (``ban_recomputation_reason``); every node that reads a
    tangent drains to the sink (it can only run in the backward). A cut separates what the
    forward computes from what the backward computes; the cut edges are the saved values.
    """
    primals, tangents = primals_and_tangents(joint)
    fw_outs, grads = split_outputs(joint, num_fwd_outputs)
    # the gradients are the backward's outputs even where no tangent reaches them (angle's
    # gradient of a real tensor is zeros_like(x)): what they read must be saved too
    must_be_backward = descendants(tangents) | {g for g in grads if isinstance(g, fx.Node)}
    forward = ancestors(fw_outs)
    relevant = ancestors(fw_outs + grads)
    dist = distance_from_backward(joint, relevant, must_be_backward & relevant)
    chain = recompute_chain_lengths([n for n in joint.nodes if n in relevant])
    g = nx.DiGraph()
    for n in relevant:
        if n.op == "output":
            continue
        if n in must_be_backward:
            g.add_edge(n.name + "_in", "sink")  # no capacity attribute = infinite
        elif n in primals or (n in forward and ban_recomputation_reason(n)):
            g.add_edge("source", n.name + "_in")
        elif n in forward and chain[n] > MAX_CHAIN and not _is_view(n):  # too long to replay
            g.add_edge("source", n.name + "_in")
        capacity = save_cost(n, dist.get(n, 0))
        if capacity == math.inf:
            g.add_edge(n.name + "_in", n.name + "_out")
        else:
            g.add_edge(n.name + "_in", n.name + "_out", capacity=capacity)
        for u in n.users:
            if u in relevant and u.op != "output":
                g.add_edge(n.name + "_out", u.name + "_in")
    if "source" not in g or "sink" not in g:  # nothing flows from forward to backward
        return []
    try:
        _, (source_side, _) = nx.minimum_cut(g, "source", "sink")
    except nx.NetworkXUnbounded:  # a forward-only value the backward reads cannot be saved
        log.warning("min-cut partitioner: no finite cut (a path of unsaveable values joins "
                    "the forward to the backward); using the default partition")
        return default_saved_values(joint, num_fwd_outputs)
    by_name = {n.name: n for n in joint.nodes}
    saved = [by_name[name[:-3]] for name in source_side
             if name.endswith("_in") and name[:-3] + "_out" not in source_side]
    order = {n: i for i, n in enumerate(joint.nodes)}
    return sorted(saved, key=order.__getitem__)


def min_cut_rematerialization_partition(joint: fx.GraphModule,
                                        num_fwd_outputs: int) -> Partition:
    return partition_with_saved(joint, min_cut_saved_values(joint.graph, num_fwd_outputs),
                                num_fwd_outputs)


PARTITIONERS = {
    "default": default_partition,
    "min_cut": min_cut_rematerialization_partition,
}
