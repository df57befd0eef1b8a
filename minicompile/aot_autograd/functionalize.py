"""Functionalization: remove every mutation from a traced ATen graph (mini version of
torch/_subclasses/functional_tensor.py and torch/_functorch/_aot_autograd/functional_utils.py).

Compilers want pure graphs: a node's value must not change after it is computed, so that nodes
can be reordered, fused, recomputed. The traced graph may still contain in-place ops
(``add_``, ``bernoulli_``, ``copy_``) and mutations of the graph's inputs (a BatchNorm's running
statistics). The pass rewrites

    add_ = aten.add_.Tensor(x, y)     ->   add_ = aten.add.Tensor(x, y)   # a new value
    (later readers of x)              ->   read add_ instead               # "rebinding"

and when the mutated tensor is a graph input, records the node holding its final value: the
graph returns it as an extra output and the runtime wrapper copies it back into the input
(``input.copy_(new_value)``), as real AOTAutograd's runtime wrapper does. Real AOTAutograd gets
the pure graph another way: it functionalises *while* tracing (a ``FunctionalTensor`` mode below
the tracer records each in-place op in its out-of-place form), so no mutation ever enters its
graph; minicompile records the mutations first and removes them with this pass, so both sides
can be printed.

A write *through a view* (``x[0].add_(1)``, ``x.t().mul_(2)``) also changes the view's base,
the tensor that owns the storage (a graph input or an intermediate):

    select = aten.select.int(x, 0, 0)
    add = aten.add.Tensor(select, 1)                          # the view's new value
    x_new = aten.as_strided_scatter(x, add, [5], [1], 0)      # the base with that region replaced
    (later readers of x)  ->  read x_new;   an input: copy x_new back into it

An in-place change of a tensor's geometry (``y.t_()``, ``y.unsqueeze_(0)``, ``as_strided_``
that ATen's own ``adaptive_avg_pool2d`` applies to make its output channels-last) becomes the
view it amounts to (``t``, ``unsqueeze``, ``as_strided``).

A *different* view of the same storage, taken before the write and read after it (``m =
ones(); d = m.detach(); d[:, :3] = 0; gather(d, ...)``), must show the write: its later
readers read it taken again from the storage's new value (its view ops replayed on it), as
real functionalization regenerates the views of a mutated base.

What it refuses (raises Unsupported, so the backend falls back to eager): such a view that is
not a chain of view ops (an ``as_strided``, whose offset is absolute); in-place
metadata changes of the graph's inputs; writes with symbolic sizes through views other than
slices, selects, diagonals and ``as_strided`` (those are replayed with their ``*_scatter``, as
real functionalization does: ``cache[:, pos:pos + 1] = x`` at a symbolic ``pos``); writes to a
tensor that overlaps itself (``x.expand(3, 5).zero_()``).
"""

from __future__ import annotations

import operator

import torch
import torch.fx as fx

from .tracer import Unsupported

aten = torch.ops.aten

# Mutating ops whose functional twin does not follow the "drop the trailing underscore" rule.
FUNCTIONAL_OVERRIDES = {
    aten.bernoulli_.float: aten.bernoulli.p,
}


def _batch_norm(node: fx.Node) -> list[tuple[int, int]]:
    """native_batch_norm updates its running stats in training mode without saying so in its
    schema. Eval: nothing is written. Training: the functional op returns the new stats."""
    x, w, b, mean, var, training, momentum, eps = node.args
    if not training:
        node.target = aten._native_batch_norm_legit_no_training.default
        node.args = (x, w, b, mean, var, momentum, eps)
        return []
    if mean is None:  # training without running statistics (InstanceNorm): nothing to write,
        return []  # and not the eval op either: it would need statistics it does not have
    node.target = aten._native_batch_norm_legit_functional.default
    # the functional op returns 5 values: (out, save_mean, save_rstd, new_mean, new_var)
    node.meta["val"] = (*node.meta["val"], mean.meta["val"], var.meta["val"])
    return [(3, 3), (4, 4)]  # (argument index, output index of its new value)


# ops that mutate arguments in place -> rewrite the node, return (arg index, output index) pairs
SPECIAL_MUTATIONS = {
    aten.native_batch_norm.default: _batch_norm,
}


def is_mutating(op) -> bool:
    return isinstance(op, torch._ops.OpOverload) and (op._schema.is_mutable
                                                      or op in SPECIAL_MUTATIONS)


