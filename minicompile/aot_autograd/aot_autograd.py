"""AOT autograd's entry points (mini version of torch/_functorch/aot_autograd.py).

``aot_module_simplified(gm, example_inputs, fw_compiler, bw_compiler, decompositions,
partition_fn)`` is what a backend calls:

1. lift the module's parameters and buffers into inputs (graphs are pure functions of inputs);
2. make fake inputs (reusing the front end's fake tensors, symbolic sizes included);
3. trace the joint graph (or the forward alone when nothing needs a gradient) to ATen,
   applying the decompositions, and functionalize it;
4. partition the joint graph into forward and backward graphs;
5. hand each to its compiler and wrap the results in a runtime wrapper
   (``torch.autograd.Function`` for training).

Whether to build the training or the inference version depends on grad mode and on which inputs
require grad; both are made lazily, at the first call that needs them, and cached.
Anything the tracer cannot handle falls back to running ``gm`` eagerly, with the reason logged.
"""

from __future__ import annotations

import logging
import operator
import threading
from typing import Any, Callable

import torch
import torch.fx as fx
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._pytree import tree_flatten, tree_structure, tree_unflatten

from .._logging import trace_artifact
from ..metrics import metrics
from .joint import GraphSignature, trace_graph
from .partitioners import PARTITIONERS, Partition, default_partition
from .runtime_wrappers import (eager_when_writes_alias, make_inference_wrapper,
                               make_training_wrapper)
from .tracer import Unsupported, run_preserving_meta, storage_key

log = logging.getLogger(__name__)
Compiler = Callable[[fx.GraphModule, list], Callable]


def _identity_compiler(gm: fx.GraphModule, example_inputs: list) -> Callable:
    return gm.forward


def _fake_inputs(gm: fx.GraphModule, example_inputs: list,
                 params: list[torch.Tensor]) -> tuple[list, FakeTensorMode]:
    """Fake versions of params + inputs: Dynamo's own fakes (with symbolic sizes) if the
    placeholders carry them, else fresh static ones."""
    graph = getattr(gm, "graph", None)  # a GraphModule from a front end, or a plain module
    placeholders = [n for n in graph.nodes if n.op == "placeholder"] if graph else []
    dynamo_fakes = [n.meta.get("example_value") for n in placeholders]
    # the mode that made the fakes: ops on a fake from another mode re-fake it (a new storage
    # per op, so views would no longer alias it). Real Dynamo may hand the backend a tracing
    # context whose mode differs from its example values' mode.
    fake_mode = next((v.fake_mode for v in dynamo_fakes if isinstance(v, FakeTensor)),
                     None) or torch._guards.detect_fake_mode(
                         [v for v in dynamo_fakes if v is not None])
    if len(dynamo_fakes) != len(example_inputs):
        dynamo_fakes = [None] * len(example_inputs)
    if fake_mode is None:
        # no fake tensor among the inputs (``f(n)`` with n a dynamic int): a fresh mode, but
        # the SymInt inputs stay symbolic. Dropping them would trace the call's real ints and
        # bake them into factory ops (``arange(n)``) that are then reused at other values.
        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        fake_mode.cache_enabled = False  # its cache key wants torch's own ShapeEnv
        dynamo_fakes = [v if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool))
                        else None for v in dynamo_fakes]
    fakes = [fake_mode.from_tensor(p, static_shapes=True) for p in params]
    for ex, fake in zip(example_inputs, dynamo_fakes):
        if fake is None and isinstance(ex, torch.Tensor):
            fake = fake_mode.from_tensor(ex, static_shapes=True)
        fakes.append(ex if fake is None else fake)
    return fakes, fake_mode


