"""Run compiled forward/backward graphs as if they were the original code (mini version of
torch/_functorch/_aot_autograd/runtime_wrappers.py).

Training: a ``torch.autograd.Function`` whose ``forward`` runs the forward graph and stashes
the saved values on ``ctx``, and whose ``backward`` runs the backward graph on them and the
incoming gradients. Autograd sees one opaque node for the whole graph.

Inference: call the forward graph, nothing saved.

Both: a graph traced under autocast has autocast's casts in it, as ``_to_copy`` nodes, and runs
with autocast off (``disable_amp``, as real AOTAutograd's ``torch._C._DisableAutocast``): under
the caller's autocast, an ATen op the compiled code calls (a matmul, a convolution) would be
cast again, a matmul the code ran in float32 in an ``autocast(enabled=False)`` block among them.

Both: a functionalized graph returns the new values of the inputs it mutated; the wrapper
copies them back (``input.copy_(new)``) so callers see the mutation, as in eager (in training,
inside the Function's forward: returned through the Function, each new value would come back as
a view autograd makes of it, an input returned as an output). A compiler may
instead write the changed elements into the input itself and return the input as its new value
(inductor does where it is safe: ``gm.meta["mutated_inputs"]`` tells it which outputs are new
values): there is nothing to copy then, only the input's version counter to bump, as an in-place
op would, so autograd still notices a tensor it saved was changed. Then outputs
that alias an input (``return x``, ``return x.t()``) are rebuilt from the caller's input
(``as_strided``), after the copy-back so they see the mutated values, and outside the
``autograd.Function`` so that autograd differentiates the view like in eager.

Training: a write autograd records in eager (into an input that requires grad, an intermediate
of the caller such as a resume function's input after a graph break; or any input written with
a value that requires grad) must be recorded here too, or the input's later readers would
differentiate through its old value. As in real AOTAutograd, the Function returns that input's
new value as one more differentiable output (the backward takes a gradient for it), and the
wrapper copies it into the input after the Function, with autograd on: the input's ``grad_fn``
becomes the copy's, which leads into the Function. Into a leaf that requires grad the copy
raises eager's own error. The backward may read the input as it was: what the forward saves
of it is kept as a copy (eager's in-place op saves the original too).

Both: a functional graph assumes its inputs are distinct memory. Two arguments that are views of
one tensor, one written in place (``f(base[:4], base[2:6])`` with ``y.mul_(2)``), break that: the
graph reads ``x`` as it was before the write, where eager reads it after. Real AOTAutograd then
traces again with one "synthetic base" for the aliased inputs; here a call whose written inputs
share memory with another input runs the frame's graph eagerly instead (``eager_when_writes_alias``),
which is always right, and says so once.
"""

from __future__ import annotations

import logging
from typing import Callable

import torch
from torch.autograd.graph import increment_version

from .joint import GraphSignature
from .tracer import storage_key

log = logging.getLogger(__name__)


def tangent_stride(out: torch.Tensor) -> tuple:
    """The strides the backward was traced with for the gradient of forward output ``out``
    (``joint.tangent_like``: torch's ``empty_like`` rule, asked of a meta tensor)."""
    if out.is_contiguous():
        return out.stride()
    return torch.empty_like(out, device="meta").stride()