def functional_variant(op: torch._ops.OpOverload) -> torch._ops.OpOverload:
    """aten.add_.Tensor -> aten.add.Tensor: the op without the underscore whose arguments have
    the same types. Usually the same overload name, not always: ``pow_.Scalar(Tensor self,
    Scalar exponent)`` is ``pow.Tensor_Scalar`` (``pow.Scalar`` takes a Scalar base)."""
    if op in FUNCTIONAL_OVERRIDES:
        return FUNCTIONAL_OVERRIDES[op]
    name = op._schema.name.split("::")[1]
    packet = getattr(aten, name[:-1], None) if name.endswith("_") else None
    if packet is not None:
        same_name = getattr(packet, op._overloadname, None)
        others = [getattr(packet, o) for o in packet.overloads()]
        for overload in [same_name, *others]:
            if (overload is not None and not overload._schema.is_mutable
                    and _arg_types(overload) == _arg_types(op)):
                return overload
    raise Unsupported(f"no functional variant of the mutating op {op}")


def _fill_defaults(node: fx.Node, op: torch._ops.OpOverload) -> None:
    """Write out every argument the traced call left to ``op``'s defaults. The functional
    variant's defaults may differ or be missing: ``bernoulli_.float(self, float p=0.5)`` becomes
    ``bernoulli.p(self, float p)``, so ``x.bernoulli_()`` must become ``bernoulli.p(x, 0.5)``."""
    args, kwargs = list(node.args), dict(node.kwargs)
    for i, a in enumerate(op._schema.arguments):
        if not a.has_default_value() or a.name in kwargs or (not a.kwarg_only and i < len(args)):
            continue
        if a.kwarg_only:
            kwargs[a.name] = a.default_value
        elif i == len(args):
            args.append(a.default_value)
        else:  # unreachable: positional arguments are contiguous
            raise Unsupported(f"{op}: argument {a.name} out of order")
    node.args, node.kwargs = tuple(args), kwargs


def _arg_types(op: torch._ops.OpOverload) -> list[str]:
    return [str(a.type) for a in op._schema.arguments]


def _written_args(op: torch._ops.OpOverload) -> list[int]:
    return [i for i, a in enumerate(op._schema.arguments)
            if a.alias_info is not None and a.alias_info.is_write]


def _writes_out_only(op: torch._ops.OpOverload) -> bool:
    """An ``out=`` overload: the one argument it writes is the keyword-only ``out``."""
    args = op._schema.arguments
    return [args[i].name for i in _written_args(op)] == ["out"] and args[-1].kwarg_only


def _functional_out(node: fx.Node, op: torch._ops.OpOverload) -> fx.Node:
    """Rewrite an ``out=`` call into its functional overload (same arguments, no ``out``);
    returns the ``out`` tensor, whose new value the node now is. An ``out`` the call would
    resize or cast (a result of another shape or dtype) is refused."""
    out = node.kwargs["out"]
    wanted = [str(a.type) for a in op._schema.arguments if a.name != "out"]
    packet = getattr(aten, op._schema.name.split("::")[1])
    functional = next((o for o in map(packet.__getattr__, packet.overloads())
                       if not o._schema.is_mutable and _arg_types(o) == wanted), None)
    if functional is None:
        raise Unsupported(f"no functional variant of the out= op {op}")
    kwargs = {k: v for k, v in node.kwargs.items() if k != "out"}
    result, target = functional(*_vals(node.args), **_vals(kwargs)), out.meta["val"]
    if result.shape != target.shape or result.dtype != target.dtype:
        raise Unsupported(f"{op} resizes or casts its out= tensor")
    node.target, node.kwargs = functional, kwargs
    node.meta["val"] = result
    return out


def _writes_tensor_list(op: torch._ops.OpOverload) -> bool:
    """A foreach op in place (``_foreach_mul_.Scalar(Tensor(a!)[] self, ...)``): it writes the
    tensors of its first argument and returns nothing."""
    first = op._schema.arguments[0]
    return _written_args(op) == [0] and str(first.type) == "List[Tensor]" \
        and not op._schema.returns


