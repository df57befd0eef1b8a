"""Write mutated graph inputs in place (mirrors torch/_inductor/fx_passes/reinplace.py).

Functionalization (aot_autograd/functionalize.py) turns ``x[:, 0] = y.sin()`` into a pure
graph that builds the whole new value of ``x`` and returns it; the runtime wrapper then copies
it back into ``x``. ``gm.meta["mutated_inputs"]`` says which outputs are such new values:

    clone = aten.clone(x)                                          # read all of x, write a copy
    x_new = aten.as_strided_scatter(clone, sin, [10], [10], 0)     # copy it again, with a column
    return [..., x_new]                                            # + the wrapper's x.copy_(x_new)

When the new value is the input with some elements replaced (a chain of scatters into it), the
compiled code can write those elements straight into the input instead. This pass decides where
that is safe and marks the nodes ``node.meta["reinplace"] = True``; the lowering then writes
into the input's storage (``lowerings/mutation.py``, ``ir/mutation.py``), the graph returns the
input itself as its new value, and the wrapper has nothing to copy:

    x_new = as_strided_scatter(clone, sin, ...)   # marked: store sin into x[:, 0], in x
    (clone: marked too, it becomes x itself: nothing reads the copy but the write into it)

Safe means nothing reads the old value after the write. In place, the old value stops existing
when the write runs, so every other reader of it (through views too) must be something the
write waits for anyway: an ancestor of the write in the graph, like the ``x[:, 0]`` that
``x[:, 0] += 1`` reads. ``y = x.clone(); x[0] = 1; return y + x`` keeps the copy: the addition
reads the old ``x`` (through ``y``) and runs after the write. An input sharing its storage with
another input keeps it too (a write into one would show through the other), and so does a new
value that is also returned for another reason. The scheduler then keeps each kernel that writes
in place from reading the input at any other element than the one it writes
(``fusion.py``).
"""

from __future__ import annotations

import torch
import torch.fx as fx

aten = torch.ops.aten

# Ops whose result is their first argument with some elements replaced: each can write those
# elements into the first argument's storage instead (``lowerings/mutation.py`` has a row each).
SCATTER_OPS = {
    aten.as_strided_scatter.default,  # a write through a view, as functionalization records it
    aten.slice_scatter.default, aten.select_scatter.default,
    aten.copy.default,  # x.copy_(y): every element replaced
    aten.index_put.default, aten.index_add.default,
    aten.scatter.src, aten.scatter.value, aten.scatter_add.default, aten.scatter_reduce.two,
}


def _is_copy_of(node: fx.Node, placeholder: fx.Node) -> bool:
    """``clone(x)``: the copy functionalization scatters into when ``x`` is an input."""
    return (node.op == "call_function" and node.target is aten.clone.default
            and node.args[0] is placeholder and not node.kwargs)


def write_chain(value: fx.Node, placeholder: fx.Node) -> tuple[list[fx.Node], fx.Node | None]:
    """The scatters that turn ``placeholder`` (or its clone) into ``value``, first write first,
    and that clone (or None); ``([], None)`` when ``value`` is not built that way."""
    chain: list[fx.Node] = []
    node = value
    while isinstance(node, fx.Node) and node.op == "call_function" and node.target in SCATTER_OPS:
        chain.append(node)
        node = node.args[0]
        if node is placeholder:
            return chain[::-1], None
        if _is_copy_of(node, placeholder):
            return chain[::-1], node
    return [], None


def _is_view(node: fx.Node) -> bool:
    return node.op == "call_function" and getattr(node.target, "is_view", False)


def value_readers(node: fx.Node) -> set[fx.Node]:
    """The nodes that read ``node``'s elements: its users, looking through views to theirs."""
    readers = set()
    for user in node.users:
        readers |= value_readers(user) if _is_view(user) else {user}
    return readers


