"""Whether a compiled graph may run as a CUDA graph, and what a call does with the recordings it
has (mirrors torch/_inductor/cudagraph_utils.py: ``check_for_mutation``,
``get_placeholder_info``, the skip messages Inductor logs as "skipping cudagraphs due to ...").

A CUDA graph is a recording of kernel launches with their arguments, pointers included: a
replay launches the same kernels on the same memory. So what may be recorded is what does the
same thing on the same addresses every call:

- every tensor on one GPU (a recording holds one device's kernels; CPU work is not recorded);
- no input written in place (the recording writes the copy it reads, not the caller's tensor);
- no operation that waits for the device to learn a value or a size (``.item()``, ``nonzero``):
  a stream being recorded cannot be waited on;
- a new recording per input shape, up to ``MAX_RECORDINGS`` (each holds its own memory).

This module is the part a CPU machine can test: the facts of a graph, the reason to skip it,
which inputs a recording reads in place, and the decision a call makes (warm up, record,
replay, or run without a graph).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Container, Hashable

import torch
import torch.fx as fx
import torch.utils._pytree as pytree

# shapes recorded per graph before new shapes run without a recording (Inductor's
# ``cudagraph_dynamic_shape_warn_limit`` warns at 8 and keeps recording; each recording keeps
# its memory for as long as the graph lives, so here the ninth shape runs as compiled code)
MAX_RECORDINGS = 8

# ATen ops whose result the host must wait for: a value (``_local_scalar_dense`` is
# ``.item()``), or a size that depends on the data. Recording cannot wait on the stream.
SYNCING_OPS = frozenset({
    "aten._local_scalar_dense.default", "aten.nonzero.default", "aten.masked_select.default",
    "aten.unique_consecutive.default", "aten._unique2.default", "aten.equal.default",
    "aten.is_nonzero.default", "aten.repeat_interleave.Tensor", "aten.bincount.default",
})


@dataclass(frozen=True)
class GraphFacts:
    """What decides whether a graph may be recorded (read off its ATen graph)."""

    devices: frozenset[str]  # "cuda:0", "cpu", ... of every tensor the graph touches
    mutated_inputs: tuple[str, ...]  # placeholders written in place
    syncing_ops: tuple[str, ...]  # ops of SYNCING_OPS in the graph
    static_inputs: frozenset[int]  # positions of the module's parameters and buffers


# the same, as a captured (Dynamo) graph names them: methods and torch functions
SYNCING_NAMES = frozenset({"item", "tolist", "nonzero", "masked_select", "unique",
                           "unique_consecutive", "bincount", "repeat_interleave", "equal"})


def facts_of(gm: fx.GraphModule) -> GraphFacts:
    """Read off an ATen graph (what inductor compiles), or a captured graph of torch functions
    and tensor methods (what ``mc.explain`` shows: a method ending in ``_`` writes its tensor)."""
    devices, mutated, syncing = set(), [], []
    placeholders = {n for n in gm.graph.nodes if n.op == "placeholder"}
    for node in gm.graph.nodes:
        value = node.meta.get("val", node.meta.get("example_value"))
        for leaf in pytree.tree_leaves(value):
            if isinstance(leaf, torch.Tensor):
                devices.add(str(leaf.device))
        if node.op not in ("call_function", "call_method"):
            continue
        name = node.target if isinstance(node.target, str) else \
            getattr(node.target, "__name__", "")
        if str(node.target) in SYNCING_OPS or name in SYNCING_NAMES:
            syncing.append(str(node.target) if node.op == "call_function" and
                           str(node.target) in SYNCING_OPS else f"{name}()")
        for arg in written_args(node):
            base = view_base(arg)
            if base in placeholders and base.name not in mutated:
                mutated.append(base.name)
    static = frozenset(gm.meta.get("static_input_indices", ()))
    return GraphFacts(frozenset(devices), tuple(mutated), tuple(syncing), static)


def written_args(node: fx.Node) -> list[fx.Node]:
    """The arguments an op writes (its schema marks them ``Tensor(a!)``; a tensor method
    ending in ``_``, ``x.add_(y)``, writes ``x``)."""
    if node.op == "call_method":
        writes = node.target.endswith("_") and not node.target.endswith("__")
        return [node.args[0]] if writes and isinstance(node.args[0], fx.Node) else []
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return []
    written = []
    for i, arg in enumerate(schema.arguments):
        if arg.alias_info is not None and arg.alias_info.is_write:
            value = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
            if isinstance(value, fx.Node):
                written.append(value)
    return written


VIEW_METHODS = frozenset({"view", "reshape", "t", "transpose", "permute", "expand", "narrow",
                          "select", "squeeze", "unsqueeze", "flatten", "unflatten", "__getitem__",
                          "diagonal", "as_strided", "view_as", "unfold", "split", "chunk"})


def view_base(node: fx.Node) -> fx.Node:
    """The tensor ``node`` is a view of, following view ops' first argument."""
    while node.args and (node.op == "call_function" and getattr(node.target, "is_view", False)
                         or node.op == "call_method" and node.target in VIEW_METHODS):
        node = node.args[0]
    return node