def _functional_foreach(graph: fx.Graph, node: fx.Node, op: torch._ops.OpOverload) -> list:
    """Rewrite an in-place foreach call into its functional variant, which returns the list
    of new values: (each written tensor, the item of the result that is its new value)."""
    node.target = functional_variant(op)
    _fill_defaults(node, op)
    targets = node.args[0]
    node.meta["val"] = [t.meta["val"] for t in targets]  # the same shapes and dtypes
    versions, after = [], node
    for i, t in enumerate(targets):
        with graph.inserting_after(after):
            after = graph.call_function(operator.getitem, (node, i))
        after.meta["val"], after.meta["storage"] = t.meta["val"], t.meta.get("storage")
        versions.append((t, after))
    return versions


def _vals(args):
    """The example values of a node's arguments (fake tensors for nodes)."""
    return torch.fx.node.map_arg(args, lambda n: n.meta["val"])


def functionalize(gm: fx.GraphModule) -> dict[str, fx.Node]:
    """Rewrite ``gm`` in place into a mutation-free graph.

    Returns ``{placeholder name: node holding that input's final value}`` for every mutated
    input, in graph input order (the caller adds them as outputs)."""
    graph = gm.graph
    order = {n: i for i, n in enumerate(graph.nodes)}
    version_of: dict[fx.Node, fx.Node] = {}  # a node's "root": the input or value it updates
    latest: dict[fx.Node, fx.Node] = {}  # storage owner -> node holding its current value
    owner_of: dict[int, fx.Node] = {}  # storage key -> first node with it (input or allocation)
    for n in graph.nodes:
        owner_of.setdefault(n.meta.get("storage"), n)

    def root(n: fx.Node) -> fx.Node:
        while n in version_of:
            n = version_of[n]
        return n

    def rebind(old: fx.Node, new: fx.Node, after: fx.Node) -> None:
        """Readers of ``old`` that run after ``after`` read ``new`` instead."""
        for user in list(old.users):
            if user is not new and user is not after and order.get(user, -1) > order[after]:
                user.replace_input_with(old, new)

    for node in list(graph.nodes):
        if node.op != "call_function" or not is_mutating(node.target):
            continue
        op = node.target
        if torch.Tag.inplace_view in getattr(op, "tags", ()):
            _functional_view(node, op)
            continue
        if op in SPECIAL_MUTATIONS:
            new_versions = []
            for arg_i, out_i in SPECIAL_MUTATIONS[op](node):
                with graph.inserting_after(node):
                    get = graph.call_function(operator.getitem, (node, out_i))
                get.meta["val"] = node.args[arg_i].meta["val"]
                get.meta["storage"] = node.args[arg_i].meta.get("storage")
                new_versions.append((node.args[arg_i], get))
        elif _writes_out_only(op):  # torch.maximum(a, b, out=c): c's new value is maximum(a, b)
            new_versions = [(_functional_out(node, op), node)]
        elif _writes_tensor_list(op):  # _foreach_add_(xs, ys): xs[i]'s new value is item i
            new_versions = _functional_foreach(graph, node, op)
        else:
            written = _written_args(op)
            if written != [0] or op._schema.returns[0].alias_info is None:
                raise Unsupported(f"{op} writes arguments {written}; only `self` is handled")
            node.target = functional_variant(op)
            _fill_defaults(node, op)  # the variant may require what the in-place op defaulted
            new_versions = [(node.args[0], node)]  # the node itself is x's new version
        for old, new in new_versions:
            owner = owner_of.get(old.meta.get("storage"), old)
            if _overlaps_itself(old.meta.get("val")):
                raise Unsupported(f"{op} writes to {old.name}, which overlaps itself in memory "
                                  "(an expanded tensor)")
            stale = _stale_aliases(graph, old, node, order, root, owner)
            version_of[new] = old
            rebind(old, new, node)  # later readers of the written tensor read its new value
            if root(old) is not owner:
                # a write through a view: the owner's new value is its current value with the
                # view's region replaced (real functionalization replays the views with
                # *_scatter ops; one as_strided_scatter covers every view of static geometry)
                current = latest.get(owner, owner)
                if _static_geometry(current, new):
                    scatter = _scatter_into(graph, current, new, node)
                else:  # a symbolic position (a KV cache's write at `pos`): replay the views
                    scatter = _replay_views(graph, current, new, node,
                                            _view_chain(old, lambda n: root(n) is owner))
                version_of[scatter] = current
                rebind(current, scatter, node)
                new = scatter
            latest[owner] = new
            for alias in stale:  # its later readers read it taken again from the new value
                regenerated = _retake_view(graph, alias, new, root, owner)
                order.update({n: order[node] for n in _view_chain_nodes(regenerated, new)})
                rebind(alias, regenerated, node)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    return {p.name: latest[p] for p in placeholders if p in latest}