def ancestors(node: fx.Node) -> set[fx.Node]:
    seen: set[fx.Node] = set()
    stack = list(node.all_input_nodes)
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(n.all_input_nodes)
    return seen


def why_not_in_place(placeholder: fx.Node, chain: list[fx.Node], clone: fx.Node | None,
                     outputs: list, position: int) -> str:
    """Why the writes of ``chain`` cannot go into the input's storage ("" when they can)."""
    if not chain:
        return "its new value has another shape or dtype (the whole value is copied back)"
    key = placeholder.meta.get("storage")
    others = [n for n in placeholder.graph.nodes if n.op == "placeholder" and n is not placeholder]
    if key is None or any(n.meta.get("storage") == key for n in others):
        return "it shares its storage with another input"
    if any(o is chain[-1] for k, o in enumerate(outputs) if k != position):
        return "its new value is also returned as an output"
    if clone is not None and set(clone.users) != {chain[0]}:
        return "the copy of it is read elsewhere"
    # each version (the input, then each write's result but the last) is overwritten by the
    # next write: nothing the write does not wait for may read it
    versions = [placeholder, *chain[:-1]]
    for version, write in zip(versions, chain):
        before = ancestors(write)
        late = value_readers(version) - before - {write, clone}
        if late:
            names = ", ".join(sorted(n.name for n in late))
            return f"{names} read(s) its old value after {write.name} writes it"
    return ""


def reinplace_input_mutations(gm: fx.GraphModule) -> dict[str, str]:
    """Mark the writes of every mutated input that can be written in place; returns
    ``{input name: "in place" or why not}`` for the inputs ``gm.meta["mutated_inputs"]`` lists."""
    mutated = gm.meta.get("mutated_inputs", {})  # {output position: placeholder name}
    if not mutated:
        return {}
    placeholders = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
    outputs = list(gm.graph.output_node().args[0])
    decisions = {}
    for position, name in mutated.items():
        placeholder = placeholders[name]
        chain, clone = write_chain(outputs[position], placeholder)
        if not chain:  # a whole new value (``p.add_(g)``): written over the input by a copy
            chain = copy_over(placeholder, outputs, position)
        reason = why_not_in_place(placeholder, chain, clone, outputs, position)
        decisions[name] = reason or "in place"
        if not reason:
            for node in ([clone] if clone is not None else []) + chain:
                node.meta["reinplace"] = True
        elif chain and chain[-1] is not outputs[position]:  # the copy, refused: taken out
            undo_copy_over(chain[-1], outputs, position)
    if outputs != list(gm.graph.output_node().args[0]):  # a copy_over stayed
        gm.graph.output_node().args = (outputs,)
        gm.recompile()
    return decisions


def copy_over(placeholder: fx.Node, outputs: list, position: int) -> list[fx.Node]:
    """``[copy(x, new)]``, made the graph's new value of input ``x``, where ``new`` is computed
    from scratch (an optimizer's ``p.add_(buf, alpha=-lr)``: ``new = p - lr * buf``): written
    in place, the kernel that computes ``new`` stores it into ``x`` instead of into a buffer the
    wrapper then copies back (one write instead of a write, a read and a write). ``[]`` where
    the new value has another shape or dtype than the input (the copy-back converts those)."""
    value = outputs[position]
    new, old = (getattr(n, "meta", {}).get("val") for n in (value, placeholder))
    if not (isinstance(value, fx.Node) and isinstance(new, torch.Tensor)
            and isinstance(old, torch.Tensor) and new.shape == old.shape
            and new.dtype == old.dtype and value is not placeholder):
        return []
    with placeholder.graph.inserting_before(placeholder.graph.output_node()):
        copy = placeholder.graph.call_function(aten.copy.default, (placeholder, value))
    copy.meta = {**placeholder.meta, "val": old}
    outputs[position] = copy
    return [copy]


def undo_copy_over(copy: fx.Node, outputs: list, position: int) -> None:
    outputs[position] = copy.args[1]
    copy.graph.erase_node(copy)