def as_tangent(grad: torch.Tensor | None, shape: torch.Size, stride: tuple,
               dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """An incoming gradient laid out as the backward graph was traced for it; zeros for an
    output no gradient reached (``None``: an output the loss does not use)."""
    if grad is None:
        return torch.empty_strided(shape, stride, dtype=dtype, device=device).zero_()
    if grad.stride() == stride:
        return grad
    return torch.empty_strided(grad.shape, stride, dtype=grad.dtype,
                               device=grad.device).copy_(grad)


def _copy_back_mutations(args: list, mutated: list[int], new_values: list) -> None:
    """Give each input at the positions ``mutated`` its new value, unseen by autograd (under
    ``no_grad``). One the compiled code wrote in place (a kernel storing through its pointer:
    autograd did not see it) only has its version counter moved, all of them in one C call: a
    training step's graph mutates every parameter, momentum buffer and batch norm statistic
    (hundreds of inputs), each a Python call otherwise."""
    if not mutated:
        return
    written, copies = [], []
    for i, new in zip(mutated, new_values):
        if is_same_tensor(new, args[i]):
            written.append(args[i])
        else:
            copies.append((args[i], new))
    if written:
        increment_version(written)
    if copies:
        with torch.no_grad():
            for arg, new in copies:
                if new.untyped_storage().data_ptr() == arg.untyped_storage().data_ptr():
                    arg.copy_(new.clone())  # another view of the same memory: copy_ refuses
                else:
                    arg.copy_(new)


def is_same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    """The same elements of the same memory (``b`` itself, or an identical view of it). The
    stride of a dimension of size 1 says nothing (a (1, 2) tensor with strides (1, 1) and one
    with (2, 1) are the same two elements), and neither does any stride of an empty tensor."""
    if a is b:
        return True
    if a.data_ptr() != b.data_ptr() or a.dtype != b.dtype or a.shape != b.shape:
        return False
    return a.numel() == 0 or all(sa == sb for n, sa, sb in zip(a.shape, a.stride(), b.stride())
                                 if n != 1)


def _user_outputs(args: list, graph_outs: list, sig: GraphSignature) -> list:
    """The graph's user outputs with the views of intermediates made from their bases and the
    input aliases put back, each at its position."""
    if sig.intermediate_views:
        views, it = sig.intermediate_views, iter(graph_outs)
        graph_outs = [views[pos].regenerate(graph_outs) if pos in views else next(it)
                      for pos in range(len(graph_outs) - sig.num_intermediate_bases
                                       + len(views))]
    if not sig.output_aliases:
        return graph_outs
    outs = list(graph_outs)
    for pos in sorted(sig.output_aliases):
        outs.insert(pos, sig.output_aliases[pos].regenerate(args))
    return outs


def without_autocast(fn: Callable) -> Callable:
    """``fn`` called with autocast off (the thread's autocast state restored after)."""

    def run(*args):
        with torch._C._DisableAutocast():
            return fn(*args)

    return run


def make_inference_wrapper(fw: Callable, sig: GraphSignature,
                           disable_amp: bool = False) -> Callable:
    n = sig.num_user_outputs
    if disable_amp:
        fw = without_autocast(fw)
    if not sig.mutated_inputs and not sig.output_aliases:
        return fw  # its outputs are the user's: nothing to copy back or put back, no extra call

    def runtime_wrapper(*args):
        outs = fw(*args)
        _copy_back_mutations(args, sig.mutated_inputs, outs[n:sig.num_fwd_outputs])
        return _user_outputs(args, outs[:n], sig)

    return runtime_wrapper


def make_training_wrapper(fw: Callable, bw: Callable, sig: GraphSignature,
                          num_saved_tensors: int, disable_amp: bool = False) -> Callable:
    num_user, num_fwd = sig.num_user_outputs, sig.num_fwd_outputs
    # the mutated inputs autograd sees written (``sig.mutations_with_grad``) take their new
    # values outside the Function, the others inside it: where each sits among the outputs
    with_grad = sig.mutations_with_grad
    inside = [i for i in sig.mutated_inputs if i not in with_grad]
    inside_at = [num_user + j for j, i in enumerate(sig.mutated_inputs) if i not in with_grad]
    with_grad_at = [num_user + j for j, i in enumerate(sig.mutated_inputs) if i in with_grad]
    # the Function's outputs: the user's, then the new values of ``with_grad`` (always
    # differentiable); the new values of the others are never returned
    differentiable = sig.output_requires_grad[:num_user] + [True] * len(with_grad)
    # a compiled backward takes its argument list over and frees each input after its last
    # reader (``CompiledFxGraph.boxed_call``); any other backward is called with the values
    boxed = getattr(bw, "boxed_call", None) or (lambda args: bw(*args))
    if disable_amp:  # (the backward too: ``loss.backward()`` inside the autocast block)
        fw, boxed = without_autocast(fw), without_autocast(boxed)

    class CompiledFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            outs = fw(*args)  # autograd is off in here: no graph is recorded
            # the mutated inputs take their new values here, not after: returned through the
            # Function, each would come back as a view autograd makes of it (an input returned
            # as an output), three a batch norm in every training step (its running statistics)
            _copy_back_mutations(args, inside, [outs[k] for k in inside_at])
            saved = outs[num_fwd:]
            tensors = saved[:num_saved_tensors]
            if with_grad:  # the input is written after this, outside: keep what was read
                tensors = _apart_from(tensors, [args[i] for i in with_grad])
            ctx.save_for_backward(*tensors)
            ctx.saved_sizes = saved[num_saved_tensors:]  # SymInt values: plain ints now
            user = [*outs[:num_user], *[outs[k] for k in with_grad_at]]
            # the layout the backward was traced with for each gradient (``joint.tangent_like``;
            # a new value's was traced as the input it replaces)
            laid_out = [*outs[:num_user], *[args[i] for i in with_grad]]
            ctx.tangents = [(o.shape, tangent_stride(o), o.dtype, o.device)
                            for o, d in zip(laid_out, differentiable) if d]
            ctx.mark_non_differentiable(*[o for o, d in zip(user, differentiable)
                                          if isinstance(o, torch.Tensor) and not d])
            # no zeros for the outputs no gradient reaches: left to itself, autograd fills one
            # for every output, the non-differentiable ones too (a batch norm's new running
            # statistics: three fill kernels per norm, each a launch, in every training step)
            ctx.set_materialize_grads(False)
            return tuple(user)

        @staticmethod
        @torch.autograd.function.once_differentiable  # double backward: an error, never wrong
        def backward(ctx, *grad_outs):
            # one tangent per differentiable output, laid out as the backward was traced
            tangents = [as_tangent(g, *meta) for g, meta in zip(
                [g for g, d in zip(grad_outs, differentiable) if d], ctx.tangents)]
            args = [*ctx.saved_tensors, *ctx.saved_sizes, *tangents]
            del tangents
            # autograd's references to the saved tensors go (unless ``retain_graph``): the list
            # holds the only ones, which a compiled program takes over and frees one by one
            ctx.maybe_clear_saved_tensors()
            return tuple(boxed(args))

    def runtime_wrapper(*args):
        return _user_outputs(args, CompiledFunction.apply(*args), sig)

    def runtime_wrapper_writing_inputs(*args):
        outs = CompiledFunction.apply(*args)
        # as eager's in-place op: autograd records the write (``CopyBackwards``) on the
        # caller's tensor, so its later readers differentiate through the new value, into
        # the Function. (Into a leaf that requires grad, this raises eager's error.)
        for i, new in zip(with_grad, outs[num_user:]):
            args[i].copy_(new)
        return _user_outputs(args, outs[:num_user], sig)

    wrapper = runtime_wrapper_writing_inputs if with_grad else runtime_wrapper
    wrapper.CompiledFunction = CompiledFunction
    return wrapper


def _apart_from(tensors: list, written: list[torch.Tensor]) -> list:
    """``tensors`` (saved for backward), each that shares memory with one of ``written`` as a
    copy of its own with its geometry: those inputs are written once the forward is done, and
    the backward reads them as they were (eager's in-place op saves the original too)."""
    keys = {storage_key(w) for w in written}
    return [_copy_of(t) if isinstance(t, torch.Tensor) and t.layout == torch.strided
            and storage_key(t) in keys else t for t in tensors]


def _copy_of(t: torch.Tensor) -> torch.Tensor:
    """A copy of ``t``'s storage, viewed as ``t`` views its own (same sizes, strides, offset:
    a compiled backward reads it at the strides it was traced with, an expanded one too)."""
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(
        t.untyped_storage().clone(), t.storage_offset(), t.shape, t.stride())


def _byte_range(t: torch.Tensor) -> tuple[int, int]:
    """The bytes of its storage ``t`` may touch: [first, last] (a strided view's elements lie
    between them, not necessarily all of them: a conservative answer)."""
    if t.numel() == 0:
        return 0, -1
    first = t.storage_offset()
    last = first + sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride()))
    return first * t.element_size(), (last + 1) * t.element_size() - 1