def _functional_view(node: fx.Node, op: torch._ops.OpOverload) -> None:
    """``y.t_()``, ``y.as_strided_(...)``: the tensor object ``y`` is seen with other sizes or
    strides from now on; its values do not change. The tracer has already bound the later uses
    of ``y`` to this node, so the node becomes the view (``t``, ``as_strided``) of ``y`` as it
    was (real functionalization replays such metadata changes as views the same way). Not for a
    graph input: the caller's own tensor would have to change shape after the call."""
    if node.args[0].op == "placeholder":
        raise Unsupported(f"{op} changes an input's metadata (sizes/strides) in place")
    packet = getattr(aten, op.overloadpacket.__name__[:-1], None)
    functional = getattr(packet, op._overloadname, None)
    if functional is None:
        raise Unsupported(f"{op} changes a tensor's metadata in place, and has no view twin")
    node.target = functional


def _scatter_into(graph: fx.Graph, base: fx.Node, view_value: fx.Node,
                  after: fx.Node) -> fx.Node:
    """``as_strided_scatter(base, view_value, size, stride, offset)``: ``base`` with the region
    the view covers replaced by the view's new value (offset relative to the base)."""
    base_val, view = base.meta["val"], view_value.meta["val"]
    if not _is_dense(base_val):
        raise Unsupported("a write through a view of a tensor that is itself not dense")
    # The traced views' offsets count from the start of the *input's* storage; the copy they
    # are scattered into starts at 0. ``view_origin``: where the input started, kept on every
    # copy, so each write's offset is relative to the input's first element.
    origin = base.meta.get("view_origin", base_val.storage_offset())
    offset = view.storage_offset() - origin
    if base.op == "placeholder":
        # ATen reads the offset in the base's own storage; an input may start anywhere in
        # its storage (``x[4:8]``, and offsets are not guarded): scatter into a fresh copy
        with graph.inserting_after(after):
            base = graph.call_function(aten.clone.default, (base,))
        base.meta["val"] = base_val = base_val.clone()  # what it is: same strides, offset 0
        base.meta["view_origin"] = origin
        after = base
    with graph.inserting_after(after):
        node = graph.call_function(aten.as_strided_scatter.default, (
            base, view_value, list(view.shape), list(view.stride()), offset))
    node.meta["val"] = base_val
    node.meta["view_origin"] = origin
    node.meta["storage"] = base.meta.get("storage")
    return node


def _static_geometry(base: fx.Node, view_value: fx.Node) -> bool:
    base_val, view = base.meta["val"], view_value.meta["val"]
    geometry = [*view.shape, *view.stride(), view.storage_offset(), base_val.storage_offset()]
    return all(isinstance(g, int) for g in geometry)


# view op -> its scatter: ``scatter(base, src, *view_args)`` is ``base`` with the region that
# ``view(base, *view_args)`` selects replaced by ``src`` (the arguments may be symbolic nodes)
VIEW_SCATTERS = {
    aten.slice.Tensor: aten.slice_scatter.default,  # base[..., start:end:step] = src
    aten.select.int: aten.select_scatter.default,  # base[..., index] = src
    aten.diagonal.default: aten.diagonal_scatter.default,
    aten.as_strided.default: aten.as_strided_scatter.default,
    # views of the whole tensor (``t.detach()``, an alias): all of base is replaced by src
    aten.detach.default: aten.copy.default,
    aten.alias.default: aten.copy.default,
}


def _view_chain(view: fx.Node, is_owner_version) -> list[fx.Node]:
    """The view ops from the written view down to a version of the storage's owner (top
    first), each one a row of :data:`VIEW_SCATTERS`."""
    chain = []
    while not is_owner_version(view):
        if view.op != "call_function" or view.target not in VIEW_SCATTERS:
            raise Unsupported(f"a write through {view.target} with symbolic sizes (only "
                              f"{', '.join(str(op) for op in VIEW_SCATTERS)} are replayed)")
        chain.append(view)
        view = view.args[0]
    return chain