def _distinct_memory(fakes: list, fake_mode: FakeTensorMode) -> tuple[list, set]:
    """The fakes with each input in memory of its own: a fake sharing its storage with an
    earlier input's (two views of one tensor, as Dynamo fakes them) is replaced by a fresh one
    of the same sizes and strides. A functional graph is a function of distinct inputs;
    traced on aliased fakes it would be specialised to that aliasing (a write through one view
    rebuilt into the other, wrong for distinct tensors), and calls where a written input does
    share memory run eagerly instead (``eager_when_writes_alias``). One tensor at two positions
    (a tied parameter) stays one: also returned, as the pairs of positions holding it."""
    seen: dict[int, int] = {}  # storage -> first position
    duplicates, out = set(), []
    for i, f in enumerate(fakes):
        if isinstance(f, torch.Tensor) and f.layout == torch.strided:
            first = seen.setdefault(storage_key(f), i)
            if first != i and fakes[first] is f:
                duplicates.add((first, i))
            elif first != i:
                with fake_mode:
                    f = torch.empty_strided(f.shape, f.stride(), dtype=f.dtype,
                                            device=f.device).requires_grad_(f.requires_grad)
        out.append(f)
    return out, duplicates


def _shape_env_of(fakes: list) -> Any:
    """The ShapeEnv that owns the inputs' size symbols (None when every size is static)."""
    for f in fakes:
        sizes = [*f.shape, *f.stride()] if isinstance(f, torch.Tensor) else [f]
        for v in sizes:
            if isinstance(v, (torch.SymInt, torch.SymFloat)):
                return getattr(v.node, "shape_env", None)
    return None


_requires_grad = operator.attrgetter("requires_grad")


def _restructure(run: Callable, spec: Any) -> Callable:
    """``run``'s flat outputs in the user's structure; a flat tuple or list (the usual case)
    without a pytree walk on every call."""
    if spec.type in (tuple, list) and spec == tree_structure(spec.type(range(spec.num_leaves))):
        container = spec.type
        return lambda *args: container(run(*args))
    return lambda *args: tree_unflatten(run(*args), spec)


def _graph_text(gm: fx.GraphModule) -> str:
    text = gm.print_readable(print_output=False, include_stride=False, include_device=False)
    return "\n".join(line for line in text.splitlines() if "No stacktrace found" not in line)


class ForwardOnly(torch.nn.Module):
    """A Dynamo graph called for its forward alone. ``gm(*args)`` is a module call, and a hook
    registered for every module (``register_module_forward_hook``) would run on it: traced, its
    effect would be in the graph, though the frame's own module calls already ran it (or run
    natively while one is registered)."""

    def __init__(self, gm: fx.GraphModule):
        super().__init__()
        self.gm = gm

    def __call__(self, *args: Any) -> Any:
        return run_preserving_meta(self.gm, *args)  # checkpointed regions keep their tags