def writes_alias(args: tuple, written: tuple[int, ...], tensors: tuple[int, ...],
                 duplicates: frozenset = frozenset()) -> tuple[int, int] | None:
    """A pair (written input, other input) of positions whose memory overlaps, or None. Cheap
    when, as almost always, no two inputs share a storage: one storage lookup per tensor input,
    in one C loop (``map``); byte ranges are compared only for inputs sharing a storage. A pair
    in ``duplicates`` (positions that held one tensor when traced: a tied parameter) may hold
    one tensor again."""
    try:
        keys = list(map(storage_key, [args[i] for i in tensors]))
    except (NotImplementedError, RuntimeError):  # a tensor with no storage (sparse): none of
        return None  # the inputs' memory is another's through it
    if len(set(keys)) == len(keys):
        return None
    key_of = dict(zip(tensors, keys))
    for i in written:
        for j in tensors:
            if j == i or key_of[j] != key_of[i]:
                continue
            if args[i] is args[j] and (min(i, j), max(i, j)) in duplicates:
                continue
            (a0, a1), (b0, b1) = _byte_range(args[i]), _byte_range(args[j])
            if a0 <= b1 and b0 <= a1:
                return i, j
    return None


def eager_when_writes_alias(run: Callable, eager: Callable, written: list[int],
                            tensors: list[int], names: list[str],
                            duplicates: set = frozenset()) -> Callable:
    """``run`` (a compiled graph that writes inputs ``written``), but a call in which one of
    them overlaps another input's memory runs ``eager`` (the graph before functionalization,
    op by op on the real tensors: eager's result whatever shares memory). ``names``: the
    inputs' names, for the message."""
    written_t, tensors_t, duplicates = tuple(written), tuple(tensors), frozenset(duplicates)
    warned = []

    def call(*args):
        pair = writes_alias(args, written_t, tensors_t, duplicates)
        if pair is None:
            return run(*args)
        if not warned:
            warned.append(pair)
            log.warning("%s is written in place and shares memory with %s: the compiled graph "
                        "assumes distinct inputs, so calls like this one run it eagerly",
                        names[pair[0]], names[pair[1]])
        return eager(*args)

    return call