def _replay_views(graph: fx.Graph, base: fx.Node, view_value: fx.Node, after: fx.Node,
                  chain: list[fx.Node]) -> fx.Node:
    """``base`` with the region ``chain`` selects replaced by ``view_value``, as real
    functionalization writes it: the views are taken again from ``base`` (the storage's current
    value), then each one's scatter puts the new value into the view below it, top down::

        v1 = slice(base, 0, 0, 2);  v1_new = slice_scatter(v1, value, 1, pos, pos + 1)
        base_new = slice_scatter(base, v1_new, 0, 0, 2)

    The view arguments are graph nodes when symbolic, so the position is read at run time."""
    bases = [base]  # bases[i]: what chain[-1 - i] views
    for view in reversed(chain[1:]):
        with graph.inserting_after(after):
            after = graph.call_function(view.target, (bases[-1], *view.args[1:]), view.kwargs)
        after.meta.update(val=view.meta["val"], storage=base.meta.get("storage"))
        bases.append(after)
    value = view_value
    for view, below in zip(chain, reversed(bases)):
        with graph.inserting_after(after):
            after = value = graph.call_function(VIEW_SCATTERS[view.target],
                                                (below, value, *view.args[1:]), view.kwargs)
        value.meta.update(val=below.meta["val"], storage=base.meta.get("storage"))
    value.meta["view_origin"] = base.meta.get("view_origin", 0)
    return value


def _is_dense(t: torch.Tensor) -> bool:
    """Its elements fill its storage span exactly once (any dim order): a clone keeps its
    strides, so as_strided geometry stays valid on it."""
    expected = 1
    for stride, size in sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _overlaps_itself(t: torch.Tensor | None) -> bool:
    """Whether two elements of ``t`` share memory (a broadcast dim). Eager allows ``fill_`` and
    ``zero_`` there; functionalized, the write becomes a dense result that neither the copy back
    into an input nor a store into the expanded layout can take. (A graph built by hand may
    carry no example value: nothing to check.)"""
    if t is None:
        return False
    return any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride()))


def _stale_aliases(graph, old, node, order, root, owner) -> list[fx.Node]:
    """The aliases a write would leave stale: views of the same storage, taken before the write
    and read after it, other than the written tensor's own versions and the storage's owner
    (both are rebound to the new values). Views taken after the write already read the new
    value. Each is taken again from the owner's new value (:func:`_retake_view`), as real
    functionalization regenerates every alias of a mutated base; one that is not a chain of
    views of the owner is refused."""
    key, stale = old.meta.get("storage"), []
    for other in graph.nodes:
        if other.meta.get("storage") != key or other is node or root(other) in (root(old), owner):
            continue
        if order.get(other, len(order)) > order[node]:
            continue
        if any(order.get(u, -1) > order[node] for u in other.users):
            if _retakeable_chain(other, root, owner) is None:
                raise Unsupported(f"{node.target} mutates {old.name} while its alias "
                                  f"{other.name} is read afterwards")
            stale.append(other)
    return stale


def _retakeable_chain(view: fx.Node, root, owner: fx.Node) -> list[fx.Node] | None:
    """The view ops from ``view`` down to a version of ``owner`` (top first), or None where one
    is not a view that can be taken again from a new value (``as_strided`` reads an absolute
    storage offset, which a fresh value does not keep)."""
    chain, view = [], root(view)  # (a view written earlier: the view op that made it)
    while view is not owner:
        op = view.target if view.op == "call_function" else None
        if not isinstance(op, torch._ops.OpOverload) or not op.is_view or \
                op is aten.as_strided.default:
            return None
        chain.append(view)
        view = root(view.args[0])
    return chain


def _retake_view(graph: fx.Graph, alias: fx.Node, base: fx.Node, root, owner) -> fx.Node:
    """``alias`` taken again from ``base`` (the owner's new value): its view ops replayed
    bottom up, after ``base``."""
    after = base
    for view in reversed(_retakeable_chain(alias, root, owner)):
        with graph.inserting_after(after):
            after = graph.call_function(view.target, (after, *view.args[1:]), view.kwargs)
        after.meta.update(val=view.meta["val"], storage=alias.meta.get("storage"))
    return after


def _view_chain_nodes(top: fx.Node, base: fx.Node) -> list[fx.Node]:
    """The nodes from ``top`` down to (not including) ``base``."""
    nodes = []
    while top is not base:
        nodes.append(top)
        top = top.args[0]
    return nodes
