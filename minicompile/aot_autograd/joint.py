"""Trace the joint forward + backward graph, or the forward alone (mini version of
torch/_functorch/_aot_autograd/traced_function_transforms.py and dispatch_and_compile_graph.py).

The joint graph is one ATen graph ``(primals, tangents) -> (outputs, grads)``:

    def joint(primals, tangents):
        outs = fn(*primals)                                  # the forward, recorded op by op
        grads = torch.autograd.grad(outs, primals, tangents)  # the backward, recorded too
        return outs, grads

Both halves run under the same DispatchTracer, so the autograd engine's backward formulas are
recorded as ATen ops exactly like the forward. A partitioner (partitioners.py) later cuts it in
two. Tangents (the incoming gradients) are placeholders made once the outputs are known.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable

import sympy
import torch
import torch.fx as fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._pytree import tree_flatten

from .functionalize import functionalize
from ..shapes.symbolic_shapes import has_symbolic_sizes, symbolic_dispatch
from .tracer import DispatchTracer, PreAutogradDecompositions, Unsupported, storage_key

# Python-level functions replaced before autograd sees them (torch._VF.lstm -> cell equations:
# decompositions/rnn.py). Filled by the composition root (minicompile/__init__.py), so this
# stage never imports the later decompositions stage.
PRE_AUTOGRAD_DECOMPOSITIONS: dict[Callable, Callable] = {}


@dataclass
class OutputAlias:
    """A user output that is an input, or a view of one (OutputType.is_input / alias_of_input
    in real AOTAutograd). The runtime wrapper rebuilds it from the real input, outside the
    compiled graph, so it shares the caller's storage as in eager, and autograd differentiates
    the view op itself."""

    input_index: int
    is_input: bool  # the very input tensor (``return x``)
    size: tuple = ()  # ints, or SymPy expressions in the size symbols of ``symbols``
    stride: tuple = ()
    offset: Any = 0  # storage offset relative to the input's
    as_real: bool = False  # a real view of a complex input (x.real, x.imag, view_as_real(x))
    # symbolic geometry: where each size symbol is read at run time,
    # (symbol, input index, "size" | "stride" | "value", dim)
    symbols: tuple = ()
    # how autograd sees it, as in eager: "view" (differentiable), "detach" (``x.detach()``: no
    # gradient, requires_grad False), "no_grad" (a view made under no_grad: a leaf that still
    # says requires_grad, through which no gradient reaches the input)
    grad: str = "view"

    def regenerate(self, args: list) -> torch.Tensor:
        base = args[self.input_index]
        if self.is_input:
            return base
        size, stride, offset = self.size, self.stride, self.offset
        if self.symbols:  # s0 = args[1].shape[0], ...; then evaluate (s0 - 1, s0, 1) for this call
            env = {sym: _read(args[i], kind, d) for sym, i, kind, d in self.symbols}
            size, stride, offset = ([int(sympy.sympify(e).xreplace(env)) for e in exprs]
                                    for exprs in (size, stride, [offset]))
            offset = offset[0]
        if self.as_real:  # sizes, strides and offset count real elements: two per complex one
            base = torch.view_as_real(base)
        if self.grad == "detach":
            base = base.detach()
        with torch.no_grad() if self.grad == "no_grad" else contextlib.nullcontext():
            return base.as_strided(size, stride, base.storage_offset() + offset)


@dataclass
class IntermediateView:
    """A user output that is a view of a tensor the graph computes (``y.transpose(0, 1)``, or a
    view of another output): the graph returns that base instead, and the runtime wrapper
    makes the view of it outside the ``autograd.Function`` (real AOTAutograd's
    ``alias_of_intermediate``). Returned from the Function, the view would be a view that
    autograd forbids writing in place ("Output 0 of CompiledFunction is a view and is being
    modified inplace"), as code after a graph break may (wav2vec2's ``hidden_states[mask] = 0``)."""

    base: int  # the base's position among the graph's outputs
    size: tuple
    stride: tuple
    offset: int  # storage offset relative to the base's

    def regenerate(self, outs: list) -> torch.Tensor:
        base = outs[self.base]
        return base.as_strided(self.size, self.stride, base.storage_offset() + self.offset)


def views_of_intermediates(outs: list) -> tuple[list, dict[int, IntermediateView], int]:
    """``outs`` (the graph's user outputs) with each view of an intermediate taken out and its
    base returned instead (once, after the others, unless it is an output already): the new
    outputs, the views by their positions in ``outs``, and how many bases were added. Views
    with symbolic sizes, of another dtype or with a conj/neg bit stay as they are."""
    def rebuildable(o) -> bool:
        base = getattr(o, "_base", None) if isinstance(o, torch.Tensor) else None
        return base is not None and base.dtype == o.dtype and not (o.is_conj() or o.is_neg()) \
            and not from_custom_function(o) \
            and all(isinstance(g, int) for g in (*o.shape, *o.stride(), o.storage_offset(),
                                                 base.storage_offset()))
    views = [pos for pos, o in enumerate(outs) if rebuildable(o)]
    if not views:
        return outs, {}, 0
    kept = [o for pos, o in enumerate(outs) if pos not in views]
    rebuilt = {}
    for pos in views:
        o = outs[pos]
        if not any(k is o._base for k in kept):
            kept.append(o._base)
        index = next(j for j, k in enumerate(kept) if k is o._base)
        rebuilt[pos] = IntermediateView(index, tuple(o.shape), tuple(o.stride()),
                                        o.storage_offset() - o._base.storage_offset())
    return kept, rebuilt, len(kept) - (len(outs) - len(views))


def _read(arg, kind: str, dim: int) -> int:
    return arg.shape[dim] if kind == "size" else arg.stride(dim) if kind == "stride" else int(arg)


def _sym_expr(x: Any) -> sympy.Basic:
    """The SymPy formula of a size: ours or real Dynamo's SymInt (both nodes carry ``expr``)."""
    return x.node.expr if isinstance(x, torch.SymInt) else sympy.Integer(x)


def symbol_sources(primals: list) -> dict[sympy.Symbol, tuple[int, str, int]]:
    """Where each size symbol of the inputs can be read at run time (the first place wins)."""
    found: dict[sympy.Symbol, tuple[int, str, int]] = {}
    for i, p in enumerate(primals):
        places = ([("size", d, v) for d, v in enumerate(p.shape)]
                  + [("stride", d, v) for d, v in enumerate(p.stride())]
                  if isinstance(p, torch.Tensor) else [("value", 0, p)])
        for kind, d, v in places:
            if isinstance(v, torch.SymInt) and isinstance(_sym_expr(v), sympy.Symbol):
                found.setdefault(_sym_expr(v), (i, kind, d))
    return found


@dataclass
class GraphSignature:
    """What the runtime wrapper needs to know about a traced graph (mirrors
    ViewAndMutationMeta in torch/_functorch/_aot_autograd/schemas.py)."""

    num_user_outputs: int
    mutated_inputs: list[int] = field(default_factory=list)  # inputs copied back, in order
    # those among them whose write autograd records (an input that requires grad written in
    # place, or any input written with a value that requires grad): their new values are
    # differentiable outputs, copied into the input where autograd sees the copy
    mutations_with_grad: list[int] = field(default_factory=list)
    output_requires_grad: list[bool] = field(default_factory=list)  # user + mutation outputs
    input_requires_grad: list[bool] = field(default_factory=list)
    decomposed: dict[str, int] = field(default_factory=dict)  # op name -> times decomposed
    # user outputs that alias an input: not computed by the graph, regenerated at run time
    output_aliases: dict[int, OutputAlias] = field(default_factory=dict)  # position -> alias
    # joint graphs: user outputs that are views of an intermediate, rebuilt from it at run time
    intermediate_views: dict[int, IntermediateView] = field(default_factory=dict)
    num_intermediate_bases: int = 0  # such bases the graph returns only for that (its last)

    @property
    def num_fwd_outputs(self) -> int:
        return self.num_user_outputs + len(self.mutated_inputs)


def _prepare_inputs(fake_args: list, requires_grad: list[bool]) -> list:
    """Fresh leaves on the fake mode: tensors detached, with the requested requires_grad."""
    out = []
    for a, rg in zip(fake_args, requires_grad):
        if isinstance(a, torch.Tensor) and (rg or a.requires_grad):
            a = a.detach().requires_grad_(rg and (a.is_floating_point() or a.is_complex()))
        # (others are used as they are: Dynamo's fakes may carry state, e.g. a memoized .item())
        out.append(a)
    return out


class FreshInput(torch.autograd.Function):
    """The identity as an autograd node: its output is the input's memory, with its sizes,
    strides and offset, but is no leaf. The function is traced on it, so it may write in
    place an input that requires grad, as eager lets it write an intermediate of the caller
    (the input of a resume function after a graph break: ``score += ...``); traced on the leaf
    itself, the write raises. Its backward passes the gradient on with no op, so nothing of it
    is in the graph. (Real AOTAutograd clones such an input, ``maybe_to_fresh_input``, once a
    first trace found it written; a clone would not keep a non-dense input's strides.)"""

    @staticmethod
    def forward(ctx, leaf: torch.Tensor) -> torch.Tensor:
        # no gradient stays none: autograd would otherwise hand the backward zeros for it, and
        # an input no gradient reaches (a custom Function's backward returning None) would get
        # a gradient of zeros where eager leaves ``.grad`` None
        ctx.set_materialize_grads(False)
        return leaf.detach()

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        return grad


def _written_through_autograd(primals: list, grad_fns: list) -> list[int]:
    """The inputs whose ``grad_fn`` the traced function changed: written in place where autograd
    recorded it (an in-place op under grad mode, on the input or a view of it). A write under
    ``no_grad`` or through ``detach()`` leaves it as it was: eager's autograd does not see it."""
    return [i for i, (p, before) in enumerate(zip(primals, grad_fns))
            if isinstance(p, torch.Tensor) and p.grad_fn is not before]


def _is_symbolic_input(a: Any) -> bool:
    """A tensor with symbolic sizes, or a symbolic int/float input (a dynamic ``n``)."""
    return has_symbolic_sizes(a) or isinstance(a, (torch.SymInt, torch.SymFloat))


def trace_graph(fn: Callable, fake_args: list, requires_grad: list[bool],
                fake_mode: FakeTensorMode, decompositions: dict | None = None,
                joint: bool = True) -> tuple[fx.GraphModule, GraphSignature]:
    """Trace ``fn(*args) -> list of outputs`` to a functional ATen graph.

    joint=True: the joint graph ``(primals..., tangents...) -> (outs..., mutated inputs'
    values..., grad per primal)``. joint=False: the inference graph ``primals -> outs``."""
    tracer = DispatchTracer(decompositions)
    old_allow = fake_mode.allow_non_fake_inputs
    fake_mode.allow_non_fake_inputs = True  # constants captured by the function stay real
    try:
        # symbolic sizes need the Python dispatcher: its Python kernels (matmul, ...) keep sizes
        # symbolic where some torch versions' C++ kernels read them as ints (a guard per size)
        with fake_mode, symbolic_dispatch(any(map(_is_symbolic_input, fake_args))):
            leaves = _prepare_inputs(fake_args, requires_grad)
            # the function runs on non-leaf twins of the leaves it is differentiated by
            primals = [FreshInput.apply(p) if isinstance(p, torch.Tensor) and p.requires_grad
                       else p for p in leaves]
            grad_fns = [getattr(p, "grad_fn", None) for p in primals]
            for i, p in enumerate(primals):
                tracer.placeholder(f"primals_{i + 1}", p)
            with tracer, PreAutogradDecompositions(PRE_AUTOGRAD_DECOMPOSITIONS):
                outs = tree_flatten(fn(*primals))[0]  # any output structure -> flat list
            written = _written_through_autograd(primals, grad_fns)
            if written and not joint:
                raise Unsupported("an input is written in place with a value that requires "
                                  "grad, in a graph traced without its backward")
            aliases = output_aliases(outs, primals)
            outs = [o for i, o in enumerate(outs) if i not in aliases]  # the graph's outputs
            views, bases = {}, 0
            if joint:
                outs, views, bases = views_of_intermediates(outs)
            sig = GraphSignature(len(outs), input_requires_grad=[
                isinstance(p, torch.Tensor) and p.requires_grad for p in leaves],
                output_aliases=aliases, intermediate_views=views, num_intermediate_bases=bases,
                mutations_with_grad=written)
            # the written inputs' new values are outputs with gradients too (for now after the
            # user's, in ``written``'s order; ``_add_mutation_outputs`` puts them in place)
            new_values = [primals[i] for i in written]
            sig.output_requires_grad = [isinstance(o, torch.Tensor) and o.requires_grad
                                        for o in outs + new_values]
            grads = _trace_backward(tracer, leaves, outs + new_values, sig) if joint else []
            tracer.output(outs + new_values + grads)
    finally:
        fake_mode.allow_non_fake_inputs = old_allow
    gm = tracer.module()
    mutations = functionalize(gm)  # {placeholder name: its final value}
    _add_mutation_outputs(gm, sig, mutations)
    remove_detach(gm)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    sig.decomposed = {str(op): n for op, n in tracer.decomposed.items()}
    return gm, sig


def remove_detach(gm: fx.GraphModule) -> int:
    """Drop every ``aten.detach`` node, rewiring its readers to its input; returns how many.

    The autograd engine unpacks each saved tensor through ``detach`` (often twice, so the
    backward graph shows ``detach(detach(div))``). Once the graph is traced, autograd is out of
    the picture and a detach is the identity on values: real AOTAutograd's graphs have none."""
    detaches = [n for n in gm.graph.nodes if n.target is torch.ops.aten.detach.default]
    for node in detaches:  # graph order: a chain collapses from its first link on
        node.replace_all_uses_with(node.args[0])
        gm.graph.erase_node(node)
    return len(detaches)


def _add_mutation_outputs(gm: fx.GraphModule, sig: GraphSignature,
                          mutations: dict[str, fx.Node]) -> None:
    """outputs := user outputs + new values of mutated inputs (in input order) + grads.

    The traced outputs hold, after the user's, the new values of the inputs written through
    autograd (``sig.mutations_with_grad``, the ones with tangents): they take their places
    among the others, keeping their order, so the tangents still follow the differentiable
    outputs."""
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"
             and n.name.startswith("primals_")]
    sig.mutated_inputs = [i for i, name in enumerate(names) if name in mutations]
    with_grad = sig.mutations_with_grad
    if not set(with_grad) <= set(sig.mutated_inputs):  # (autograd saw a write the graph lost)
        raise Unsupported("an input's history changed, but functionalization found no write")
    values = [mutations[names[i]] for i in sig.mutated_inputs]
    out = gm.graph.output_node()
    flat = list(out.args[0])
    k = sig.num_user_outputs
    out.args = (flat[:k] + values + flat[k + len(with_grad):],)
    sig.output_requires_grad[k:] = [i in with_grad for i in sig.mutated_inputs]
    # which outputs are new values of which inputs: a backend may write them into the input
    # itself and return the input (inductor's fx_passes/reinplace.py); the wrapper then has
    # nothing to copy. A partition hands this on to the forward graph (``partitioners.py``).
    # Not the ones written through autograd: the wrapper copies those into the input outside
    # the autograd.Function, where autograd records the write.
    gm.meta["mutated_inputs"] = {k + j: names[i] for j, i in enumerate(sig.mutated_inputs)
                                 if i not in with_grad}