def aot_module_simplified(
    gm: fx.GraphModule,
    example_inputs: list,
    fw_compiler: Compiler = _identity_compiler,
    bw_compiler: Compiler | None = None,
    decompositions: dict | None = None,
    partition_fn: Callable[[fx.GraphModule, int], Partition] | str = default_partition,
    inference_compiler: Compiler | None = None,
) -> Callable:
    """Compile ``gm`` ahead of time through ATen; returns a callable taking ``example_inputs``'
    structure (a flat list of tensors and ints) and returning what ``gm`` returns."""
    bw_compiler = bw_compiler or fw_compiler
    inference_compiler = inference_compiler or fw_compiler
    if isinstance(partition_fn, str):
        partition_fn = PARTITIONERS[partition_fn]
    named = dict(gm.named_parameters(remove_duplicate=False))
    named.update(gm.named_buffers(remove_duplicate=False))
    names, params = list(named), list(named.values())
    fakes, fake_mode = _fake_inputs(gm, example_inputs, params)
    fakes, duplicates = _distinct_memory(fakes, fake_mode)
    out_spec = []

    traced = ForwardOnly(gm)
    state_names = [f"gm.{n}" for n in names]

    def flat_fn(*args):
        """gm as a pure function of (params and buffers..., inputs...) -> flat outputs."""
        state = dict(zip(state_names, args[:len(names)]))
        out = torch.func.functional_call(traced, state, tuple(args[len(names):]), strict=False)
        flat, spec = tree_flatten(out)
        out_spec[:] = [spec]
        return flat

    compiled: dict[tuple, Callable] = {}

    def compile_variant(requires_grad: tuple[bool, ...]) -> Callable:
        joint = any(requires_grad)
        # a node running the user's Python while traced (a custom autograd.Function) says what
        # Python state it reaches: a change made while tracing would not happen at run time
        states = [n.target.python_state() for n in gm.graph.nodes
                  if n.op == "call_function" and hasattr(n.target, "python_state")]
        try:
            graph, sig = trace_graph(flat_fn, fakes, list(requires_grad), fake_mode,
                                     decompositions, joint=joint)
        finally:
            changed = [name for state in states for name in state.undo_changes()]
        if changed:
            raise Unsupported(f"tracing changed Python state ({', '.join(changed)}), as it will "
                              f"not at run time: the graph runs eagerly")
        if sig.decomposed:
            trace_artifact("decompositions", lambda: "\n".join(
                f"{op}: {n}" for op, n in sorted(sig.decomposed.items())), "ops decomposed")
        # Traced under autocast, the graph has autocast's casts in it as nodes: from here on
        # autocast is off, in the compilers (which run the graph's ops on fake tensors to learn
        # their dtypes: a float32 matmul must stay one) and in every call of the result.
        amp = torch._C._is_any_autocast_enabled()
        with torch._C._DisableAutocast():
            return compile_graph(graph, sig, joint, amp)

    def compile_graph(graph: fx.GraphModule, sig: GraphSignature, joint: bool,
                      amp: bool) -> Callable:
        run = _restructure(compile_wrapper(graph, sig, joint, amp), out_spec[0])
        if not sig.mutated_inputs:
            return run
        # (a functional graph's inputs are distinct memory: a call where a written one is not)
        inputs = [n.meta.get("source", n.name) for n in gm.graph.nodes if n.op == "placeholder"] \
            if hasattr(gm, "graph") else [f"input {i}" for i in range(len(example_inputs))]
        return eager_when_writes_alias(
            run, lambda *args: gm.forward(*args[len(names):]), sig.mutated_inputs,
            [i for i, f in enumerate(fakes) if isinstance(f, torch.Tensor)], names + inputs,
            duplicates)

    def compile_wrapper(graph: fx.GraphModule, sig: GraphSignature, joint: bool,
                        amp: bool) -> Callable:
        if not joint:
            trace_artifact("aot_graphs", lambda: _graph_text(graph), "inference graph")
            graph.meta["static_input_indices"] = tuple(range(len(params)))
            return make_inference_wrapper(inference_compiler(graph, fakes), sig, amp)
        trace_artifact("aot_graphs", lambda: _graph_text(graph), "joint graph")
        part = partition_fn(graph, sig.num_fwd_outputs)
        trace_artifact("aot_graphs", lambda: _graph_text(part.fw_module),
                       f"forward graph ({part.saved_bytes} bytes saved for backward)")
        trace_artifact("aot_graphs", lambda: _graph_text(part.bw_module), "backward graph")
        # what a stage after code generation may need (cudagraphs/): which inputs are the
        # module's parameters and buffers, the same tensors every call (Inductor's
        # ``static_input_idxs``), and where the forward's outputs saved for backward begin
        part.fw_module.meta["static_input_indices"] = tuple(range(len(params)))
        part.fw_module.meta["saved_outputs_start"] = sig.num_fwd_outputs
        fw = fw_compiler(part.fw_module, fakes)
        _take_saved_strides(part.bw_module, getattr(fw, "output_strides", None),
                            sig.num_fwd_outputs, part.num_saved_tensors)
        bw = bw_compiler(part.bw_module, _placeholder_vals(part.bw_module))
        return make_training_wrapper(fw, bw, sig, part.num_saved_tensors, amp)

    def variant_key(args) -> tuple[bool, ...]:
        if not torch.is_grad_enabled():  # inference: nothing requires grad, whatever the flags
            return (False,) * len(args)
        try:  # every argument a tensor, the usual case: one C loop, no isinstance per argument
            return tuple(map(_requires_grad, args))
        except AttributeError:  # an int or a SymInt among them
            return tuple([isinstance(a, torch.Tensor) and a.requires_grad for a in args])

    def fallback(reason: str) -> Callable:
        log.warning("aot_autograd falls back to eager: %s", reason)
        trace_artifact("aot_graphs", f"falling back to eager: {reason}", "fallback")
        metrics.fell_back(f"aot_autograd: {reason}")
        return lambda *args: gm.forward(*args[len(names):])

    shape_env = _shape_env_of(fakes)

    lock = threading.Lock()  # two threads asking for a new variant at once trace it once

    def get_variant(args: list) -> Callable:
        key = variant_key(args)
        if key in compiled:
            return compiled[key]
        with lock:
            if key in compiled:  # another thread traced it while this one waited
                return compiled[key]
            late = bool(compiled)  # Dynamo made its guards after the first variant
            num_guards = len(getattr(shape_env, "guards", ()))
            try:
                compiled[key] = compile_variant(key)
                if late and len(getattr(shape_env, "guards", ())) > num_guards:
                    raise Unsupported("tracing this variant guarded on a dynamic size after "
                                      "Dynamo's guards were made")
            except Exception as e:  # anything we cannot trace runs eagerly, never wrongly
                compiled[key] = fallback(f"{type(e).__name__}: {e}")
        return compiled[key]

    def compiled_fn(*args):
        if params:  # (a graph from Dynamo has its parameters among its inputs already)
            args = (*params, *args)
        return get_variant(args)(*args)

    get_variant(params + list(example_inputs))  # compile now for the example inputs
    compiled_fn.variants = compiled  # {requires-grad pattern: runtime wrapper}, for inspection
    return compiled_fn