def skip_reason(facts: GraphFacts) -> str | None:
    """Why this graph runs without CUDA graphs, or None if it may be recorded."""
    cpu = sorted(d for d in facts.devices if not d.startswith("cuda"))
    if cpu:
        return f"{', '.join(cpu)} tensors: a CUDA graph records the kernels of one GPU"
    gpus = sorted(facts.devices)
    if len(gpus) > 1:
        return f"tensors on {len(gpus)} GPUs ({', '.join(gpus)}): a recording holds one's"
    if not gpus:
        return "no CUDA tensors"
    if facts.mutated_inputs:
        return (f"it writes its input {facts.mutated_inputs[0]} in place: a replay would write "
                f"the copy it reads, not the caller's tensor")
    if facts.syncing_ops:
        return (f"{facts.syncing_ops[0]} makes the host wait for a value computed on the GPU, "
                f"which a stream being recorded cannot do")
    return None


def reads_in_place(i: int, arg: Any, static_inputs: Container[int],
                   recorded_storages: Container[int]) -> bool:
    """Whether a recording reads argument ``i`` where it is, instead of copying it into a static
    buffer of its own before every replay: a value that is not a tensor (baked into the
    launches), a parameter or buffer of the module (``static_inputs``, or a ``Parameter`` a
    backward receives: the same tensor every call), or a tensor in the memory of a recording's
    outputs (``recorded_storages``: their storages' data pointers; what a forward replay saved
    for its backward, which stays there until the next replay)."""
    return (not isinstance(arg, torch.Tensor) or i in static_inputs
            or isinstance(arg, torch.nn.Parameter)
            or arg.untyped_storage().data_ptr() in recorded_storages)


def input_key(args: list) -> Hashable:
    """What a recording is specialised to: each tensor's size, strides and dtype, and each
    other argument's value (a size read off an input, baked into the recorded launches)."""
    return tuple((tuple(a.shape), a.stride(), a.dtype) if isinstance(a, torch.Tensor) else a
                 for a in args)


def decide(key: Hashable, warmed: set, recorded: dict, skipped: dict) -> str:
    """What a call does: "replay" a recording of these shapes, "warmup" (the first call of a
    shape runs as compiled code: Triton autotunes and compiles, the library picks its
    algorithms, none of which a recording may contain), "record" (the second call), or "skip"
    (this shape could not be recorded, or past ``MAX_RECORDINGS``: compiled code, no graph)."""
    if key in recorded:
        return "replay"
    if key in skipped:
        return "skip"
    if key not in warmed:
        return "warmup"
    if len(recorded) >= MAX_RECORDINGS:
        skipped[key] = (f"{MAX_RECORDINGS} input shapes recorded already (MAX_RECORDINGS): "
                        f"more run without CUDA graphs")
        return "skip"
    return "record"


def describe(args: Any) -> str:
    return ", ".join(f"{tuple(a.shape)}" if isinstance(a, torch.Tensor) else repr(a)
                     for a in args)