def tangent_like(out: torch.Tensor) -> torch.Tensor:
    """The gradient of forward output ``out`` the backward is traced with: laid out as ``out``
    (``empty_like``: its strides where they are dense, a channels-last output, a transposed
    one; else dense in its order of dims). Eager's autograd hands a gradient laid out as its
    output to the backward formulas, which keep that layout (real AOTAutograd keeps the memory
    format too: ``coerce_tangent``); the runtime wrapper lays every incoming gradient out the
    same way (``runtime_wrappers.tangent_stride``)."""
    return torch.empty_like(out)


def _trace_backward(tracer: DispatchTracer, primals: list, outs: list,
                    sig: GraphSignature) -> list:
    diff_outs = [o for o, rg in zip(outs, sig.output_requires_grad) if rg]
    # tangents: laid out as the runtime wrapper lays out the incoming gradients
    with tracer.paused():
        tangents = [tangent_like(o) for o in diff_outs]
    first_op = next((n for n in tracer.graph.nodes if n.op != "placeholder"), None)
    with tracer.graph.inserting_before(first_op):
        for i, t in enumerate(tangents):
            tracer.placeholder(f"tangents_{i + 1}", t)
    wrt = [p for p, rg in zip(primals, sig.input_requires_grad) if rg]
    with tracer:
        found = torch.autograd.grad(diff_outs, wrt, tangents, allow_unused=True) if (
            diff_outs and wrt) else [None] * len(wrt)
    it = iter(found)
    return [next(it) if rg else None for rg in sig.input_requires_grad]