def trace_module(model: torch.nn.Module | Callable, inputs: list, decompositions: dict | None = None,
                 joint: bool = True) -> tuple[fx.GraphModule, GraphSignature]:
    """The joint (or inference) ATen graph of ``model(*inputs)``, parameters lifted to primals
    first: what aot_module_simplified partitions. For notebooks and tests."""
    module = model if isinstance(model, torch.nn.Module) else _as_module(model)
    named = dict(module.named_parameters())
    named.update(module.named_buffers())
    names, params = list(named), list(named.values())

    def flat_fn(*args):
        state = dict(zip(names, args[:len(names)]))
        return torch.func.functional_call(module, state, tuple(args[len(names):]), strict=False)

    args = params + list(inputs)
    requires_grad = [joint and isinstance(a, torch.Tensor) and a.requires_grad for a in args]
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    fakes = [fake_mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
    return trace_graph(flat_fn, fakes, requires_grad, fake_mode, decompositions, joint=joint)


def _take_saved_strides(bw_module: fx.GraphModule, fw_strides: list | None, num_fwd: int,
                        num_saved: int) -> None:
    """The backward reads the tensors the forward saved as the compiled forward lays them out
    (a compiler may keep an activation channels-last: Inductor's layout optimisation), not as
    they were traced: its first ``num_saved`` inputs take the strides the compiled forward
    reports for its outputs from ``num_fwd`` on (real AOTAutograd's update of the backward's
    placeholders after the forward's compile). Without a report, the traced strides stay."""
    if not fw_strides:
        return
    placeholders = [n for n in bw_module.graph.nodes if n.op == "placeholder"][:num_saved]
    for node, stride in zip(placeholders, fw_strides[num_fwd:num_fwd + num_saved]):
        val = node.meta.get("val")
        if (stride is None or getattr(val, "fake_mode", None) is None
                or tuple(val.stride()) == stride):
            continue
        with val.fake_mode:
            node.meta["val"] = torch.empty_strided(val.shape, stride, dtype=val.dtype,
                                                   device=val.device)


def _placeholder_vals(gm: fx.GraphModule) -> list:
    return [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]


def aot_function(fn: Callable, fw_compiler: Compiler = _identity_compiler, **kwargs: Any
                 ) -> Callable:
    """``aot_function(fn)(*tensors)``: AOT-compile a plain function of tensors (traced on its
    first call's inputs)."""
    cache: dict = {}

    def wrapper(*args):
        if "fn" not in cache:
            cache["fn"] = aot_module_simplified(_as_module(fn), list(args),
                                                fw_compiler, **kwargs)
        return cache["fn"](*args)

    return wrapper


class _FunctionModule(torch.nn.Module):
    """A plain function as a module with no parameters (so it goes through the same path)."""

    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _as_module(fn: Callable) -> torch.nn.Module:
    return _FunctionModule(fn)