def from_custom_function(o: torch.Tensor) -> bool:
    """Is ``o`` an output of a user's ``torch.autograd.Function`` (its ``grad_fn`` the
    Function's backward)? A view made again from its base outside the compiled Function has
    the view's gradient, not the one that Function's backward computes."""
    return isinstance(o.grad_fn, torch.autograd.function.BackwardCFunction)


def output_aliases(outs: list, primals: list) -> dict[int, OutputAlias]:
    """Which outputs are inputs or views of inputs (they share an input's storage), with the
    geometry to rebuild them; refuses output types a graph cannot return."""
    inputs = {storage_key(p): i for i, p in enumerate(primals) if isinstance(p, torch.Tensor)}
    aliases = {}
    for pos, o in enumerate(outs):
        if not isinstance(o, (torch.Tensor, torch.SymInt, int, float, bool, type(None))):
            raise Unsupported(f"graph output of type {type(o).__name__}")
        if not isinstance(o, torch.Tensor) or storage_key(o) not in inputs:
            continue
        i = inputs[storage_key(o)]
        if o is primals[i]:
            aliases[pos] = OutputAlias(i, is_input=True)
            continue
        if from_custom_function(o):
            raise Unsupported(f"an output is an input passed through {type(o.grad_fn).__name__} "
                              "(a custom autograd.Function returning its input): rebuilt as a "
                              "view of the input, it would skip that Function's backward")
        if primals[i].requires_grad and torch._debug_has_internal_overlap(primals[i]):
            # as_strided differentiates through the storage: elements of an expanded input
            # that share memory would get one summed gradient, where eager's view gives each
            # its own
            raise Unsupported("an output is a view of an input that requires grad and "
                              "overlaps itself in memory (an expanded tensor)")
        as_real = o.dtype != primals[i].dtype
        if as_real and not (primals[i].is_complex() and o.dtype == primals[i].dtype.to_real()):
            raise Unsupported(f"an output is a view of a {primals[i].dtype} input as {o.dtype}")
        if o.is_conj() != primals[i].is_conj():  # a flag of the view, which as_strided drops
            raise Unsupported("an output is a conjugated view of an input (x.conj())")
        offset = o.storage_offset() - (2 if as_real else 1) * primals[i].storage_offset()
        geometry = [*o.shape, *o.stride(), offset]
        grad = "view" if o.grad_fn is not None or not primals[i].requires_grad else \
            "no_grad" if o.requires_grad else "detach"
        if all(isinstance(g, int) for g in geometry):
            aliases[pos] = OutputAlias(i, False, tuple(o.shape), tuple(o.stride()), offset,
                                       as_real, grad=grad)
            continue
        # symbolic sizes: keep the formulas, and where to read their symbols on each call
        exprs = [_sym_expr(g) for g in geometry]
        sources = symbol_sources(primals)
        needed = set().union(*(e.free_symbols for e in exprs))
        if not needed <= set(sources):
            raise Unsupported("an output is a view of an input whose sizes no input gives")
        n = o.dim()
        aliases[pos] = OutputAlias(i, False, tuple(exprs[:n]), tuple(exprs[n:2 * n]), exprs[-1],
                                   as_real,
                                   tuple((s, *sources[s]) for s in sorted(needed, key=str)),
                                   grad)
    return aliases
